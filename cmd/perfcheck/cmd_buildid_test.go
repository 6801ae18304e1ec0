package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// The real tools and the C program these tests drive are shared with
// buildidcache's tests (internal/fixtures).
var (
	bicNeed   = fixtures.NeedTool
	bicBuildC = fixtures.BuildC
)

// bicBuildGo builds a tiny Go program with go build and the given flags.
func bicBuildGo(t *testing.T, dir, name string, flags ...string) string {
	t.Helper()
	gobin := "go"
	if p, err := exec.LookPath("go"); err == nil {
		gobin = p
	} else if _, err := os.Stat("/usr/local/go/bin/go"); err == nil {
		gobin = "/usr/local/go/bin/go"
	}
	src := filepath.Join(dir, name+"-src")
	os.MkdirAll(src, 0o755)
	os.WriteFile(filepath.Join(src, "main.go"), []byte("package main\n\nfunc main() { println(\"hi\") }\n"), 0o644)
	os.WriteFile(filepath.Join(src, "go.mod"), []byte("module hi\n\ngo 1.22\n"), 0o644)
	out := filepath.Join(dir, name)
	cmd := exec.Command(gobin, append([]string{"build", "-o", out}, flags...)...)
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=", "GOWORK=off")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %v: %v\n%s", flags, err, b)
	}
	return out
}

func bicRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, nil, &out, &errb)
	return code, out.String(), errb.String()
}

func TestBuildIDCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	goDefault := bicBuildGo(t, dir, "godefault")
	goNone := bicBuildGo(t, dir, "gonone", "-ldflags=-B=none")
	cNone := bicBuildC(t, dir, "cnone", "-Wl,--build-id=none")
	c8 := bicBuildC(t, dir, "c8", "-Wl,--build-id=0x0102030405060708")

	code, out, errb := bicRun(t, "buildid", goDefault, c8)
	if code != exitOK || errb != "" {
		t.Fatalf("exit %d, stderr %q", code, errb)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], " go:") || !strings.HasPrefix(lines[1], "0102030405060708 ") {
		t.Errorf("output:\n%s", out)
	}

	code, out, errb = bicRun(t, "buildid", goNone, cNone, "--json")
	if code != exitProblems {
		t.Fatalf("exit %d, want %d; stderr %q", code, exitProblems, errb)
	}
	var rep buildIDReportJSON
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if rep.Missing != 2 || len(rep.Files) != 2 {
		t.Fatalf("report %+v", rep)
	}
	if g := rep.Files[0]; g.GNUBuildID != "" || g.GoBuildID == "" || !strings.Contains(g.Advice, "-B=gobuildid") {
		t.Errorf("Go -B none: %+v", g)
	}
	if c := rep.Files[1]; c.GNUBuildID != "" || c.GoBuildID != "" || !strings.Contains(c.Advice, "-Wl,--build-id") {
		t.Errorf("C --build-id=none: %+v", c)
	}

	// Text mode: advice on stderr, "-" for the missing build-id.
	code, out, errb = bicRun(t, "buildid", cNone)
	if code != exitProblems || !strings.HasPrefix(out, "- ") || !strings.Contains(errb, "-Wl,--build-id") {
		t.Errorf("exit %d out %q err %q", code, out, errb)
	}
	// Not an ELF file: exit 2 naming the file.
	notELF := filepath.Join(dir, "script.sh")
	os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o755)
	code, _, errb = bicRun(t, "buildid", notELF, goDefault)
	if code != exitError || !strings.Contains(errb, notELF) {
		t.Errorf("exit %d err %q", code, errb)
	}
	if code, _, _ := bicRun(t, "buildid"); code != exitError {
		t.Errorf("no files: exit %d", code)
	}
}
