package check

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/buildidcache"
)

// The environment of the child run of TestAdviceUsersCacheRefused: the
// recording, the binary that ran, and the home of the user who made it.
const (
	refusedEnvData = "PERFCHECK_TEST_REFUSED_DATA"
	refusedEnvBin  = "PERFCHECK_TEST_REFUSED_BIN"
	refusedEnvHome = "PERFCHECK_TEST_REFUSED_HOME"
)

// refusedUID is the user the check runs as in TestAdviceUsersCacheRefused:
// nobody on Debian, and on any system a uid without rights.
const refusedUID = 65534

// A recording made here by another user (alice, uid 4242), whose ~/.debug
// holds the binary that ran but cannot be read by the user who runs the
// check: the advice says so and to run as alice or root with her cache.
// Root reads every directory whatever its mode, so the check runs in a
// child process, this test's binary run again as uid 65534 (nobody),
// which cannot read a directory of mode 000 nor search a home of mode
// 0700. The recording and alice's cache are made as in
// TestRealRecordingUsersCache (real perf record -N, then perf
// buildid-cache -a with alice's HOME); her home is the scratch home, as
// the user database (Options.host.users) says. Without root neither the
// recording can be given to another user nor the check run as one: the
// test is skipped then.
func TestAdviceUsersCacheRefused(t *testing.T) {
	if data := os.Getenv(refusedEnvData); data != "" {
		refusedChild(t, data, os.Getenv(refusedEnvBin), os.Getenv(refusedEnvHome))
		return
	}
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("giving the recording to another user and checking as a third needs root")
	}
	w := newWorld(t)
	bin := w.path("busy")
	w.gcc(bin, busyV1)
	data := w.record("other.data", []string{"-N"}, bin)
	w.run(nil, "perf", "buildid-cache", "-a", bin)
	require.NoError(t, os.Remove(bin))
	require.NoError(t, os.Chown(data, 4242, 4242))
	require.NoError(t, os.Chmod(data, 0o644)) // the checking user can read the recording
	// The checking user may reach the recording and the home: the test's
	// directories are made 0700.
	for d := w.dir; d != filepath.Dir(d) && d != os.TempDir(); d = filepath.Dir(d) {
		require.NoError(t, os.Chmod(d, 0o755))
	}
	// This test's binary, where the checking user may run it.
	exe, err := os.Executable()
	require.NoError(t, err)
	child := filepath.Join(w.dir, "check.test")
	copyExecutable(t, exe, child)

	for _, c := range []struct {
		name            string
		cacheMode, home os.FileMode
	}{
		{"cache of mode 000", 0o000, 0o755},
		{"home of mode 0700", 0o755, 0o700},
	} {
		require.NoError(t, os.Chmod(w.cache(), c.cacheMode))
		require.NoError(t, os.Chmod(w.home, c.home))
		cmd := exec.Command(child, "-test.run=^TestAdviceUsersCacheRefused$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), refusedEnvData+"="+data, refusedEnvBin+"="+bin, refusedEnvHome+"="+w.home)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: refusedUID, Gid: refusedUID}}
		out, err := cmd.CombinedOutput()
		assert.NoError(t, err, "%s: the check as uid %d:\n%s", c.name, refusedUID, out)
	}
	require.NoError(t, os.Chmod(w.cache(), 0o755))
	require.NoError(t, os.Chmod(w.home, 0o755))

	// Root, who can read the cache, is told where the copy is instead.
	res := w.analyze(data, Options{Lookup: refusedLookup(t), host: hostRoots{users: alice(w.home)}})
	assert.Contains(t, adviceFor(t, res.Report(), bin), "build-id cache of alice, who made the recording: pass --buildid-dir "+w.cache())
}

// refusedChild is TestAdviceUsersCacheRefused's check, run as a user
// who cannot read alice's cache: the advice for bin names the cache and
// the way round.
func refusedChild(t *testing.T, data, bin, home string) {
	require.NotEqual(t, 0, os.Geteuid(), "the child must not run as root")
	cache := filepath.Join(home, ".debug")
	_, err := os.ReadDir(cache)
	require.True(t, errors.Is(err, os.ErrPermission), "uid %d reads %s: %v", os.Geteuid(), cache, err)
	res, err := Analyze(t.Context(), Path(data), withSystemSymbols(Options{Lookup: refusedLookup(t), host: hostRoots{users: alice(home)}}))
	require.NoError(t, err)
	mustDSO(t, res, bin, Missing)
	assert.Equal(t, "the recording belongs to alice, whose build-id cache "+cache+
		" (where perf record keeps the binaries that ran) this user cannot read: run perfcheck as alice (or root) with --buildid-dir "+cache,
		adviceFor(t, res.Report(), bin))
}

// refusedLookup is a lookup that finds nothing: an empty cache and debug
// directory of the test's own.
func refusedLookup(t *testing.T) buildidcache.Options {
	return buildidcache.Options{BuildIDDir: t.TempDir(), DebugDirs: []string{t.TempDir()}, DebuginfodURLs: []string{}}
}

// alice is a user database that knows uid 4242, alice, whose home is
// home.
func alice(home string) func(uid string) (*user.User, error) {
	return func(uid string) (*user.User, error) {
		if uid == strconv.Itoa(4242) {
			return &user.User{Uid: uid, Username: "alice", HomeDir: home}, nil
		}
		return nil, errors.New("no such user")
	}
}

// copyExecutable copies the program src to dst, executable by all.
func copyExecutable(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	require.NoError(t, err)
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	require.NoError(t, err)
	require.NoError(t, out.Close())
}
