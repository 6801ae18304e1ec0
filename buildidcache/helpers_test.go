package buildidcache

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/perfcheck/perfcheck/buildid"
	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// The real tools and the C program these tests drive are shared with
// cmd/perfcheck's tests (internal/fixtures).
var (
	needTool = fixtures.NeedTool
	buildC   = fixtures.BuildC
)

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

// addRecorded is AddRecordedMapping without a recorded device and inode,
// as most tests call it. (It was exported, but nothing outside the tests
// used it: perfcheck cache fill passes the recorded identity when there is
// one, nil otherwise.)
func (c *Cache) addRecorded(r *Resolver, name string, pids []int, want buildid.ID) (*Entry, error) {
	return c.AddRecordedMapping(r, name, pids, want, nil)
}
