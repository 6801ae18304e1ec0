package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// `perfcheck check -` reads a pipe through the library's check.Stream,
// which learns the recording's kernel release from the pipe's
// HEADER_FEATURE records: a kernel without a recorded build-id, recorded
// on another release than this machine's, is replaced, with that release
// in the reason.
func TestCheckStdinKernelRelease(t *testing.T) {
	t.Parallel()
	p := fixtures.Corpus(t, "perf.data.piped.header_features-4.16")
	if rel, _ := os.ReadFile("/proc/sys/kernel/osrelease"); strings.TrimSpace(string(rel)) == "4.4.0-116-generic" {
		t.Skip("this machine runs the recording's kernel release")
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	out, errs, code := ckRunIn(t, bytes.NewReader(data), append([]string{"check", "--json", "-"}, ckHermetic(t)...)...)
	if code == exitError {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rep ckReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	found := false
	for _, d := range rep.DSOs {
		if d.Path == "[kernel.kallsyms]" {
			found = true
			if d.Verdict != "replaced" || !strings.Contains(d.Reason, "4.4.0-116-generic") {
				t.Errorf("kernel: %s (%s); want replaced naming 4.4.0-116-generic", d.Verdict, d.Reason)
			}
		}
	}
	if !found {
		t.Errorf("no [kernel.kallsyms] row:\n%s", out)
	}
}

// The text report prints the report's notes. In cshared-dwarf.data the
// user callers come from --call-graph dwarf stack copies; with the
// recorded binaries absent (an empty --symfs) none can be proven, so
// every sample's unwinding stops at the leaf and a note says so.
func TestCheckTextNotes(t *testing.T) {
	t.Parallel()
	p := ckFixture(t, "cshared-dwarf.data")
	args := append([]string{"check", "--symfs", t.TempDir(), p}, ckHermetic(t)...)
	out, errs, code := ckRun(t, args...)
	if code == exitError {
		t.Fatalf("exit %d: %s", code, errs)
	}
	jout, _, _ := ckRun(t, append(args, "--json")...)
	var rep struct {
		Notes []string `json:"notes"`
	}
	if err := json.Unmarshal([]byte(jout), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Notes) == 0 {
		t.Fatalf("the JSON report has no notes; the fixture should give one:\n%s", jout)
	}
	if !strings.Contains(out, "\nNotes:\n") {
		t.Errorf("no Notes section in the text report:\n%s", out)
	}
	for _, n := range rep.Notes {
		if !strings.Contains(out, "  - "+n+"\n") {
			t.Errorf("note %q missing from the text report:\n%s", n, out)
		}
	}
}

// ckTruncated writes cshared-fp.data cut 20 bytes into the record that
// straddles the middle of its data section (fixtures.Truncated).
func ckTruncated(t *testing.T) string { return fixtures.Truncated(t, "cshared-fp.data") }

// A truncated recording: every command prints what was read, marked
// partial, the error (file and offset) goes to stderr, and the exit
// status is 2.
func TestPartialTruncated(t *testing.T) {
	t.Parallel()
	p := ckTruncated(t)
	flags := append([]string{"--symfs", ckSymfs(t)}, ckHermetic(t)...)
	wantErr := func(what, errs string) {
		t.Helper()
		if !strings.Contains(errs, p) || !strings.Contains(errs, "offset") {
			t.Errorf("%s: stderr %q does not name the file and the offset", what, errs)
		}
	}

	out, errs, code := ckRun(t, append([]string{"check", p}, flags...)...)
	if code != exitError {
		t.Errorf("check: exit %d, want 2", code)
	}
	wantErr("check", errs)
	if !strings.Contains(out, "PARTIAL: ") || !strings.Contains(out, "VERDICT") || !strings.Contains(out, "cshared") {
		t.Errorf("check: the partial report is not printed and marked:\n%s", out)
	}

	out, errs, code = ckRun(t, append([]string{"check", "--json", p}, flags...)...)
	if code != exitError {
		t.Errorf("check --json: exit %d, want 2", code)
	}
	wantErr("check --json", errs)
	var rep struct {
		Partial bool   `json:"partial"`
		Error   string `json:"error"`
		Samples uint64 `json:"samples"`
		DSOs    []any  `json:"dsos"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("check --json: %v\n%s", err, out)
	}
	if !rep.Partial || !strings.Contains(rep.Error, "offset") || rep.Samples == 0 || rep.Samples >= 301 || len(rep.DSOs) == 0 {
		t.Errorf("check --json: partial %v, error %q, %d samples, %d DSOs", rep.Partial, rep.Error, rep.Samples, len(rep.DSOs))
	}

	out, errs, code = ckRun(t, append([]string{"script", p}, flags...)...)
	if code != exitError {
		t.Errorf("script: exit %d, want 2", code)
	}
	wantErr("script", errs)
	if n := strings.Count(out, " cpu-clock: "); n == 0 || n >= 301 {
		t.Errorf("script printed %d samples; want those before the cut", n)
	}

	out, errs, code = ckRun(t, append([]string{"top", "--json", p}, flags...)...)
	if code != exitError {
		t.Errorf("top --json: exit %d, want 2", code)
	}
	wantErr("top", errs)
	var top struct {
		Partial bool   `json:"partial"`
		Error   string `json:"error"`
		Events  []any  `json:"events"`
	}
	if err := json.Unmarshal([]byte(out), &top); err != nil || !top.Partial || top.Error == "" || len(top.Events) != 1 {
		t.Errorf("top --json: %v, %+v", err, top)
	}
	out, _, code = ckRun(t, append([]string{"top", p}, flags...)...)
	if code != exitError || !strings.HasPrefix(out, "PARTIAL: ") || !strings.Contains(out, "main_spin") {
		t.Errorf("top: exit %d, output:\n%s", code, out)
	}

	pb := filepath.Join(t.TempDir(), "out.pb.gz")
	_, errs, code = ckRun(t, append([]string{"pprof", "-o", pb, p}, flags...)...)
	if code != exitError {
		t.Errorf("pprof: exit %d, want 2", code)
	}
	wantErr("pprof", errs)
	if st, err := os.Stat(pb); err != nil || st.Size() == 0 {
		t.Errorf("pprof: no partial profile written: %v", err)
	}
}

// The corrupt pipe of the corpus, from standard input: an empty report
// (no sample precedes the corrupt one), the error naming standard input
// and offset 49104, exit 2.
func TestPartialCorruptPipeStdin(t *testing.T) {
	t.Parallel()
	p := fixtures.Corpus(t, "perf.data.piped.corrupted.zero_size_sample-3.2")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	out, errs, code := ckRunIn(t, bytes.NewReader(data), append([]string{"check", "--json", "-"}, ckHermetic(t)...)...)
	if code != exitError {
		t.Errorf("exit %d, want 2", code)
	}
	if !strings.Contains(errs, "standard input") || !strings.Contains(errs, "49104") {
		t.Errorf("stderr %q does not name standard input and offset 49104", errs)
	}
	var rep struct {
		Partial bool   `json:"partial"`
		Error   string `json:"error"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || !rep.Partial || !strings.Contains(rep.Error, "49104") {
		t.Errorf("JSON: %v, %+v\n%s", err, rep, out)
	}
}
