package check

import (
	"context"
	"errors"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/internal/fixtures"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEachSampleHeapFlat: what a Result kept for EachSample, and what
// EachSample holds while it reads, do not grow with the samples. The
// recordings are the committed pipe.data with its samples repeated 40 and
// 3,200 times (fixtures.RepeatSamples: same stacks, 80 times the samples),
// read by path and as a pipe (copied to the spool). The margin is for the
// readers' buffers, which do not depend on the number of samples; a record
// of 40 bytes per sample would be 26 MB more on the larger recording.
//
// Not parallel: it reads the process's live heap, which other tests would
// move.
func TestEachSampleHeapFlat(t *testing.T) {
	small := fixtures.RepeatSamples(t, "../testdata/perf/pipe.data", 40)
	large := fixtures.RepeatSamples(t, "../testdata/perf/pipe.data", 3200)
	cache := fixtureCache(t)
	for _, stream := range []bool{false, true} {
		kept0, peak0, n0 := replayHeap(t, small, stream, cache)
		kept1, peak1, n1 := replayHeap(t, large, stream, cache)
		t.Logf("stream %v: %d samples: %d KB kept, %d KB at most while replaying; %d samples: %d KB, %d KB",
			stream, n0, kept0>>10, peak0>>10, n1, kept1>>10, peak1>>10)
		require.Greater(t, n1, 60*n0)
		assert.Less(t, int64(kept1)-int64(kept0), int64(8<<20), "the Result grows with the samples")
		assert.Less(t, int64(peak1)-int64(kept1), int64(8<<20), "EachSample's memory grows with the samples")
	}
}

// replayHeap analyzes rec with Options.Replay and returns the live heap
// once the Result is made, the most it was while EachSample read the
// samples (measured every 20,000 of them), and the number of samples.
func replayHeap(t *testing.T, rec string, stream bool, cache string) (kept, peak, samples uint64) {
	t.Helper()
	src := Path(rec)
	if stream {
		src = Stream(pipeOf(t, rec), "-")
	}
	res, err := Analyze(context.Background(), src, Options{Lookup: buildidcache.Options{BuildIDDir: cache}, Replay: true, NoSymbols: true})
	require.NoError(t, err)
	defer res.Close()
	kept = liveHeap()
	peak = kept
	require.NoError(t, res.EachSample(context.Background(), func(*Sample) error {
		if samples++; samples%20000 == 0 {
			peak = max(peak, liveHeap())
		}
		return nil
	}))
	require.Equal(t, res.Samples, samples)
	return kept, peak, samples
}

func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// pipeOf returns the read end of a pipe that rec is written into: a stream
// that cannot be read twice.
func pipeOf(t *testing.T, rec string) io.Reader {
	t.Helper()
	f, err := os.Open(rec)
	require.NoError(t, err)
	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	t.Cleanup(func() { pr.Close(); f.Close() })
	go func() {
		defer pw.Close()
		_, _ = f.WriteTo(pw)
	}()
	return pr
}

// TestEachSampleFromPipe: samples read again from the spool of a pipe are
// those of the file read in place, and an error from fn stops the reading
// and is returned as it is.
func TestEachSampleFromPipe(t *testing.T) {
	t.Parallel()
	cache := fixtureCache(t)
	for _, name := range []string{"pipe.data", "zstd-pipe.data", "twoevents.data", "cshared-dwarf.data"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rec := "../testdata/perf/" + name
			var prints []string
			for _, src := range []Source{Path(rec), Stream(pipeOf(t, rec), "-")} {
				res, err := Analyze(context.Background(), src, Options{Lookup: buildidcache.Options{BuildIDDir: cache}, Replay: true, NoSymbols: true})
				require.NoError(t, err)
				// The report differs (a pipe has no file name and no
				// mtime); the samples must not.
				var samples []string
				for _, l := range strings.Split(fingerprint(t, res), "\n") {
					if strings.HasPrefix(l, "sample ") {
						samples = append(samples, l)
					}
				}
				require.Len(t, samples, int(res.Samples))
				prints = append(prints, strings.Join(samples, "\n"))
				stop := errors.New("enough")
				n := 0
				err = res.EachSample(context.Background(), func(*Sample) error {
					n++
					return stop
				})
				assert.Equal(t, 1, n)
				assert.Same(t, stop, err)
				require.NoError(t, res.Close())
			}
			assert.True(t, prints[0] == prints[1], "the pipe's samples differ from the file's:\n%s", firstDiff(prints[0], prints[1]))
		})
	}
}
