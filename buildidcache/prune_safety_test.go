package buildidcache

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// TestPruneUnreadableFanKeepsEntries: a .build-id fan-out directory that
// cannot be listed hides the links in it, so the entries they lead to
// look orphaned. Prune must then look for no orphans at all and say why,
// not delete a linked, reachable entry. Run as nobody (as root, a mode
// hides nothing).
func TestPruneUnreadableFanKeepsEntries(t *testing.T) {
	t.Parallel()
	if !fixtures.AsNobody(t, "TestPruneUnreadableFanKeepsEntries") {
		return
	}
	dir := t.TempDir()
	c := &Cache{Dir: filepath.Join(dir, "cache"), DebugDirs: []string{}}
	e, err := c.Add(buildC(t, dir, "a", "-Wl,--build-id", "-DTAG=\"a\""))
	if err != nil {
		t.Fatal(err)
	}
	h := e.BuildID.String()
	fan := filepath.Join(c.Dir, ".build-id", h[:2])
	if err := os.Chmod(fan, 0o311); err != nil { // searchable, not listable
		t.Fatal(err)
	}
	defer os.Chmod(fan, 0o755)
	if _, err := os.ReadDir(fan); err == nil {
		t.Fatal("the fan-out directory is still listable: the test shows nothing")
	}
	for _, dry := range []bool{true, false} {
		rep, err := c.Prune(1<<40, 0, time.Now().Add(2*time.Hour), dry)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Orphans) != 0 {
			t.Errorf("dry run %v: linked entries taken for orphans: %+v", dry, rep.Orphans)
		}
		if w := strings.Join(rep.Warnings, "\n"); len(rep.Warnings) != 2 || !strings.Contains(w, "orphaned entries not looked for") ||
			!strings.Contains(w, "entries linked from .build-id/"+h[:2]+" not counted") {
			t.Errorf("dry run %v: warnings %q, want: entries behind %s not counted, orphans not looked for", dry, rep.Warnings, fan)
		}
	}
	if _, err := os.Stat(filepath.Join(e.Dir, "elf")); err != nil {
		t.Errorf("a linked, reachable entry was deleted as an orphan: %v", err)
	}
	os.Chmod(fan, 0o755)
	if _, ok := c.Has(e.BuildID); !ok {
		t.Errorf("entry no longer found by build-id")
	}
}

// TestPruneWithoutBuildIDDirRemovesNothing: with no .build-id directory
// no entry is linked, so every entry-shaped directory would look
// orphaned (a cache whose links were lost, or a --buildid-dir that is not
// perf's cache). Prune removes nothing there.
func TestPruneWithoutBuildIDDirRemovesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := &Cache{Dir: filepath.Join(dir, "cache"), DebugDirs: []string{}}
	e, err := c.Add(buildC(t, dir, "a", "-Wl,--build-id", "-DTAG=\"a\""))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(c.Dir, ".build-id"), filepath.Join(dir, "links-elsewhere")); err != nil {
		t.Fatal(err)
	}
	rep, err := c.Prune(1<<40, 0, time.Now().Add(2*time.Hour), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Orphans) != 0 {
		t.Errorf("orphans without a .build-id directory: %+v", rep.Orphans)
	}
	if _, err := os.Stat(filepath.Join(e.Dir, "elf")); err != nil {
		t.Errorf("entry removed: %v", err)
	}
}

// TestPruneKeepsProbesAndUserDirs: a second entry directory of a linked
// build-id that holds perf probe's SDT cache (probes), which perf probe
// reads by the named path (probe_cache__open) with no link, is not an
// orphan; nor is a directory of the user's whose name is hex but no
// build-id length (logs/2024 holding a file named debug, in a cache
// directory set to a wrong place).
func TestPruneKeepsProbesAndUserDirs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := &Cache{Dir: filepath.Join(dir, "cache"), DebugDirs: []string{}}
	e, err := c.Add(buildC(t, dir, "a", "-Wl,--build-id", "-DTAG=\"a\""))
	if err != nil {
		t.Fatal(err)
	}
	// The second name, as perf buildid-cache -a or perf probe -x of a
	// hard link to the same binary creates it.
	second := filepath.Join(c.Dir, "usr/bin/perl5.36.0", e.BuildID.String())
	writeFile(t, filepath.Join(second, "probes"), "#sdt_perl:sub__entry\n")
	writeFile(t, filepath.Join(second, "elf"), "x")
	user := filepath.Join(c.Dir, "logs", "2024")
	writeFile(t, filepath.Join(user, "debug"), "my log")
	// Still an orphan: an unlinked entry of perf's own files, named by a
	// 20-byte build-id; and one named by an 8-byte (lld fast) build-id.
	orphan := filepath.Join(c.Dir, "usr/bin/gone", strings.Repeat("ab", 20))
	writeFile(t, filepath.Join(orphan, "elf"), "old")
	short := filepath.Join(c.Dir, "usr/bin/fast", strings.Repeat("cd", 8))
	writeFile(t, filepath.Join(short, "elf"), "old")

	rep, err := c.Prune(NoSizeLimit, 0, time.Now().Add(2*time.Hour), false)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := orphanDirs(rep), sorted([]string{orphan, short}); !slices.Equal(got, want) {
		t.Errorf("orphans %v, want %v", got, want)
	}
	for _, keep := range []string{filepath.Join(second, "probes"), filepath.Join(second, "elf"), filepath.Join(user, "debug"), filepath.Join(e.Dir, "elf")} {
		if _, err := os.Stat(keep); err != nil {
			t.Errorf("%s removed: %v", keep, err)
		}
	}
	for _, gone := range []string{orphan, short} {
		if _, err := os.Stat(gone); err == nil {
			t.Errorf("orphan %s left", gone)
		}
	}
}

// TestRemoveOrphanOnlyWhatWasChecked: between the walk that examined an
// orphan and its removal, a file in it is replaced (another inode) or a
// file appears: only files still the ones examined are removed, and the
// directory stays while anything else is in it.
func TestRemoveOrphanOnlyWhatWasChecked(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, dir string)
		keep   []string
	}{
		{"replaced", func(t *testing.T, dir string) {
			// Written beside it and renamed over it, so that it is
			// another inode (a freed inode number is reused at once).
			p := filepath.Join(dir, "debug")
			writeFile(t, p+".new", "new debug file")
			if err := os.Rename(p+".new", p); err != nil {
				t.Fatal(err)
			}
		}, []string{"debug"}},
		{"added", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "notes.txt"), "mine")
		}, []string{"notes.txt"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Cache{Dir: t.TempDir(), DebugDirs: []string{}}
			os.Mkdir(filepath.Join(c.Dir, ".build-id"), 0o755)
			od := filepath.Join(c.Dir, "usr/bin/gone", strings.Repeat("ab", 20))
			writeFile(t, filepath.Join(od, "elf"), "old")
			writeFile(t, filepath.Join(od, "debug"), "old debug")
			root, err := os.OpenRoot(c.Dir)
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			linked, err := linkedDirs(root)
			if err != nil {
				t.Fatal(err)
			}
			found, err := c.orphans(root, linked, time.Now().Add(2*time.Hour))
			if err != nil || len(found) != 1 {
				t.Fatalf("orphans %+v, %v", found, err)
			}
			tc.change(t, od)
			if err := c.removeOrphan(root, found[0]); err == nil {
				t.Errorf("removeOrphan succeeded after the directory changed")
			}
			for _, k := range tc.keep {
				if _, err := root.Stat(filepath.Join("usr/bin/gone", strings.Repeat("ab", 20), k)); err != nil {
					t.Errorf("%s removed: %v", k, err)
				}
			}
		})
	}
}
