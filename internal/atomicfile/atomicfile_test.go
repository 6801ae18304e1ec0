package atomicfile

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// names lists dir, to see that no temporary file is left.
func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func TestCommitReplaces(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.pb.gz")
	require.NoError(t, os.WriteFile(out, []byte("old profile"), 0o640))
	require.NoError(t, os.Chmod(out, 0o640))
	f, err := Create(out)
	require.NoError(t, err)
	defer f.Abort()
	_, err = f.Write([]byte("new"))
	require.NoError(t, err)
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, "old profile", string(b), "the old file is whole until Commit")
	require.NoError(t, f.Commit())
	b, err = os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, "new", string(b))
	st, err := os.Stat(out)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o640), st.Mode().Perm(), "the replaced file's permissions are kept")
	assert.Equal(t, []string{"out.pb.gz"}, names(t, dir))
	assert.Error(t, f.Commit(), "a second Commit")
}

// TestErrorKeepsOld: a write that fails halfway (the caller's error, or
// ENOSPC) ends in Abort: the old file is intact and no temporary file is
// left.
func TestErrorKeepsOld(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.pb.gz")
	require.NoError(t, os.WriteFile(out, []byte("old profile"), 0o644))
	f, err := Create(out)
	require.NoError(t, err)
	_, err = f.Write([]byte("half of a new one"))
	require.NoError(t, err)
	f.Abort()
	f.Abort()
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, "old profile", string(b))
	assert.Equal(t, []string{"out.pb.gz"}, names(t, dir))
	assert.Empty(t, reg.temps, "still tracked for the signal handler")
}

// TestNewFileMode: a new file gets 0666 less the umask, as os.Create.
func TestNewFileMode(t *testing.T) {
	dir := t.TempDir()
	ref, err := os.Create(filepath.Join(dir, "ref"))
	require.NoError(t, err)
	ref.Close()
	f, err := Create(filepath.Join(dir, "new"))
	require.NoError(t, err)
	require.NoError(t, f.Commit())
	want, err := os.Stat(filepath.Join(dir, "ref"))
	require.NoError(t, err)
	got, err := os.Stat(filepath.Join(dir, "new"))
	require.NoError(t, err)
	assert.Equal(t, want.Mode(), got.Mode())
}

// TestSymlinkWrittenThrough: a name that is a symlink keeps being one;
// its target gets the new contents.
func TestSymlinkWrittenThrough(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	target := filepath.Join(other, "real.pb.gz")
	require.NoError(t, os.WriteFile(target, []byte("old"), 0o644))
	link := filepath.Join(dir, "out.pb.gz")
	require.NoError(t, os.Symlink(target, link))
	f, err := Create(link)
	require.NoError(t, err)
	f.Write([]byte("new"))
	require.NoError(t, f.Commit())
	st, err := os.Lstat(link)
	require.NoError(t, err)
	assert.NotZero(t, st.Mode()&os.ModeSymlink, "the link was replaced")
	b, err := os.ReadFile(target)
	require.NoError(t, err)
	assert.Equal(t, "new", string(b))
	assert.Equal(t, []string{"real.pb.gz"}, names(t, other))
}

// TestNotRegularWrittenDirectly: /dev/null is written, never renamed
// over.
func TestNotRegularWrittenDirectly(t *testing.T) {
	f, err := Create(os.DevNull)
	require.NoError(t, err)
	assert.Empty(t, f.tmp)
	_, err = f.Write([]byte("x"))
	require.NoError(t, err)
	require.NoError(t, f.Commit())
	st, err := os.Stat(os.DevNull)
	require.NoError(t, err)
	assert.NotZero(t, st.Mode()&os.ModeCharDevice, "/dev/null is still a device")
}

// TestMissingDirectory: the error names the output.
func TestMissingDirectory(t *testing.T) {
	_, err := Create(filepath.Join(t.TempDir(), "no", "out"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), filepath.Join("no", "out"))
}

// The child of TestSignal: it writes half a file over $ATOMICFILE_CHILD,
// says so on stdout and waits for the signal.
func TestSignalChild(t *testing.T) {
	out := os.Getenv("ATOMICFILE_CHILD")
	if out == "" {
		t.Skip("run by TestSignal")
	}
	f, err := Create(out)
	if err != nil {
		os.Exit(3)
	}
	f.Write([]byte("half of a new profile"))
	os.Stdout.WriteString("writing\n")
	select {}
}

// TestSignal: a real SIGINT or SIGTERM to a process in the middle of a
// write ends it by that signal, with the old file intact and no
// temporary file left. The child is this test binary, running
// TestSignalChild.
func TestSignal(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "out.pb.gz")
			require.NoError(t, os.WriteFile(out, []byte("old profile"), 0o644))
			cmd := exec.Command(os.Args[0], "-test.run=^TestSignalChild$")
			cmd.Env = append(os.Environ(), "ATOMICFILE_CHILD="+out)
			stdout, err := cmd.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			line, err := bufio.NewReader(stdout).ReadString('\n')
			require.NoError(t, err)
			require.Equal(t, "writing\n", line)
			require.Len(t, names(t, dir), 2, "the temporary file is there while the child writes")
			require.NoError(t, cmd.Process.Signal(sig))
			err = cmd.Wait()
			var ee *exec.ExitError
			require.True(t, errors.As(err, &ee), "%v", err)
			ws := ee.Sys().(syscall.WaitStatus)
			assert.True(t, ws.Signaled() && ws.Signal() == sig, "child ended by %v", ee)
			b, err := os.ReadFile(out)
			require.NoError(t, err)
			assert.Equal(t, "old profile", string(b))
			assert.Equal(t, []string{"out.pb.gz"}, names(t, dir), strings.Join(names(t, dir), " "))
		})
	}
}
