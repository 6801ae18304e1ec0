package buildidcache

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// needTool skips the test when a real tool it drives is not installed.
// scripts/test.sh installs all of them, so a skip means a partial setup.
func needTool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s is not installed (scripts/test.sh installs it): %v", name, err)
	}
	return p
}

// cProg is a small C program with a function worth symbolizing.
const cProg = `
#include <stdio.h>
#ifndef TAG
#define TAG ""
#endif
__attribute__((noinline)) unsigned long spin(unsigned long n) {
	volatile unsigned long x = 0;
	for (unsigned long i = 0; i < n; i++) x += i;
	return x;
}
int main(int argc, char **argv) { printf(TAG "%lu\n", spin(argc > 1 ? 200000000UL : 10)); return 0; }
`

// buildC compiles cProg with gcc and extra flags into dir/name.
func buildC(t testing.TB, dir, name string, flags ...string) string {
	t.Helper()
	needTool(t, "gcc")
	src := filepath.Join(dir, name+".c")
	if err := os.WriteFile(src, []byte(cProg), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, name)
	args := append([]string{"-O1", "-o", out, src}, flags...)
	if b, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %v: %v\n%s", args, err, b)
	}
	return out
}

const goProg = "package main\n\nfunc main() { println(\"hello\") }\n"

// buildGo builds a tiny Go program into dir/name with the given environment
// additions (GOOS/GOARCH) and go build flags.
func buildGo(t testing.TB, dir, name string, env []string, flags ...string) string {
	t.Helper()
	src := filepath.Join(dir, name+"-src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte(goProg), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module hello\n\ngo 1.22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, name)
	args := append([]string{"build", "-o", out}, flags...)
	cmd := exec.Command(goTool(t), args...)
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=", "GOWORK=off")
	cmd.Env = append(cmd.Env, env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %v (%v): %v\n%s", args, env, err, b)
	}
	return out
}

func goTool(t testing.TB) string {
	t.Helper()
	if p := filepath.Join(os.Getenv("GOROOT"), "bin", "go"); os.Getenv("GOROOT") != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	p, err := exec.LookPath("go")
	if err != nil {
		if _, err := os.Stat("/usr/local/go/bin/go"); err == nil {
			return "/usr/local/go/bin/go"
		}
		t.Skip("go tool not found")
	}
	return p
}

var readelfBuildID = regexp.MustCompile(`Build ID: ([0-9a-f]+)`)

// readelfID returns the GNU build-id readelf -n prints for file, "" when
// it prints none: the reference our reader is checked against.
func readelfID(t testing.TB, file string) string {
	t.Helper()
	needTool(t, "readelf")
	b, err := exec.Command("readelf", "-n", "-W", file).CombinedOutput()
	if err != nil {
		t.Fatalf("readelf -n %s: %v\n%s", file, err, b)
	}
	m := readelfBuildID.FindSubmatch(b)
	if m == nil {
		return ""
	}
	return string(m[1])
}

// readelfGoID returns the Go build-id that readelf prints (as the raw
// description of the "Go" note), "" when there is none.
func readelfGoID(t testing.TB, file string) string {
	t.Helper()
	b, err := exec.Command("readelf", "-p", ".note.go.buildid", "-W", file).CombinedOutput()
	if err != nil {
		return ""
	}
	// readelf -p prints printable runs of the section; the build-id is the
	// run that contains slashes.
	for _, line := range strings.Split(string(b), "\n") {
		if i := strings.Index(line, "]"); i >= 0 && strings.Contains(line, "/") {
			return strings.TrimSpace(line[i+1:])
		}
	}
	return ""
}
