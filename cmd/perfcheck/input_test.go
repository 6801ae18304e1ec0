package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// -i names the recording as the positional argument does, on every
// command that reads one, with flags before or after it.
func TestInputFlag(t *testing.T) {
	t.Parallel()
	fx := ckFixture(t, "threads.data")
	look := ckHermetic(t)
	dir := t.TempDir()
	for _, cmd := range [][]string{{"check"}, {"top"}, {"script"}, {"info"}, {"stats"}, {"buildids"},
		{"pprof", "-o", filepath.Join(dir, "p.pb.gz")}, {"flamegraph", "-o", filepath.Join(dir, "f.html")},
		{"report", "-o", filepath.Join(dir, "r.html")}} {
		pos, _, pcode := ckRun(t, append(append(append([]string{}, cmd...), fx), look...)...)
		flagged, errs, code := ckRun(t, append(append(append([]string{}, cmd...), "-i", fx), look...)...)
		assert.Equal(t, pcode, code, "%v: %s", cmd, errs)
		assert.Equal(t, pos, flagged, "%v", cmd)
		long, _, _ := ckRun(t, append(append(append([]string{}, cmd...), look...), "--input", fx)...)
		assert.Equal(t, pos, long, "%v", cmd)
	}
}

// -i and a positional file, or two files, are one recording too many: one
// line says so before the usage.
func TestInputTwice(t *testing.T) {
	t.Parallel()
	fx := ckFixture(t, "threads.data")
	for _, cmd := range []string{"check", "top", "script", "info", "stats", "buildids", "pprof", "flamegraph", "report"} {
		_, errs, code := ckRun(t, cmd, "-i", fx, fx)
		assert.Equal(t, exitError, code, cmd)
		assert.Regexp(t, `^perfcheck `+cmd+`: both -i \S+ and "\S+" name the recording; give one\nusage: perfcheck `, errs, cmd)
		_, errs, code = ckRun(t, cmd, fx, fx)
		assert.Equal(t, exitError, code, cmd)
		assert.Regexp(t, `^perfcheck `+cmd+`: one recording expected, got 2 arguments`, errs, cmd)
	}
}

// Without a file, the commands read ./perf.data, as perf report does;
// "perfcheck" alone checks it.
func TestInputDefault(t *testing.T) {
	fx := ckFixture(t, "cshared-fp.data")
	abs, err := filepath.Abs(fx)
	require.NoError(t, err)
	data, err := os.ReadFile(abs)
	require.NoError(t, err)
	dir := t.TempDir()
	t.Chdir(dir)
	_, errs, code := ckRun(t, "top")
	assert.Equal(t, exitError, code)
	assert.Contains(t, errs, "perf.data")
	_, errs, code = ckRun(t)
	assert.Contains(t, errs, "perf.data")
	assert.NotContains(t, errs, "usage:")
	assert.Equal(t, exitError, code)
	st, err := os.Stat(abs)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile("perf.data", data, 0o644))
	// Verdicts look at the recording's mtime.
	require.NoError(t, os.Chtimes("perf.data", st.ModTime(), st.ModTime()))
	look := ckHermetic(t)
	want, _, wcode := ckRun(t, append([]string{"top", "perf.data"}, look...)...)
	got, errs, code := ckRun(t, append([]string{"top"}, look...)...)
	assert.Equal(t, wcode, code, errs)
	assert.Equal(t, want, got)
	want, _, wcode = ckRun(t, append([]string{"check", "perf.data"}, look...)...)
	got, _, code = ckRun(t, look...)
	assert.Equal(t, wcode, code)
	assert.Equal(t, want, got)
}
