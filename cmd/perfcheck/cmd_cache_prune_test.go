package main

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// bicAsNobody runs the test named name as the user nobody when we are
// root, in a copy of the test binary nobody can execute, and reports
// whether the caller should run the test's body (true: it is that child,
// or not root) or return (false: the child ran it and passed). Root reads
// a directory whatever its mode, so permission tests need another user.
func bicAsNobody(t *testing.T, name string) bool {
	t.Helper()
	if os.Getenv("PERFCHECK_TEST_NOBODY") == name || os.Getuid() != 0 {
		return true
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for d := dir; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		os.Chmod(d, 0o755) // t.TempDir makes 0700 directories
	}
	bin := filepath.Join(dir, "test.bin")
	src, err := os.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	dst.Close()
	cmd := exec.Command(bin, "-test.run=^"+name+"$", "-test.v", "-test.count=1")
	cmd.Dir = "/"
	cmd.Env = append(os.Environ(), "PERFCHECK_TEST_NOBODY="+name, "TMPDIR=/tmp", "HOME=/nonexistent")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if !strings.Contains(string(out), "=== RUN   "+name) {
		// The copy never ran (a noexec /tmp, no user nobody): nothing
		// was tested, which is a skip, not a pass.
		t.Skipf("cannot run the test binary as nobody: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "--- SKIP: "+name) {
		t.Skipf("as nobody: %s", out)
	}
	if err != nil || !strings.Contains(string(out), "--- PASS: "+name) {
		t.Fatalf("%s as nobody: %v\n%s", name, err, out)
	}
	t.Logf("ran as nobody:\n%s", out)
	return false
}

// TestCachePruneUnreadableLinks: when a .build-id fan-out directory
// cannot be listed, the entries behind it cannot be counted and look
// orphaned; cache prune removes no orphan, says both on stderr (and in
// --json's warnings) and exits 1, and the entry is still there. Run as
// nobody. (The entry here is fresh, so even the old code kept it; the
// deletion itself is shown by buildidcache's
// TestPruneUnreadableFanKeepsEntries, with a clock two hours on.)
func TestCachePruneUnreadableLinks(t *testing.T) {
	if !bicAsNobody(t, "TestCachePruneUnreadableLinks") {
		return
	}
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	a := bicBuildC(t, dir, "a", "-Wl,--build-id", `-DTAG="a"`)
	if code, out, errb := bicRun(t, "cache", "add", "--buildid-dir", cache, a); code != exitOK {
		t.Fatalf("add: %d %s %s", code, out, errb)
	}
	tops, err := os.ReadDir(filepath.Join(cache, ".build-id"))
	if err != nil || len(tops) != 1 {
		t.Fatalf(".build-id: %v %v", tops, err)
	}
	fan := filepath.Join(cache, ".build-id", tops[0].Name())
	if err := os.Chmod(fan, 0o311); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(fan, 0o755)
	code, out, errb := bicRun(t, "cache", "prune", "--buildid-dir", cache, "--max-size", "1T")
	if code != exitProblems || !strings.Contains(errb, "warning: orphaned entries not looked for") ||
		!strings.Contains(errb, "not counted") || strings.Contains(out, "orphan") {
		t.Errorf("prune: exit %d, stdout %q, stderr %q; want exit 1, a warning, no orphan", code, out, errb)
	}
	code, out, _ = bicRun(t, "cache", "prune", "--buildid-dir", cache, "--max-size", "1T", "--json")
	var rep struct {
		Orphans  []cacheEntryJSON `json:"orphans"`
		Warnings []string         `json:"warnings"`
	}
	if code != exitProblems || json.Unmarshal([]byte(out), &rep) != nil || len(rep.Orphans) != 0 || len(rep.Warnings) != 2 {
		t.Errorf("prune --json: exit %d, %s", code, out)
	}
	os.Chmod(fan, 0o755)
	code, out, _ = bicRun(t, "cache", "list", "--buildid-dir", cache)
	if code != exitOK || !strings.Contains(out, a) {
		t.Errorf("entry gone after prune: %d %q", code, out)
	}
}
