package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// recordKilled records a spinning C program with real perf and kills perf
// (with its workload: one process group) with SIGKILL once the recording
// holds samples, so that perf never rewrites the header: its data size
// stays 0 and the feature sections are never written.
func recordKilled(t *testing.T) string {
	t.Helper()
	fixtures.NeedTool(t, "perf")
	dir := t.TempDir()
	bin := fixtures.BuildC(t, dir, "spin")
	out := filepath.Join(dir, "killed.data")
	// Small buffers (-m 4) make perf write as it goes; the workload runs
	// far longer than the recording needs.
	rec := exec.Command("perf", "record", "-N", "-q", "-m", "4", "-F", "5000", "-g", "-o", out, "--",
		"sh", "-c", "for i in $(seq 100); do "+bin+" 1 >/dev/null; done")
	rec.Env = fixtures.PerfEnv(dir)
	rec.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, rec.Start())
	exited := make(chan error, 1)
	go func() { exited <- rec.Wait() }()
	for {
		if st, err := os.Stat(out); err == nil && st.Size() > 64<<10 {
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("perf record ended before it could be killed: %v", err)
		default:
		}
		syscall.Nanosleep(&syscall.Timespec{Nsec: 10e6}, nil)
	}
	require.NoError(t, syscall.Kill(-rec.Process.Pid, syscall.SIGKILL))
	<-exited
	return out
}

// TestKilledPerfEveryOutput: a recording whose perf was killed is read,
// and every command that reads samples says that perf did not finish it,
// not only info and stats.
func TestKilledPerfEveryOutput(t *testing.T) {
	t.Parallel()
	data := recordKilled(t)
	const said = "perf record did not exit cleanly (it was killed before it rewrote the header)"

	out, errs, code := runCmd(t, "info", data)
	require.Equal(t, exitOK, code, errs)
	assert.Contains(t, out, "perf record did not close the file cleanly")
	_, errs, code = runCmd(t, "stats", data)
	require.Equal(t, exitOK, code, errs)
	assert.Contains(t, errs, said)

	out, errs, code = runCmd(t, "check", data)
	require.Contains(t, []int{exitOK, exitProblems}, code, errs)
	assert.Contains(t, out, "Notes:\n  - recording: the header's data size is 0: "+said)
	out, errs, code = runCmd(t, "check", "--json", data)
	require.Contains(t, []int{exitOK, exitProblems}, code, errs)
	var rep struct{ Notes []string }
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.NotEmpty(t, rep.Notes)
	assert.Contains(t, rep.Notes[0], said)

	out, errs, code = runCmd(t, "script", data)
	require.Equal(t, exitOK, code, errs)
	assert.NotEmpty(t, out)
	assert.Contains(t, errs, "perfcheck script: note: recording: the header's data size is 0: "+said)

	out, errs, code = runCmd(t, "top", data)
	require.Equal(t, exitOK, code, errs)
	assert.Contains(t, out, "note: recording: the header's data size is 0: "+said)

	prof := filepath.Join(t.TempDir(), "killed.pb.gz")
	_, errs, code = runCmd(t, "pprof", "-o", prof, data)
	require.Equal(t, exitOK, code, errs)
	assert.Contains(t, goToolPprof(t, "-raw", prof), "note: recording: the header's data size is 0: "+said)
}
