//go:build linux

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ctrSpin runs in a chroot as a container's process would: the parent
// forks a child that burns 0.3 s, waits for it to say it is done, writes
// the child's pid to /child.pid (in its own root) and exits, which ends
// perf record; the child stays alive (sleeping, at most a minute, with its
// standard streams closed) so that cache fill can find its binary through
// /proc/PID/root.
const ctrSpin = `
#include <stdio.h>
#include <time.h>
#include <unistd.h>
volatile unsigned long sink;
__attribute__((noinline)) void container_spin(void) { for (int i = 0; i < 100000; i++) sink += i; }
static double now(void) { struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts); return ts.tv_sec + ts.tv_nsec / 1e9; }
int main(void) {
	int p[2];
	if (pipe(p)) return 1;
	pid_t c = fork();
	if (c == 0) {
		double end = now() + 0.3;
		while (now() < end) container_spin();
		write(p[1], "x", 1);
		/* Let go of perf's output pipes: their readers wait for every writer. */
		close(0); close(1); close(2);
		sleep(60);
		_exit(0);
	}
	char b;
	read(p[0], &b, 1);
	FILE *f = fopen("/child.pid", "w");
	if (!f) return 1;
	fprintf(f, "%d\n", (int)c);
	fclose(f);
	return 0;
}
`

// TestCacheFillContainerProcRoot records a program run in a chroot, whose
// MMAP names its path inside the chroot (/opt/ctr-N/ctrspin): nothing
// here. While its process still runs, cache fill must find the binary
// through /proc/PID/root and cache it, so that the check verifies it; once
// the process is gone there is no file to find.
func TestCacheFillContainerProcRoot(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("records with perf: skipped in -short mode")
	}
	if os.Geteuid() != 0 {
		t.Skip("chroot needs root")
	}
	bicNeed(t, "perf")
	bicNeed(t, "chroot")
	bicNeed(t, "gcc")
	dir := t.TempDir()
	jail := filepath.Join(dir, "jail")
	inside := "/opt/ctr-" + strconv.Itoa(os.Getpid()) + "/ctrspin"
	if _, err := os.Stat(inside); err == nil {
		t.Skipf("%s exists on this host", inside)
	}
	if err := os.MkdirAll(filepath.Dir(filepath.Join(jail, inside)), 0o755); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "ctrspin.c")
	if err := os.WriteFile(src, []byte(ctrSpin), 0o644); err != nil {
		t.Fatal(err)
	}
	// Static: the chroot holds no libc.
	if b, err := exec.Command("gcc", "-O1", "-static", "-Wl,--build-id", "-o", filepath.Join(jail, inside), src).CombinedOutput(); err != nil {
		t.Skipf("gcc -static (libc.a needed): %v\n%s", err, b)
	}
	data := filepath.Join(dir, "ctr.data")
	// --buildid-mmap: perf's header table would have no build-id for the
	// binary, because perf reads it at the end of the recording through
	// the mapping process's root, and that process (the parent) is gone
	// by then (perf 6.1: "no build-id recorded").
	bicPerf(t, dir, "record", "-q", "-e", "cpu-clock", "--buildid-mmap", "--no-buildid-cache", "-o", data, "--", "chroot", jail, inside)
	b, err := os.ReadFile(filepath.Join(jail, "child.pid"))
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || child <= 0 {
		t.Fatalf("child.pid: %q", b)
	}
	// The child is ours (our workload's): end it by its pid when done.
	killed := false
	kill := func() {
		if !killed {
			killed = true
			syscall.Kill(child, syscall.SIGKILL)
		}
	}
	defer kill()
	if root, err := os.Readlink("/proc/" + strconv.Itoa(child) + "/root"); err != nil || root != jail {
		t.Fatalf("child %d: root %q (%v), want %s", child, root, err, jail)
	}

	type fillJSON struct {
		Results []struct{ Path, Status, Reason string } `json:"results"`
	}
	statusOf := func(out string) (string, string) {
		t.Helper()
		var rep fillJSON
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		for _, r := range rep.Results {
			if r.Path == inside {
				return r.Status, r.Reason
			}
		}
		t.Fatalf("fill does not mention %s:\n%s", inside, out)
		return "", ""
	}
	checkVerdict := func(cache string) string {
		t.Helper()
		_, out, errb := bicRun(t, "check", "--json", "--buildid-dir", cache, "--debug-dir", filepath.Join(dir, "nodebug"), "--debuginfod", "none", data)
		var rep struct {
			DSOs []struct{ Path, Verdict, Source string } `json:"dsos"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%v\n%s\n%s", err, out, errb)
		}
		for _, d := range rep.DSOs {
			if d.Path == inside {
				return d.Verdict + " " + d.Source
			}
		}
		t.Fatalf("check does not list %s:\n%s", inside, out)
		return ""
	}

	cache := filepath.Join(dir, "cache")
	if v := checkVerdict(cache); !strings.HasPrefix(v, "missing") {
		t.Errorf("before fill: %s, want missing (the path names nothing here)", v)
	}
	_, out, errb := bicRun(t, "cache", "fill", "--json", "--buildid-dir", cache, "--debuginfod", "none", data)
	if st, why := statusOf(out); st != "added" {
		t.Fatalf("fill while the process runs: %s (%s)\n%s", st, why, errb)
	}
	if v := checkVerdict(cache); v != "verified perf-cache" {
		t.Errorf("after fill: %s, want verified perf-cache", v)
	}

	// The same recording from another host (its HOSTNAME feature
	// rewritten in this test): its pid names no process of this machine,
	// so fill does not look under /proc/PID/root, although the process
	// still runs here.
	b, err = os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	const featHostname = 3
	rewriteString(t, b, featHostname, "elsewhere.invalid")
	other := filepath.Join(dir, "other-host.data")
	if err := os.WriteFile(other, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, out, _ = bicRun(t, "cache", "fill", "--json", "--buildid-dir", filepath.Join(dir, "cache3"), "--debuginfod", "none", other)
	if st, why := statusOf(out); st != "skipped" || !strings.Contains(why, "no file") {
		t.Errorf("fill of the recording from another host: %s (%s), want skipped: no file", st, why)
	}

	// Once the process is gone its root is too.
	kill()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat("/proc/" + strconv.Itoa(child) + "/root" + inside); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("child %d still has its root after SIGKILL", child)
		}
	}
	_, out, _ = bicRun(t, "cache", "fill", "--json", "--buildid-dir", filepath.Join(dir, "cache2"), "--debuginfod", "none", data)
	if st, why := statusOf(out); st != "skipped" || !strings.Contains(why, "no file") {
		t.Errorf("fill after exit: %s (%s), want skipped: no file", st, why)
	}
}
