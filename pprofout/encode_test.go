package pprofout

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/klauspost/compress/gzip"
	"github.com/perfcheck/perfcheck/check"
	"github.com/perfcheck/perfcheck/internal/fixtures"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// encodeInputs are the recordings the streaming encoder is held to
// google/pprof's on: every committed fixture, and corpus recordings with
// what the fixtures lack: two events (four values a sample, packed), the
// kernel's pid -1 and pid 0 (a numeric label pprof writes without its
// value), and a stack taken by some 200 threads (past linearRun).
func encodeInputs(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(fixtureDir, "*.data"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no fixture matches %s/*.data", fixtureDir)
	for _, name := range []string{"multi-event-single-process.perf.data", "perf.data.systemwide.0-3.8",
		"perf.data.forkexit-3.8", "perf.data.hw_and_sw-3.4"} {
		// The corpus lives outside the repository and may be absent.
		if p := filepath.Join(fixtures.CorpusDir(), name); fileExists(p) {
			files = append(files, p)
		}
	}
	return files
}

// Write's stream is, byte for byte, what google/pprof encodes for the
// profile Convert builds: same fields, same order, same string table. So
// every reader of the old output reads the new one alike, and pprof's own
// parser gives back a valid profile with what Write's Summary says.
func TestWriteEncodesAsGooglePprof(t *testing.T) {
	t.Parallel()
	root := symfs(t)
	optsCases := map[string]Options{
		"default":  {},
		"comments": {Comments: []string{"perfcheck pprof x", "perf-version:6.1", "note: a"}, TimeNanos: 1700000000123456789, DurationNanos: 5e9},
		"one":      {Comments: []string{"only"}, DurationNanos: -1},
	}
	sawManyThreads := false
	for _, file := range encodeInputs(t) {
		res, err := check.Analyze(context.Background(), check.Path(file), check.Options{Lookup: localLookup(t.TempDir(), root)})
		if res == nil {
			t.Logf("%s: %v", file, err)
			continue
		}
		for name, opts := range optsCases {
			t.Run(filepath.Base(file)+"/"+name, func(t *testing.T) {
				want := googleEncoding(t, res, opts)
				var gz bytes.Buffer
				sum, err := Write(&gz, res, opts)
				require.NoError(t, err)
				got := gunzip(t, gz.Bytes())
				if !bytes.Equal(got, want) {
					t.Fatalf("Write's protobuf (%d bytes) differs from google/pprof's (%d bytes) at byte %d",
						len(got), len(want), firstDiff(got, want))
				}
				p, err := profile.Parse(bytes.NewReader(gz.Bytes()))
				require.NoError(t, err)
				require.NoError(t, p.CheckValid())
				assert.Equal(t, summaryOf(p), sum)
				assert.Equal(t, opts.Comments, p.Comments)
				sawManyThreads = sawManyThreads || maxThreadsPerStack(p) > linearRun
			})
		}
	}
	if fileExists(filepath.Join(fixtures.CorpusDir(), "perf.data.forkexit-3.8")) {
		assert.True(t, sawManyThreads, "no input has a stack taken by more than %d threads", linearRun)
	}
}

// googleEncoding is the uncompressed protobuf google/pprof writes for
// Convert's profile of res.
func googleEncoding(t *testing.T, res *check.Result, opts Options) []byte {
	t.Helper()
	p, err := Convert(res, opts)
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, p.WriteUncompressed(&b))
	return b.Bytes()
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	require.NoError(t, err)
	out, err := io.ReadAll(zr)
	require.NoError(t, err)
	return out
}

func fileExists(name string) bool {
	_, err := os.Stat(name)
	return err == nil
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// summaryOf is the Summary that describes p.
func summaryOf(p *profile.Profile) Summary {
	s := Summary{Samples: len(p.Sample), Locations: len(p.Location), Functions: len(p.Function), Mappings: len(p.Mapping)}
	for _, st := range p.SampleType {
		s.SampleTypes = append(s.SampleTypes, st.Type+"/"+st.Unit)
	}
	for _, m := range p.Mapping {
		if !m.HasFunctions {
			s.Unsymbolized = append(s.Unsymbolized, m.File)
		}
	}
	return s
}

// maxThreadsPerStack is the most samples of p that share one stack.
func maxThreadsPerStack(p *profile.Profile) int {
	n := map[string]int{}
	most := 0
	for _, s := range p.Sample {
		var k strings.Builder
		for _, l := range s.Location {
			k.WriteString(strconv.FormatUint(l.ID, 10) + " ")
		}
		n[k.String()]++
		most = max(most, n[k.String()])
	}
	return most
}

// Streaming the samples allocates nothing per sample: what the encoder
// holds does not grow with the profile's stacks. Only the buffers and the
// index of a stack's samples grow, by doubling, up to the threads of the
// stack most threads took: a few dozen allocations a pass, against
// thousands of samples.
//
// Not parallel: testing.AllocsPerRun counts the whole process's allocations.
func TestWriteSamplesAllocateNothingPerSample(t *testing.T) {
	file := filepath.Join(fixtures.CorpusDir(), "perf.data.forkexit-3.8")
	if !fileExists(file) {
		file = filepath.Join(fixtureDir, "threads.data")
	}
	res, err := check.Analyze(context.Background(), check.Path(file), check.Options{Lookup: localLookup(t.TempDir(), "")})
	require.NoError(t, err)
	nev := numEvents(res)
	e := newEncoder(io.Discard)
	samples := 0
	require.NoError(t, eachSample(res, nev, func(s *sample) error { samples++; return e.sample(s) }))
	require.Greater(t, samples, 100, "too few samples to tell")
	allocs := testing.AllocsPerRun(5, func() {
		_ = eachSample(res, nev, e.sample)
	})
	assert.LessOrEqual(t, allocs, 64.0, "%v allocations to stream %d samples", allocs, samples)
}

// A write error stops Write and is returned; nothing panics.
func TestWriteStopsAtWriteError(t *testing.T) {
	t.Parallel()
	res := analyze(t, "cshared-fp.data", symfs(t))
	for _, n := range []int{0, 10, 200} {
		w := &failingWriter{left: n}
		_, err := Write(w, res, Options{})
		require.ErrorIs(t, err, errFull, "after %d bytes", n)
	}
}

var errFull = errors.New("disk full")

// failingWriter takes left bytes, then fails.
type failingWriter struct{ left int }

func (w *failingWriter) Write(b []byte) (int, error) {
	if len(b) > w.left {
		n := w.left
		w.left = 0
		return n, errFull
	}
	w.left -= len(b)
	return len(b), nil
}
