package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// TestCachePruneUnreadableLinks: when a .build-id fan-out directory
// cannot be listed, the entries behind it cannot be counted and look
// orphaned; cache prune removes no orphan, says both on stderr (and in
// --json's warnings) and exits 1, and the entry is still there. Run as
// nobody. (The entry here is fresh, so even the old code kept it; the
// deletion itself is shown by buildidcache's
// TestPruneUnreadableFanKeepsEntries, with a clock two hours on.)
func TestCachePruneUnreadableLinks(t *testing.T) {
	t.Parallel()
	if !fixtures.AsNobody(t, "TestCachePruneUnreadableLinks") {
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
