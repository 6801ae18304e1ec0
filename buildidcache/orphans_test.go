package buildidcache

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// TestPruneOrphans: entry directories that no .build-id link leads to are
// pruned whatever the size and age limits, and nothing else is: not a
// linked entry, not perf's kallsyms directory (read by its path), not a
// cached path whose component merely looks like a build-id, not a
// directory holding files perf does not write, not one written within the
// hour (an add in progress), not what a planted symlink leads to.
func TestPruneOrphans(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := &Cache{Dir: filepath.Join(dir, "cache"), DebugDirs: []string{}}
	progA := buildC(t, dir, "a", "-Wl,--build-id", "-DTAG=\"a\"")
	progB := buildC(t, dir, "b", "-Wl,--build-id", "-DTAG=\"b\"")
	progC := buildC(t, dir, "c", "-Wl,--build-id", "-DTAG=\"c\"")
	linked, err := c.Add(progA)
	if err != nil {
		t.Fatal(err)
	}

	// Orphan 1: an entry whose link is gone (an interrupted removal).
	unlinked, err := c.Add(progB)
	if err != nil {
		t.Fatal(err)
	}
	hb := unlinked.BuildID.String()
	if err := os.Remove(filepath.Join(c.Dir, ".build-id", hb[:2], hb[2:])); err != nil {
		t.Fatal(err)
	}
	wantOrphans := []string{unlinked.Dir}

	// Orphan 2, made by real perf: the same binary cached under a second
	// name. The link keeps the first name (build_id_cache__add), so the
	// second entry directory is unreachable from the start.
	if _, err := exec.LookPath("perf"); err == nil {
		second := filepath.Join(dir, "second", "a")
		os.MkdirAll(filepath.Dir(second), 0o755)
		fixtures.CopyFile(t, progA, second)
		perfCmd(t, t.TempDir(), "--buildid-dir", c.Dir, "buildid-cache", "-a", second)
		real, _ := filepath.EvalSymlinks(second)
		perfOrphan := filepath.Join(c.Dir, real, linked.BuildID.String())
		if _, err := os.Stat(filepath.Join(perfOrphan, "elf")); err != nil {
			t.Fatalf("perf buildid-cache -a under a second name left no entry directory: %v", err)
		}
		wantOrphans = append(wantOrphans, perfOrphan)
	} else {
		t.Log("perf not installed: only hand-made orphans")
	}

	// Kept: perf's kallsyms directory has no link and is read by its path.
	kallsyms := filepath.Join(c.Dir, "[kernel.kallsyms]", strings.Repeat("ab", 20))
	writeFile(t, filepath.Join(kallsyms, "kallsyms"), "ffffffff81000000 T _text\n")
	// Kept: a cached path with a component that looks like a build-id;
	// the entry below it is linked.
	hexPath := filepath.Join(dir, "srv", strings.Repeat("cd", 20), "app")
	os.MkdirAll(filepath.Dir(hexPath), 0o755)
	fixtures.CopyFile(t, progC, hexPath)
	deep, err := c.AddFile(hexPath, hexPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Kept: an unlinked directory with a file perf never writes there.
	foreign := filepath.Join(c.Dir, "notes", strings.Repeat("ef", 20))
	writeFile(t, filepath.Join(foreign, "elf"), "x")
	writeFile(t, filepath.Join(foreign, "README"), "mine")
	// Kept: a symlink planted in the cache leading to an entry-shaped
	// directory outside it; the walk must not follow it.
	outside := filepath.Join(dir, "outside")
	outsideEntry := filepath.Join(outside, strings.Repeat("12", 20))
	writeFile(t, filepath.Join(outsideEntry, "elf"), "precious")
	if err := os.Symlink(outside, filepath.Join(c.Dir, "planted")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outsideEntry, filepath.Join(c.Dir, "planted2")); err != nil {
		t.Fatal(err)
	}

	before, _ := c.List()

	// Everything was just written: an add in progress looks like this,
	// so nothing is an orphan yet.
	rep, err := c.Prune(NoSizeLimit, 0, time.Now(), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Orphans) != 0 || len(rep.Removed) != 0 {
		t.Errorf("fresh directories taken for orphans: %+v", rep)
	}

	// Two hours later: a dry run reports the orphans and removes nothing.
	later := time.Now().Add(2 * time.Hour)
	rep, err = c.Prune(NoSizeLimit, 0, later, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := orphanDirs(rep); !slices.Equal(got, sorted(wantOrphans)) {
		t.Errorf("dry run: orphans %v, want %v", got, sorted(wantOrphans))
	}
	for _, o := range rep.Orphans {
		if o.Size == 0 || len(o.Files) == 0 || o.BuildID == nil {
			t.Errorf("orphan %+v: no size, files or build-id", o)
		}
		if _, err := os.Stat(o.Dir); err != nil {
			t.Errorf("dry run removed %s: %v", o.Dir, err)
		}
	}
	if rep.OrphanSize == 0 || len(rep.Removed) != 0 {
		t.Errorf("dry run: orphan size %d, removed %d entries", rep.OrphanSize, len(rep.Removed))
	}

	rep, err = c.Prune(NoSizeLimit, 0, later, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := orphanDirs(rep); !slices.Equal(got, sorted(wantOrphans)) {
		t.Errorf("orphans %v, want %v", got, sorted(wantOrphans))
	}
	for _, o := range wantOrphans {
		if _, err := os.Stat(o); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("orphan %s still there: %v", o, err)
		}
		// Its parents went with it, up to the first one still in use.
		if _, err := os.Stat(filepath.Dir(o)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("orphan %s: empty parent left: %v", o, err)
		}
	}
	for _, keep := range []string{
		filepath.Join(linked.Dir, "elf"),
		filepath.Join(kallsyms, "kallsyms"),
		filepath.Join(deep.Dir, "elf"),
		filepath.Join(foreign, "README"),
		filepath.Join(outsideEntry, "elf"),
	} {
		if _, err := os.Stat(keep); err != nil {
			t.Errorf("%s removed: %v", keep, err)
		}
	}
	if after, _ := c.List(); !slices.Equal(entryNames(after), entryNames(before)) {
		t.Errorf("linked entries changed: %v -> %v", entryNames(before), entryNames(after))
	}
	// perf still reads every linked entry.
	if _, err := exec.LookPath("perf"); err == nil {
		out := perfCmd(t, t.TempDir(), "--buildid-dir", c.Dir, "buildid-cache", "-l")
		for _, e := range before {
			if !strings.Contains(out, e.BuildID.String()+" "+e.Name) {
				t.Errorf("perf buildid-cache -l lost %s %s:\n%s", e.BuildID, e.Name, out)
			}
		}
	}
	// A second prune finds nothing more.
	if rep, err := c.Prune(NoSizeLimit, 0, later, false); err != nil || len(rep.Orphans) != 0 {
		t.Errorf("second prune: %+v, %v", rep, err)
	}
}

func orphanDirs(rep *PruneReport) []string {
	var out []string
	for _, o := range rep.Orphans {
		out = append(out, o.Dir)
	}
	return sorted(out)
}

func entryNames(es []Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.BuildID.String()+" "+e.Name)
	}
	return sorted(out)
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
