package main

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/check"
)

// The script formatter runs once per sample of a recording: formatting a
// sample into a buffer big enough for it allocates nothing, with every
// field perf script prints by default, srcline, --inline and
// --trust-lines, for every sample of the fixtures.
//
// Not parallel: testing.AllocsPerRun refuses to run in a parallel test.
func TestScriptFormatAllocs(t *testing.T) {
	for _, name := range []string{"cshared-fp.data", "cshared-dwarf.data", "goprog.data", "twoevents.data"} {
		t.Run(name, func(t *testing.T) {
			res, err := check.Analyze(context.Background(), check.Path(filepath.Join(fixturesDir, name)), check.Options{
				Replay: true,
				Lookup: buildidcache.Options{BuildIDDir: "-", DebuginfodURLs: []string{}},
			})
			require.NoError(t, err)
			a := &analysis{res: res}
			fs, err := parseScriptFields("+srcline")
			require.NoError(t, err)
			sf, err := newScriptFormat(a, fs)
			require.NoError(t, err)
			sf.inlines, sf.trust = true, true
			buf := make([]byte, 0, 1<<20)
			n := 0
			// Measured inside EachSample: the Sample, its Stack and its
			// IPs are valid only until the callback returns.
			err = res.EachSample(context.Background(), func(s *check.Sample) error {
				allocs := testing.AllocsPerRun(10, func() { buf = sf.appendSample(buf[:0], s) })
				require.NotEmpty(t, buf)
				n++
				if allocs != 0 {
					return fmt.Errorf("sample %d of %s: %v allocations:\n%s", n, name, allocs, buf)
				}
				return nil
			})
			require.NoError(t, err) // one sample's output says enough
			require.NotZero(t, n)
		})
	}
}
