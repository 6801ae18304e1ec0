package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// The tests of check, script, top and pprof run the commands in-process
// (run) on the committed recordings in testdata/perf, made by the real perf
// 6.1 (docs/fixtures.md), and on recordings they make themselves with real
// perf in a scratch directory (realcmd_test.go).

const fixtureDir = "../../testdata/perf"

// recordedBin is where the fixtures' programs were when perf recorded them.
const recordedBin = fixtures.RecordedBin

// ckSymfs builds a --symfs root in which every path a fixture recorded
// resolves, wherever the repository is checked out (fixtures.SymFS).
func ckSymfs(t *testing.T) string { return fixtures.SymFS(t) }

// ckHermetic are the lookup flags that keep a test away from the machine's
// own caches and servers: an empty perf cache, no debug directory, no
// debuginfod.
func ckHermetic(t *testing.T) []string {
	return []string{"--buildid-dir", t.TempDir(), "--debug-dir", t.TempDir(), "--debuginfod", "none"}
}

// ckLikePerf are the lookup flags of a comparison with perf run under
// --symfs: an empty perf cache and no debuginfod, as ckHermetic, but the
// default debug directory, which under --symfs is the root's
// /usr/lib/debug, where perf itself finds the system libraries' separate
// debug files.
func ckLikePerf(t *testing.T) []string {
	return []string{"--buildid-dir", t.TempDir(), "--debuginfod", "none"}
}

// ckRun runs perfcheck with args and returns stdout, stderr and the exit
// code.
func ckRun(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return ckRunIn(t, nil, args...)
}

// ckRunIn is ckRun with stdin as the standard input ("-").
func ckRunIn(t *testing.T, stdin io.Reader, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, stdin, &out, &errb)
	return out.String(), errb.String(), code
}

// ckFixture returns the path of a committed recording, failing when it is
// absent (the glob must match).
func ckFixture(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(fixtureDir, name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("fixture %s: %v", name, err)
	}
	return p
}

// ckFixtures lists the committed recordings perf 6.1 can read itself
// (zstd-pipe.data it cannot: docs/fixtures.md).
func ckFixtures(t *testing.T) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(fixtureDir, "*.data"))
	if err != nil || len(m) == 0 {
		t.Fatalf("no fixture matches %s/*.data", fixtureDir)
	}
	var out []string
	for _, p := range m {
		if filepath.Base(p) != "zstd-pipe.data" {
			out = append(out, p)
		}
	}
	return out
}

func needPerf(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("perf"); err != nil {
		t.Skip("perf not installed (Debian: linux-perf): cannot compare with perf's own output")
	}
}

type ckReport struct {
	File                 string `json:"file"`
	Samples              uint64 `json:"samples"`
	TrustedSamples       uint64 `json:"trusted_samples"`
	UntrustedLeafSamples uint64 `json:"untrusted_leaf_samples"`
	UntrustedAnySamples  uint64 `json:"untrusted_any_samples"`
	Problems             int    `json:"problems"`
	StrictProblems       int    `json:"strict_problems"`
	Strict               bool   `json:"strict"`
	Failed               bool   `json:"failed"`
	DSOs                 []struct {
		Path      string `json:"path"`
		BuildID   string `json:"build_id"`
		Verdict   string `json:"verdict"`
		Reason    string `json:"reason"`
		Source    string `json:"source"`
		FoundPath string `json:"found_path"`
		HitsLeaf  uint64 `json:"hits_leaf"`
		HitsAny   uint64 `json:"hits_any"`
	} `json:"dsos"`
}

func ckParseReport(t *testing.T, out string) *ckReport {
	t.Helper()
	var r ckReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("check --json: %v\n%s", err, out)
	}
	return &r
}

func (r *ckReport) verdict(path string) string {
	for _, d := range r.DSOs {
		if d.Path == path {
			return d.Verdict
		}
	}
	return ""
}

func TestCheckUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		want string // on stderr
	}{
		{"no file: ./perf.data, absent here", []string{"check"}, "perf.data: no such file"},
		{"two files", []string{"check", "a.data", "b.data"}, "usage:"},
		{"bad flag", []string{"check", "--no-such-flag", "a.data"}, "no-such-flag"},
		{"absent file", []string{"check", "/nonexistent/perf.data"}, "/nonexistent/perf.data"},
		{"not perf.data", []string{"check", "cmd_check.go"}, "cmd_check.go"},
		{"default command, absent file", []string{"/nonexistent/perf.data"}, "/nonexistent/perf.data"},
		{"script no file: ./perf.data", []string{"script"}, "perf.data: no such file"},
		{"top bad -n", []string{"top", "-n", "-1", "x.data"}, "usage:"},
		{"top bad sort", []string{"top", "--sort", "name", "x.data"}, "usage:"},
		{"pprof without -o", []string{"pprof", "x.data"}, "usage:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := ckRun(t, tc.args...)
			if code != exitError {
				t.Errorf("exit %d, want %d", code, exitError)
			}
			if out != "" {
				t.Errorf("stdout not empty: %q", out)
			}
			if !strings.Contains(errOut, tc.want) {
				t.Errorf("stderr %q does not mention %q", errOut, tc.want)
			}
		})
	}
}

func TestCheckFixture(t *testing.T) {
	t.Parallel()
	symfs := ckSymfs(t)
	data := ckFixture(t, "cshared-fp.data")
	args := append([]string{"check", "--json", "--symfs", symfs}, ckHermetic(t)...)
	out, errOut, code := ckRun(t, append(args, data)...)
	if code != exitOK && code != exitProblems {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	r := ckParseReport(t, out)
	// 301 samples: testdata/perf/cshared-fp.data.stats (perf report --stats).
	if r.Samples != 301 {
		t.Errorf("samples %d, want 301", r.Samples)
	}
	if r.TrustedSamples+r.UntrustedAnySamples != r.Samples || r.UntrustedLeafSamples > r.UntrustedAnySamples {
		t.Errorf("counts do not add up: %+v", r)
	}
	for _, p := range []string{recordedBin + "/cshared", recordedBin + "/libhot.so"} {
		if v := r.verdict(p); v != "verified" {
			t.Errorf("%s: verdict %q, want verified (the binaries in testdata/perf/bin are the ones profiled)", p, v)
		}
	}
	if r.Failed != (code == exitProblems) || r.Failed != (r.Problems > 0) {
		t.Errorf("exit %d, failed %v, problems %d disagree", code, r.Failed, r.Problems)
	}

	// The text form says the same things.
	text, _, code2 := ckRun(t, append(append([]string{"check", "--symfs", symfs}, ckHermetic(t)...), data)...)
	if code2 != code {
		t.Errorf("text exit %d, json exit %d", code2, code)
	}
	for _, want := range []string{"VERDICT", recordedBin + "/cshared", "301 samples, ", "% fully trusted; "} {
		if !strings.Contains(text, want) {
			t.Errorf("text report lacks %q:\n%s", want, text)
		}
	}
	if code == exitOK && !strings.Contains(text, "OK:") || code == exitProblems && !strings.Contains(text, "FAIL:") {
		t.Errorf("last line does not match exit %d:\n%s", code, text)
	}
}

// With the fixture's programs missing (a checkout elsewhere, no symfs) the
// check must fail and name nothing from them.
func TestCheckFixtureMissingBinaries(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(recordedBin); err == nil {
		t.Skip(recordedBin + " exists here: the fixture's binaries are not missing")
	}
	data := ckFixture(t, "cshared-fp.data")
	out, _, code := ckRun(t, append(append([]string{"check", "--json"}, ckHermetic(t)...), data)...)
	if code != exitProblems {
		t.Fatalf("exit %d, want %d", code, exitProblems)
	}
	if v := ckParseReport(t, out).verdict(recordedBin + "/cshared"); v != "missing" {
		t.Errorf("cshared: %s, want missing", v)
	}
}

func TestCheckStdin(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(ckFixture(t, "pipe.data"))
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, code := ckRunIn(t, bytes.NewReader(data), append(append([]string{"check", "--json", "--symfs", ckSymfs(t)}, ckHermetic(t)...), "-")...)
	if code == exitError {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	r := ckParseReport(t, out)
	// 202 samples: testdata/perf/pipe.data.stats.
	if r.Samples != 202 || r.File != "-" {
		t.Errorf("samples %d file %q, want 202 and -", r.Samples, r.File)
	}
}

func TestProgress(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if p := newProgress(&b, "x.data", 1<<30); p != nil {
		t.Fatal("a progress bar on a non-terminal")
	}
	var nilBar *progress
	nilBar.set(5) // no-op, no panic
	nilBar.finish()
	if progressCallback(nilBar, false) != nil {
		t.Error("nil bar gives a callback")
	}

	p := &progress{w: &b, total: 200, label: "x.data"}
	p.set(100)
	p.set(50) // out of order: the bar never goes back
	if got := p.off.Load(); got != 100 {
		t.Errorf("offset %d, want 100", got)
	}
	p.draw(p.off.Load())
	if !strings.Contains(b.String(), " 50%") || !strings.HasPrefix(b.String(), "\rx.data [") {
		t.Errorf("bar %q", b.String())
	}
	b.Reset()
	q := startProgress(&b, "y.data", 10)
	q.set(10)
	q.finish()
	if !strings.HasSuffix(b.String(), "\r\x1b[K") {
		t.Errorf("finish does not clear the line: %q", b.String())
	}
}

// A truncated recording (built here from a real one by cutting it, since
// perf never writes one) is a read error: exit 2, and the message names the
// file and the byte offset, for every command; never a panic or a report
// that looks complete: what was read is printed, marked PARTIAL (script
// prints the samples before the cut, as perf script does).
func TestTruncatedInput(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(ckFixture(t, "cshared-fp.data"))
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(t.TempDir(), "cut.data")
	if err := os.WriteFile(cut, data[:20000], 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range [][]string{{"check"}, {"script"}, {"top"}, {"pprof", "-o", filepath.Join(t.TempDir(), "o.pb.gz")}} {
		out, errOut, code := ckRun(t, append(cmd, cut)...)
		if code != exitError {
			t.Errorf("%s: exit %d", cmd[0], code)
		}
		switch cmd[0] {
		case "check", "top":
			if !strings.Contains(out, "PARTIAL: ") {
				t.Errorf("%s: the output is not marked partial: %q", cmd[0], out)
			}
		case "pprof":
			if out != "" {
				t.Errorf("pprof: stdout %q", out)
			}
		}
		if !strings.Contains(errOut, cut) || !strings.Contains(errOut, "offset ") {
			t.Errorf("%s: %q names neither the file nor the offset", cmd[0], errOut)
		}
	}
}
