package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// sharedCorpus returns a file of /work/shared/corpus, skipping when it is
// absent.
func sharedCorpus(t *testing.T, name string) string {
	t.Helper()
	p := "../../../shared/corpus/" + name
	if _, err := os.Stat(p); err != nil {
		t.Skipf("shared corpus absent (%v): this test needs %s", err, name)
	}
	return p
}

// withStdin makes "-" read data for the duration of the test.
func withStdin(t *testing.T, data []byte) {
	old := stdinReader
	stdinReader = bytes.NewReader(data)
	t.Cleanup(func() { stdinReader = old })
}

// `perfcheck check -` reads a pipe through the library's AnalyzeReader,
// which learns the recording's kernel release from the pipe's
// HEADER_FEATURE records: a kernel without a recorded build-id, recorded
// on another release than this machine's, is replaced, with that release
// in the reason.
func TestCheckStdinKernelRelease(t *testing.T) {
	p := sharedCorpus(t, "perf.data.piped.header_features-4.16")
	if rel, _ := os.ReadFile("/proc/sys/kernel/osrelease"); strings.TrimSpace(string(rel)) == "4.4.0-116-generic" {
		t.Skip("this machine runs the recording's kernel release")
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	withStdin(t, data)
	out, errs, code := ckRun(t, append([]string{"check", "--json", "-"}, ckHermetic(t)...)...)
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
