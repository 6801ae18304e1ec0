package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// whatToDo is the "What to do:" part of check's text output: each advice
// with its paths.
func whatToDo(t *testing.T, out string) string {
	t.Helper()
	i := strings.Index(out, "\nWhat to do:\n")
	require.GreaterOrEqual(t, i, 0, "no advice in:\n%s", out)
	return out[i:]
}

// A recording made with perf record -B (--no-buildid) has no build-id
// table: check says so in its advice, for the binaries it could not
// prove, and says nothing of -B for the same program recorded without it.
func TestAdviceRecordedWithoutBuildIDs(t *testing.T) {
	t.Parallel()
	fixtures.NeedTool(t, "perf")
	dir := t.TempDir()
	bin := fixtures.BuildC(t, dir, "prog")
	noTable := recordWithRetry(t, dir, "b.data", []string{"-B", "-e", "cpu-clock:u"}, bin, "1")
	out, errs, code := ckRun(t, append(append([]string{"check"}, ckHermetic(t)...), noTable)...)
	require.Equal(t, exitOK, code, errs+out)
	advice := whatToDo(t, out)
	assert.Contains(t, advice, "  - the recording was made with perf record -B (--no-buildid): it has no build-id table and perf record kept no copies, "+
		"so no binary can be proven to be the one that ran (only its path, inode and modification time are compared); record without -B\n      "+bin+"\n")

	table := recordWithRetry(t, dir, "t.data", []string{"-e", "cpu-clock:u"}, bin, "1")
	out, errs, code = ckRun(t, append(append([]string{"check"}, ckHermetic(t)...), table)...)
	require.Equal(t, exitOK, code, errs+out)
	assert.NotContains(t, out, "perf record -B")
}

// A recording from another machine whose binary is not here: the advice
// names what differs and says to fill a build-id cache there (perfcheck
// cache fill, perf archive). One recording made here with real perf; the
// program is deleted after it, and a copy of the recording gets another
// host name, or another architecture, in its HOSTNAME or ARCH feature,
// rewritten in this test, since the test has no second machine to record
// on. The recording as made here gets the general advice.
func TestAdviceOtherMachine(t *testing.T) {
	t.Parallel()
	fixtures.NeedTool(t, "perf")
	dir := t.TempDir()
	bin := fixtures.BuildC(t, dir, "prog")
	data := recordWithRetry(t, dir, "here.data", []string{"-e", "cpu-clock:u"}, bin, "1")
	require.NoError(t, os.Remove(bin))
	orig, err := os.ReadFile(data)
	require.NoError(t, err)
	host, err := os.ReadFile("/proc/sys/kernel/hostname")
	require.NoError(t, err)
	arch, err := os.ReadFile("/proc/sys/kernel/arch")
	require.NoError(t, err)
	const featHostname, featArch = 3, 6
	for _, c := range []struct {
		name string
		feat int
		to   string
		want string
	}{
		{"other-host", featHostname, "buildhost7", "host buildhost7 (this machine: " + strings.TrimSpace(string(host)) + ")"},
		{"other-arch", featArch, "aarch64", "architecture aarch64 (this machine: " + strings.TrimSpace(string(arch)) + ")"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := append([]byte(nil), orig...)
			rewriteString(t, b, c.feat, c.to)
			p := filepath.Join(t.TempDir(), c.name+".data")
			require.NoError(t, os.WriteFile(p, b, 0o644))
			out, errs, code := ckRun(t, append(append([]string{"check"}, ckHermetic(t)...), p)...)
			require.Equal(t, exitProblems, code, errs+out)
			assert.Contains(t, whatToDo(t, out), "  - recorded on another machine ("+c.want+"): its binaries are there; run `perfcheck cache fill "+
				c.name+".data` or `perf archive "+c.name+".data` there and pass that build-id cache (perf archive's tarball unpacked) with --buildid-dir\n      "+bin+"\n")
		})
	}
	out, errs, code := ckRun(t, append(append([]string{"check"}, ckHermetic(t)...), data)...)
	require.Equal(t, exitProblems, code, errs+out)
	advice := whatToDo(t, out)
	assert.NotContains(t, advice, "another machine")
	assert.Contains(t, advice, "keep binaries by build-id at record time")
}
