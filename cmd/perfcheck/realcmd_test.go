package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// These tests record a small C program with the real perf, then rebuild it
// at the same path with renamed functions, and read every output of every
// command: none may show a name that exists only in the rebuilt binary —
// which perf report itself does show.

// hotC burns 300 ms of its own CPU time in three functions whose names the
// build picks (-DHOT_A=... -DHOT_B=... -DHOT_C=...), so that two builds
// differ only in names: same code, same offsets, different symbols and
// build-id.
//
// CPU time, not wall time: cpu-clock samples the CPU time a task uses, so
// a loop bounded by wall time gets fewer samples the busier the machine
// is, and on a busy machine one stray sample in libc or the vdso can reach
// the 1% at which the clean states compare names with perf report.
// cpuSecondsC is the clock every C workload of these tests spins on, so
// the number of samples does not depend on the load.
const hotC = `
#include <time.h>
volatile unsigned long sink;
__attribute__((noinline)) void HOT_A(void) { for (int i = 0; i < 20000; i++) sink += i * 7; }
__attribute__((noinline)) void HOT_B(void) { for (int i = 0; i < 10000; i++) sink ^= i * 13; }
__attribute__((noinline)) void HOT_C(void) { HOT_A(); HOT_B(); }
` + cpuSecondsC + `
int main(void) { double end = cpu_seconds() + 0.3; while (cpu_seconds() < end) for (int i = 0; i < 10; i++) HOT_C(); return 0; }
`

// cpuSecondsC is cpu_seconds(), the CPU time the process has used (its
// CLOCK_PROCESS_CPUTIME_ID), which the C workloads spin on (see hotC). It
// is a system call (the vdso serves only the wall clocks), so they read
// it every few hundred microseconds of work, not at every step: the
// samples stay in the functions the tests name.
const cpuSecondsC = `
static double cpu_seconds(void) { struct timespec ts; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts); return ts.tv_sec + ts.tv_nsec / 1e9; }
`

var (
	origNames = []string{"-DHOT_A=orig_alpha_spin", "-DHOT_B=orig_beta_spin", "-DHOT_C=orig_gamma_call"}
	replNames = []string{"-DHOT_A=repl_only_alpha", "-DHOT_B=repl_only_beta_", "-DHOT_C=repl_only_gamma"}
	// replOnly are substrings found only in the rebuilt binary's names.
	replOnly = []string{"repl_only"}
)

type realWorld struct {
	t   *testing.T
	dir string
}

func newRealWorld(t *testing.T) *realWorld {
	t.Helper()
	if testing.Short() {
		t.Skip("records with perf: skipped in -short mode")
	}
	needPerf(t)
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed: cannot build the workload")
	}
	return &realWorld{t: t, dir: t.TempDir()}
}

// run runs a command in w.dir and returns its standard output. When the
// command is perf and perf is killed by a signal (fixtures.PerfDied: perf
// 6.1 now and then aborts in its build-id code, leaving no recording or
// answer), it runs it again, up to fixtures.PerfAttempts times, and
// skips the test when perf dies every time: there is nothing to compare
// with. Any other failure, an error exit of perf included, fails the
// test.
func (w *realWorld) run(name string, args ...string) string {
	w.t.Helper()
	for attempt := 1; ; attempt++ {
		cmd := exec.Command(name, args...)
		cmd.Dir = w.dir
		// perf's cache is w.dir/.debug whatever the caller's
		// PERF_BUILDID_DIR (the proof tests look for it there).
		cmd.Env = append(fixtures.PerfEnv(w.dir), "LC_ALL=C")
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		switch {
		case err == nil:
			return out.String()
		case name != "perf" || !fixtures.PerfDied(err):
			w.t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, errb.String())
		case attempt == fixtures.PerfAttempts:
			w.t.Skipf("perf %s: died %d times: %v\n%s", strings.Join(args, " "), attempt, err, errb.String())
		}
		w.t.Logf("perf %s: died (%v), running it again\n%s", strings.Join(args, " "), err, errb.String())
	}
}

// build compiles hotC into bin with the given names, through a temporary
// file renamed into place, as build systems replace binaries.
func (w *realWorld) build(bin string, names []string, ldflags ...string) {
	w.t.Helper()
	src := filepath.Join(w.dir, "hot.c")
	if err := os.WriteFile(src, []byte(hotC), 0o644); err != nil {
		w.t.Fatal(err)
	}
	if ldflags == nil {
		ldflags = []string{"-Wl,--build-id=sha1"}
	}
	args := append(append([]string{"-O1", "-g", "-fno-omit-frame-pointer", "-o", bin + ".tmp", src}, ldflags...), names...)
	w.run("gcc", args...)
	if err := os.Rename(bin+".tmp", bin); err != nil {
		w.t.Fatal(err)
	}
}

// perfcheck runs a command in-process with hermetic lookup flags and
// returns stdout and the exit code.
func (w *realWorld) perfcheck(args ...string) (string, int) {
	w.t.Helper()
	out, errOut, code := w.pcOut(proofCase{}, args...)
	return out + errOut, code
}

func goToolPprof(t *testing.T, args ...string) string {
	t.Helper()
	g := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(g); err != nil {
		t.Skip("no go command for go tool pprof")
	}
	cmd := exec.Command(g, append([]string{"tool", "pprof"}, args...)...)
	// HOME stays (go tool pprof is built into $HOME/.cache/go-build);
	// PPROF_BINARY_PATH points at nothing, so only the profile's own
	// mapping files can be opened.
	cmd.Env = append(os.Environ(), "PPROF_BINARY_PATH="+t.TempDir(), "PPROF_TMPDIR="+t.TempDir())
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("go tool pprof %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String() + errb.String()
}

var pprofTopLine = regexp.MustCompile(`^\s*\S+\s+([0-9.]+)%\s+[0-9.]+%\s+\S+\s+[0-9.]+%\s+(.+?)\s*$`)

func TestRealRebuiltBinaryEveryOutput(t *testing.T) {
	t.Parallel()
	w := newRealWorld(t)
	bin := filepath.Join(w.dir, "hot")
	w.build(bin, origNames)
	data := filepath.Join(w.dir, "perf.data")
	w.run("perf", "record", "-q", "-N", "-e", "cpu-clock", "-F", "2000", "-g", "-o", data, "--", bin)
	// The rebuild must be visibly later than the recording.
	time.Sleep(20 * time.Millisecond)
	pb := filepath.Join(w.dir, "out.pb.gz")

	t.Run("clean", func(t *testing.T) {
		out, code := w.perfcheck("check", "--json", data)
		if code != exitOK {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		r := ckParseReport(t, out)
		if r.verdict(bin) != "verified" {
			t.Fatalf("%s: %s", bin, r.verdict(bin))
		}
		// --strict: libc appears only in callchains, so perf 6.1 recorded
		// no build-id for it; it is unverified, which --strict fails.
		if _, code := w.perfcheck("check", "--strict", data); code != exitProblems && r.StrictProblems > 0 {
			t.Errorf("--strict exit %d with %d strict problems", code, r.StrictProblems)
		}

		// pprof and top agree with perf report --no-children.
		if _, code := w.perfcheck("pprof", "-o", pb, data); code != exitOK {
			t.Fatalf("pprof exit %d", code)
		}
		cw := &realWorld{t: t, dir: w.dir}
		topJS, _, _ := cw.pcOut(proofCase{}, "top", "--json", "-n", "0", data)
		cw.agreesWithPerfReport(data, pb, topJS, map[string]string{bin: bin})
		if top := goToolPprof(t, "-top", pb); !strings.Contains(top, "orig_alpha_spin") {
			t.Errorf("the hot function is not in pprof's top:\n%s", top)
		}
	})

	// Keep the binary that ran where google/pprof looks binaries up by
	// build-id: $PPROF_BINARY_PATH/<build-id>/<name>.
	bins := filepath.Join(w.dir, "bins")
	{
		out, _ := w.perfcheck("check", "--json", data)
		var id string
		for _, d := range ckParseReport(t, out).DSOs {
			if d.Path == bin {
				id = d.BuildID
			}
		}
		if id == "" {
			t.Fatal("no build-id recorded for the workload")
		}
		if err := os.MkdirAll(filepath.Join(bins, id), 0o755); err != nil {
			t.Fatal(err)
		}
		orig, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(bins, id, "hot"), orig, 0o755); err != nil {
			t.Fatal(err)
		}
	}

	w.build(bin, replNames)

	t.Run("rebuilt", func(t *testing.T) {
		// The rebuilt binary names the recorded offsets with its own
		// names: whoever symbolizes through the file at the path (go tool
		// pprof does, ignoring build-ids) gets them. Shown with addr2line
		// on the hottest offset, so the test proves something.
		script, _ := w.perfcheck("script", data)
		ms := regexp.MustCompile(`\[mismatch\] hot\+0x([0-9a-f]+) `).FindAllStringSubmatch(script, -1)
		if ms == nil {
			t.Fatalf("script does not show [mismatch] hot+0xOFFSET:\n%.3000s", script)
		}
		if _, err := exec.LookPath("addr2line"); err == nil {
			args := []string{"-f", "-e", bin}
			for _, m := range ms[:min(len(ms), 50)] {
				args = append(args, "0x"+m[1])
			}
			if a2l := w.run("addr2line", args...); !strings.Contains(a2l, "repl_only") {
				t.Fatalf("addr2line on the rebuilt binary names no recorded offset with a replacement-only name: the test would prove nothing\n%s", a2l)
			}
		}

		out, code := w.perfcheck("check", "--json", data)
		if code != exitProblems {
			t.Errorf("check exit %d, want %d", code, exitProblems)
		}
		r := ckParseReport(t, out)
		if r.verdict(bin) != "mismatch" {
			t.Errorf("%s: %s, want mismatch", bin, r.verdict(bin))
		}
		if r.TrustedSamples == r.Samples || r.UntrustedLeafSamples == 0 {
			t.Errorf("trust counts %+v", r)
		}

		outputs := map[string]string{}
		for _, args := range [][]string{
			{"check", data},
			{"check", "--json", data},
			{"script", data},
			{"script", "--json", data},
			{"script", "--inline", data},
			{"top", "-n", "0", data},
			{"top", "--json", "-n", "0", data},
			{"top", "--sort", "total", data},
			{"pprof", "-o", pb, data},
		} {
			out, _ := w.perfcheck(args...)
			outputs[strings.Join(args[:len(args)-1], " ")] = out
		}
		top, _ := w.perfcheck("top", "-n", "0", data)
		if !strings.Contains(top, "[mismatch] "+bin) {
			t.Errorf("top does not group the mismatched binary:\n%s", top)
		}
		outputs["go tool pprof -top"] = goToolPprof(t, "-top", pb)
		outputs["go tool pprof -traces"] = goToolPprof(t, "-traces", pb)
		outputs["go tool pprof -raw"] = goToolPprof(t, "-raw", pb)
		// --trust-paths names the frames from the file at the path (marked
		// untrusted) in text; the profile never carries them.
		w.perfcheck("pprof", "--trust-paths", "-o", pb, data)
		outputs["--trust-paths go tool pprof -traces"] = goToolPprof(t, "-traces", pb)

		for what, out := range outputs {
			for _, bad := range replOnly {
				if strings.Contains(out, bad) {
					i := strings.Index(out, bad)
					t.Errorf("%s shows %q, a name only the rebuilt binary has: …%s…", what, bad, out[max(0, i-200):min(len(out), i+100)])
				}
			}
		}
		if !strings.Contains(outputs["go tool pprof -raw"], "ad") && !strings.Contains(outputs["go tool pprof -raw"], r.DSOs[0].BuildID) {
			t.Errorf("pprof lost the build-id")
		}
		// google/pprof, given the binary that ran by build-id, names the
		// untrusted mapping right: the profile left it for that.
		if gp := googlePprof(t); gp != "" {
			w.perfcheck("pprof", "-o", pb, data)
			cmd := exec.Command(gp, "-top", pb)
			cmd.Env = append(os.Environ(), "PPROF_BINARY_PATH="+bins, "PPROF_TMPDIR="+t.TempDir())
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("pprof -top: %v\n%s", err, out)
			}
			if !strings.Contains(string(out), "orig_alpha_spin") || strings.Contains(string(out), "repl_only") {
				t.Errorf("google/pprof with the original binary by build-id:\n%s", out)
			}
		}

		var rep ckReport
		json.Unmarshal([]byte(outputs["check --json"]), &rep)
		for _, d := range rep.DSOs {
			if d.Path == bin && !strings.Contains(outputs["go tool pprof -raw"], d.BuildID) {
				t.Errorf("the recorded build-id %s is not on the mapping:\n%s", d.BuildID, outputs["go tool pprof -raw"])
			}
		}
	})
}

// googlePprof builds google/pprof's command from the module cache (it is a
// dependency of this module) and returns its path, or "" when it cannot be
// built here (offline without the module).
func googlePprof(t *testing.T) string {
	t.Helper()
	g := filepath.Join(runtime.GOROOT(), "bin", "go")
	out := filepath.Join(t.TempDir(), "pprof")
	cmd := exec.Command(g, "build", "-o", out, "github.com/google/pprof")
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "GOPROXY=off")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Logf("google/pprof not built, its check skipped: %v\n%s", err, b)
		return ""
	}
	return out
}

// A binary without any build-id, rebuilt after the recording: nothing can
// be verified, the new inode is the evidence (replaced). No tool may name
// its frames: pprof has not even a build-id to check.
func TestRealReplacedWithoutBuildID(t *testing.T) {
	t.Parallel()
	w := newRealWorld(t)
	bin := filepath.Join(w.dir, "hot")
	w.build(bin, origNames, "-Wl,--build-id=none")
	data := filepath.Join(w.dir, "perf.data")
	w.run("perf", "record", "-q", "-N", "-e", "cpu-clock", "-F", "2000", "-g", "-o", data, "--", bin)
	time.Sleep(20 * time.Millisecond)

	out, code := w.perfcheck("check", "--json", data)
	if code != exitOK {
		t.Fatalf("before the rebuild: exit %d\n%s", code, out)
	}
	if v := ckParseReport(t, out).verdict(bin); v != "unverified" {
		t.Fatalf("before the rebuild: %s, want unverified", v)
	}
	if _, code := w.perfcheck("check", "--strict", data); code != exitProblems {
		t.Errorf("--strict on an unverified binary: exit %d, want 1", code)
	}

	w.build(bin, replNames, "-Wl,--build-id=none")
	out, code = w.perfcheck("check", "--json", data)
	if code != exitProblems {
		t.Errorf("after the rebuild: exit %d, want 1", code)
	}
	r := ckParseReport(t, out)
	if v := r.verdict(bin); v != "replaced" {
		t.Fatalf("after the rebuild: %s, want replaced", v)
	}
	pb := filepath.Join(w.dir, "out.pb.gz")
	outputs := map[string]string{}
	for _, args := range [][]string{{"check", data}, {"script", data}, {"script", "--json", data}, {"top", "-n", "0", data}, {"top", "--json", data}, {"pprof", "-o", pb, data}} {
		o, _ := w.perfcheck(args...)
		outputs[strings.Join(args[:len(args)-1], " ")] = o
	}
	outputs["go tool pprof -traces"] = goToolPprof(t, "-traces", pb)
	outputs["go tool pprof -top"] = goToolPprof(t, "-top", pb)
	if !strings.Contains(outputs["top -n 0"], "[replaced] "+bin) {
		t.Errorf("top does not group the replaced binary:\n%s", outputs["top -n 0"])
	}
	for what, o := range outputs {
		if i := strings.Index(o, "repl_only"); i >= 0 {
			t.Errorf("%s shows a name only the rebuilt binary has: …%s…", what, o[max(0, i-200):min(len(o), i+100)])
		}
	}
}
