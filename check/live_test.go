package check

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/internal/fixtures"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOnSampleSameAsReplay: a stream handed over sample by sample as it is
// read (Options.OnSample) gives the samples, frames, names and trust that
// reading it twice gives (Options.Replay), and the same report, with no
// verdict changed at the end; on every committed pipe-format recording
// and the corpus's, read from a pipe, symbols included. (Other recordings
// are not read live: OnSample hands them over from a second reading.)
func TestOnSampleSameAsReplay(t *testing.T) {
	t.Parallel()
	cache := fixtureCache(t)
	files := feedFixtures(t)
	for _, pat := range []string{"modern/*pipe*", "foreign/*.stream"} {
		more, err := filepath.Glob(filepath.Join(fixtures.CorpusDir(), pat))
		require.NoError(t, err)
		files = append(files, more...)
	}
	readLive := 0
	for _, name := range files {
		if st, err := os.Stat(name); err != nil || st.IsDir() {
			continue // a directory recording is no stream
		}
		src := Stream(pipeOf(t, name), "-")
		if !src.liveStream() {
			continue
		}
		readLive++
		t.Run(filepath.Base(name), func(t *testing.T) {
			t.Parallel()
			opts := Options{Lookup: buildidcache.Options{BuildIDDir: cache}}
			var live, replayed strings.Builder
			o := opts
			o.OnSample = func(s *Sample) error { writeSample(&live, s); return nil }
			lres, err := Analyze(context.Background(), src, o)
			require.NoError(t, err)
			assert.Empty(t, lres.Changed)
			o = opts
			o.Replay = true
			rres, err := Analyze(context.Background(), Stream(pipeOf(t, name), "-"), o)
			require.NoError(t, err)
			defer rres.Close()
			require.NoError(t, rres.EachSample(context.Background(), func(s *Sample) error { writeSample(&replayed, s); return nil }))
			require.NotZero(t, lres.Samples)
			assert.True(t, live.String() == replayed.String(), "live differs from replayed:\n%s", firstDiff(replayed.String(), live.String()))
			assert.Equal(t, reportJSON(t, rres), reportJSON(t, lres))
		})
	}
	require.GreaterOrEqual(t, readLive, 2, "pipe-format recordings read live (pipe.data and zstd-pipe.data at least)")
}

// TestOnSampleStops: an error from OnSample stops the reading and is what
// Analyze returns.
func TestOnSampleStops(t *testing.T) {
	t.Parallel()
	stop := errors.New("enough")
	n := 0
	res, err := Analyze(context.Background(), Stream(pipeOf(t, "../testdata/perf/pipe.data"), "-"),
		Options{Lookup: buildidcache.Options{BuildIDDir: fixtureCache(t)}, NoSymbols: true,
			OnSample: func(*Sample) error { n++; return stop }})
	assert.Nil(t, res)
	assert.Same(t, stop, err)
	assert.Equal(t, 1, n)
}

// writeSample writes what a sample says: its fields, trust, and each frame
// with its address, location, verdict and names.
func writeSample(b *strings.Builder, s *Sample) {
	fmt.Fprintf(b, "%d %d %d %d %d %d %q %v %v\n", s.Event, s.PID, s.TID, s.CPU, s.Time, s.Period, s.Comm, s.Stack.Trusted, s.Stack.LeafTrusted)
	for i, l := range s.Stack.Locations() {
		fmt.Fprintf(b, "\t%x %s %s", s.IPs[i], l.raw(), l.DSO.Verdict)
		for _, f := range l.Frames {
			fmt.Fprintf(b, " %s:%d", f.Name(), f.Line)
		}
		b.WriteByte('\n')
	}
}

func reportJSON(t *testing.T, res *Result) string {
	t.Helper()
	rep := res.Report()
	rep.File = ""
	b, err := json.Marshal(rep)
	require.NoError(t, err)
	return string(b)
}
