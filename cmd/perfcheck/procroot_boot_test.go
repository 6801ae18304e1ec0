//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// dutySpin is busy half of the time, for at most a minute: a process that
// is still running when its recording is checked.
const dutySpin = `
#include <time.h>
#include <unistd.h>
volatile unsigned long sink;
__attribute__((noinline)) void duty_spin(void) { for (int i = 0; i < 1000000; i++) sink += i; }
int main(void) {
	time_t end = time(0) + 60;
	while (time(0) < end) { duty_spin(); usleep(1000); }
	return 0;
}
`

// TestProcRootOnlyThisBoot: a lookup looks under /proc/PID/root of a
// recorded pid only when the recording was made on this host in this
// boot; elsewhere, or before, the pid names an unrelated process of this
// machine or none. A process still running is recorded with real perf
// (perf record -p), and its binary is moved away, so that no file is at
// the recorded path and every lookup by path is in the DSO's trail. As
// recorded, the trail has /proc/PID/root/<path> (the process lives); the
// same recording with its HOSTNAME feature rewritten in this test, or
// with a modification time before this boot (it has no clock reference,
// so that is its time, as for a copy kept with cp -p), has no proc-root
// entry, although the process still lives.
func TestProcRootOnlyThisBoot(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("records with perf: skipped in -short mode")
	}
	fixtures.NeedTool(t, "perf")
	fixtures.NeedTool(t, "gcc")
	dir := t.TempDir()
	src := filepath.Join(dir, "dutyspin.c")
	require.NoError(t, os.WriteFile(src, []byte(dutySpin), 0o644))
	prog := filepath.Join(dir, "dutyspin")
	if b, err := exec.Command("gcc", "-O1", "-Wl,--build-id", "-o", prog, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, b)
	}
	spin := exec.Command(prog)
	require.NoError(t, spin.Start())
	// Our workload: ended by its pid when the test is done.
	t.Cleanup(func() { spin.Process.Kill(); spin.Wait() })
	pid := strconv.Itoa(spin.Process.Pid)
	data := filepath.Join(dir, "here.data")
	fixtures.PerfHome(t, dir, "record", "-N", "-q", "-e", "cpu-clock:u", "-F", "999", "-p", pid, "-o", data, "--", "sleep", "0.5")
	require.NoError(t, os.Rename(prog, prog+".moved"))
	orig, err := os.ReadFile(data)
	require.NoError(t, err)

	// trail checks p and returns the recording's time source and what
	// the lookups of prog's binary tried and rejected.
	trail := func(t *testing.T, p string) (string, []string) {
		t.Helper()
		out, errs, code := runCmd(t, "check", "--json", "--buildid-dir", t.TempDir(), "--debuginfod", "none", p)
		require.Equal(t, exitProblems, code, errs)
		var rep struct {
			EndSource string `json:"recording_end_source"`
			DSOs      []struct {
				Path, Verdict   string
				Tried, Rejected []string
			} `json:"dsos"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
		for _, d := range rep.DSOs {
			if d.Path == prog {
				require.Equal(t, "missing", d.Verdict)
				return rep.EndSource, append(d.Tried, d.Rejected...)
			}
		}
		t.Fatalf("check does not list %s:\n%s", prog, out)
		return "", nil
	}
	procRoot := func(tr []string) []string {
		var out []string
		for _, s := range tr {
			if strings.HasPrefix(s, "proc-root") {
				out = append(out, s)
			}
		}
		return out
	}

	src0, tr := trail(t, data)
	require.Equal(t, "mtime", src0, "the recording has a clock reference: its mtime is not its time")
	assert.Contains(t, tr, "path: "+prog)
	assert.Equal(t, []string{"proc-root: /proc/" + pid + "/root" + prog}, procRoot(tr), "recorded here in this boot, the process running")

	t.Run("other-host", func(t *testing.T) {
		t.Parallel()
		const featHostname = 3
		b := bytes.Clone(orig)
		rewriteString(t, b, featHostname, "elsewhere.invalid")
		p := filepath.Join(dir, "other-host.data")
		require.NoError(t, os.WriteFile(p, b, 0o644))
		_, tr := trail(t, p)
		assert.Contains(t, tr, "path: "+prog)
		assert.Empty(t, procRoot(tr))
	})
	t.Run("before-boot", func(t *testing.T) {
		t.Parallel()
		p := filepath.Join(dir, "before-boot.data")
		require.NoError(t, os.WriteFile(p, orig, 0o644))
		long := time.Date(2001, 9, 9, 0, 0, 0, 0, time.UTC)
		require.NoError(t, os.Chtimes(p, long, long))
		_, tr := trail(t, p)
		assert.Contains(t, tr, "path: "+prog)
		assert.Empty(t, procRoot(tr))
	})
}
