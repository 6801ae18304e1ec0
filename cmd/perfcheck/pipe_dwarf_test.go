package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// perf record --call-graph dwarf -o - | perfcheck script -: the stacks
// printed while perf writes are those of the same bytes read from a file,
// by name or on standard input, byte for byte, and they are perf script's
// on the saved stream, frame for frame (names differing only for the
// reasons compareScript knows). The samples unwind past their leaf.
func TestScriptLivePipeDwarf(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("records with perf: skipped in -short mode")
	}
	needPerf(t)
	bin, err := filepath.Abs(filepath.Join(fixtureDir, "bin", "cshared"))
	require.NoError(t, err)
	dir := t.TempDir()
	saved := filepath.Join(dir, "pipe.data")
	lookup := ckLikePerf(t)
	script := func(stdin io.Reader, input string) string {
		out, errs, code := ckRunIn(t, stdin, append(append([]string{"script"}, lookup...), input)...)
		require.Equal(t, exitOK, code, errs)
		return out
	}
	var live string
	for attempt := 1; ; attempt++ {
		f, err := os.Create(saved)
		require.NoError(t, err)
		rec := exec.Command("perf", "record", "-N", "-q", "-e", "cpu-clock", "-F", "2000",
			"--call-graph", "dwarf", "-o", "-", "--", bin)
		rec.Dir, rec.Env = dir, append(fixtures.PerfEnv(dir), "LC_ALL=C")
		var recErr bytes.Buffer
		rec.Stderr = &recErr
		pipe, err := rec.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, rec.Start())
		// An io.Reader that is not a file: a pipe, read as perf writes.
		out, errs, code := ckRunIn(t, io.TeeReader(pipe, f), append(append([]string{"script"}, lookup...), "-")...)
		io.Copy(f, pipe)
		err = rec.Wait()
		f.Close()
		if err != nil && fixtures.PerfDied(err) && attempt < fixtures.PerfAttempts {
			t.Logf("perf died (%v): recording again", err)
			continue
		}
		require.NoError(t, err, "perf record: %s", recErr.String())
		require.Equal(t, exitOK, code, errs)
		live = out
		break
	}
	byName := script(nil, saved)
	assert.Equal(t, byName, live, "perf's pipe against the saved bytes by name")
	f, err := os.Open(saved)
	require.NoError(t, err)
	defer f.Close()
	assert.Equal(t, byName, script(f, "-"), "the saved bytes on standard input against them by name")

	samples := splitScript(live)
	require.NotEmpty(t, samples)
	deep := 0
	for _, s := range samples {
		user := 0
		for _, fr := range s.frames {
			if !strings.Contains(fr, "[kernel.kallsyms]") {
				user++
			}
		}
		if user > 1 {
			deep++
		}
	}
	t.Logf("%d of %d samples unwound past their leaf", deep, len(samples))
	assert.Greater(t, deep, len(samples)*9/10, "samples unwound past their leaf")

	// --no-inline: perfcheck prints no inlined frames by default.
	perf := perfOut(t, "script", "--no-inline", "-i", saved)
	logReasons(t, compareScript(t, "pipe.data", perf, live))
}
