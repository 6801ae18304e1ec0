package main

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const atomicFixture = "../../testdata/perf/goprog.data"

// pprofArgs are a hermetic pprof run of the fixture into out.
func pprofArgs(t *testing.T, out string) []string {
	return []string{"pprof", "--buildid-dir", t.TempDir(), "--debuginfod", "none", "-o", out, atomicFixture}
}

// dirNames lists dir, to see that no temporary file is left.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// failAfter fails every write once n bytes have gone through, as a full
// disk does.
type failAfter struct {
	w io.Writer
	n int
}

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		n, _ := f.w.Write(p[:f.n])
		f.n = 0
		return n, syscall.ENOSPC
	}
	f.n -= len(p)
	return f.w.Write(p)
}

// TestPprofErrorKeepsOldProfile: a write that fails halfway (ENOSPC)
// exits 2 and leaves the previous profile whole and no temporary file.
func TestPprofErrorKeepsOldProfile(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.pb.gz")
	require.NoError(t, os.WriteFile(out, []byte("old profile"), 0o644))
	outputHook = func(w io.Writer) io.Writer { return &failAfter{w: w, n: 100} }
	defer func() { outputHook = nil }()
	var stdout, stderr bufWriter
	code := run(pprofArgs(t, out), nil, &stdout, &stderr)
	assert.Equal(t, exitError, code, stderr.String())
	assert.Contains(t, stderr.String(), "no space left on device")
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, "old profile", string(b))
	assert.Equal(t, []string{"out.pb.gz"}, dirNames(t, dir))

	outputHook = nil
	code = run(pprofArgs(t, out), nil, &stdout, &stderr)
	require.Equal(t, exitOK, code, stderr.String())
	b, err = os.ReadFile(out)
	require.NoError(t, err)
	assert.NotEqual(t, "old profile", string(b), "a complete profile replaces the old one")
	assert.Equal(t, []string{"out.pb.gz"}, dirNames(t, dir))
}

// bufWriter is a bytes.Buffer that reads back as a string.
type bufWriter struct{ b []byte }

func (w *bufWriter) Write(p []byte) (int, error) { w.b = append(w.b, p...); return len(p), nil }
func (w *bufWriter) String() string              { return string(w.b) }

// The child of TestPprofInterrupted: perfcheck pprof into
// $PERFCHECK_PPROF_CHILD, whose writer says "writing" on stdout after the
// first bytes of the profile and then waits for the signal.
func TestPprofInterruptedChild(t *testing.T) {
	out := os.Getenv("PERFCHECK_PPROF_CHILD")
	if out == "" {
		t.Skip("run by TestPprofInterrupted")
	}
	outputHook = func(w io.Writer) io.Writer { return &stallWriter{w: w} }
	os.Exit(run(pprofArgs(t, out), nil, io.Discard, os.Stderr))
}

// stallWriter writes the first chunk, says so and never returns from the
// second.
type stallWriter struct {
	w     io.Writer
	wrote bool
}

func (s *stallWriter) Write(p []byte) (int, error) {
	if s.wrote {
		os.Stdout.WriteString("writing\n")
		select {}
	}
	s.wrote = true
	return s.w.Write(p)
}

// TestPprofInterrupted: a real SIGINT to a perfcheck pprof process in the
// middle of writing the profile ends it by SIGINT and leaves the previous
// profile whole — not a 0-byte or a half file — and no temporary file.
// The child is this test binary running TestPprofInterruptedChild.
func TestPprofInterrupted(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.pb.gz")
	require.NoError(t, os.WriteFile(out, []byte("old profile"), 0o644))
	cmd := exec.Command(os.Args[0], "-test.run=^TestPprofInterruptedChild$")
	cmd.Env = append(os.Environ(), "PERFCHECK_PPROF_CHILD="+out)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "writing\n", line)
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	err = cmd.Wait()
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "%v", err)
	ws := ee.Sys().(syscall.WaitStatus)
	assert.True(t, ws.Signaled() && ws.Signal() == syscall.SIGINT, "child ended by %v", ee)
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, "old profile", string(b))
	assert.Equal(t, []string{"out.pb.gz"}, dirNames(t, dir))
}

// TestWriteFileKeepsOld: flamegraph -o and report -o write through
// writeFile, which keeps the previous file whole when the write fails
// halfway, leaves no temporary file, and replaces it when complete.
func TestWriteFileKeepsOld(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "graph.html")
	require.NoError(t, os.WriteFile(out, []byte("old graph"), 0o644))
	err := writeFile(out, nil, func(w io.Writer) error {
		w.Write([]byte("half a gra"))
		return syscall.ENOSPC
	})
	require.ErrorIs(t, err, syscall.ENOSPC)
	assert.Contains(t, err.Error(), out)
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, "old graph", string(b))
	assert.Equal(t, []string{"graph.html"}, dirNames(t, dir))

	require.NoError(t, writeFile(out, nil, func(w io.Writer) error { _, err := w.Write([]byte("new graph")); return err }))
	b, err = os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, "new graph", string(b))
	assert.Equal(t, []string{"graph.html"}, dirNames(t, dir))
}
