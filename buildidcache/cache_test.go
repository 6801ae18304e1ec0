package buildidcache

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/perfcheck/perfcheck/buildid"
	"github.com/perfcheck/perfcheck/dso"
	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// perfCmd runs real perf with HOME=home, so that its cache is home/.debug.
var perfCmd = fixtures.PerfHome

// tree lists every path under dir with its link target, for comparing
// layouts; perf's "probes" (SDT cache) files are left out.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir || d.Name() == "probes" {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		if d.Type()&fs.ModeSymlink != 0 {
			target, _ := os.Readlink(p)
			rel += " -> " + target
		}
		out = append(out, rel)
		return nil
	})
	sort.Strings(out)
	return out
}

// TestAddSameLayoutAsPerf adds one binary with real perf buildid-cache -a
// and with Cache.Add, and compares the trees.
func TestAddSameLayoutAsPerf(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	prog := buildC(t, dir, "prog", "-Wl,--build-id")
	perfHome := t.TempDir()
	perfCmd(t, perfHome, "buildid-cache", "-a", prog)
	ours := filepath.Join(t.TempDir(), ".debug")
	e, err := (&Cache{Dir: ours, DebugDirs: []string{}}).Add(prog)
	if err != nil {
		t.Fatal(err)
	}
	if !e.Added || e.Name != prog || len(e.Files) != 1 || e.Files[0] != "elf" {
		t.Errorf("entry %+v", e)
	}
	want, got := tree(t, filepath.Join(perfHome, ".debug")), tree(t, ours)
	if strings.Join(want, "\n") != strings.Join(got, "\n") {
		t.Errorf("layout differs from perf's:\nperf:\n%s\nours:\n%s", strings.Join(want, "\n"), strings.Join(got, "\n"))
	}
	// Adding again changes nothing.
	e2, err := (&Cache{Dir: ours}).Add(prog)
	if err != nil || e2.Added {
		t.Errorf("second add: %+v %v", e2, err)
	}
}

// TestPerfReadsWhatAddWrote records a program without letting perf fill
// its cache, caches the binary with Cache.Add, replaces the binary, and
// checks that perf report still names the function: perf found our entry.
func TestPerfReadsWhatAddWrote(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	prog := buildC(t, home, "prog", "-Wl,--build-id")
	id := mustID(t, prog)
	data := filepath.Join(home, "perf.data")
	perfCmd(t, home, "record", "-q", "-e", "cpu-clock", "--no-buildid-cache", "-o", data, "--", prog, "1")
	if _, err := os.Stat(filepath.Join(home, ".debug", ".build-id")); err == nil {
		t.Fatal("perf filled its cache despite --no-buildid-cache")
	}
	cache := &Cache{Dir: filepath.Join(home, ".debug")}
	if _, err := cache.Add(prog); err != nil {
		t.Fatal(err)
	}
	out := perfCmd(t, home, "buildid-cache", "-l")
	if !strings.Contains(out, id.BuildID.String()+" "+prog) {
		t.Errorf("perf buildid-cache -l does not list %s %s:\n%s", id.BuildID, prog, out)
	}
	// Replace the binary with another build: only the cache has the one
	// that ran.
	os.Remove(prog)
	buildC(t, home, "prog", "-Wl,--build-id", "-O2", "-DOTHER")
	report := perfCmd(t, home, "report", "-i", data, "--stdio", "--sort", "dso,sym")
	if !strings.Contains(report, "spin") {
		t.Errorf("perf report does not find spin through our cache entry:\n%s", report)
	}
	// The control: without our entry perf cannot name it.
	if err := os.RemoveAll(filepath.Join(home, ".debug")); err != nil {
		t.Fatal(err)
	}
	report = perfCmd(t, home, "report", "-i", data, "--stdio", "--sort", "dso,sym")
	if strings.Contains(report, "] spin") {
		t.Errorf("perf report names spin without the cache; the test proves nothing:\n%s", report)
	}
}

// TestListPerfWritten lists a cache that perf record filled, and compares
// with perf buildid-cache -l.
func TestListPerfWritten(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	prog := buildC(t, home, "prog", "-Wl,--build-id")
	perfRecord(t, home, prog, "1")
	entries, err := (&Cache{Dir: filepath.Join(home, ".debug")}).List()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Entry{}
	for _, e := range entries {
		got[e.BuildID.String()+" "+e.Name] = e
	}
	out := perfCmd(t, home, "buildid-cache", "-l")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, l := range lines {
		if _, ok := got[l]; !ok {
			t.Errorf("perf lists %q, List does not; List: %v", l, entries)
		}
	}
	if len(lines) == 0 || len(entries) < len(lines) {
		t.Errorf("List has %d entries, perf lists %d", len(entries), len(lines))
	}
	for _, e := range entries {
		if e.Size <= 0 || e.LastUsed.IsZero() || len(e.Files) == 0 {
			t.Errorf("entry %+v", e)
		}
		if e.Name == "[kernel.kallsyms]" && e.Files[0] != "kallsyms" {
			t.Errorf("kernel entry %+v", e)
		}
	}
}

func TestAddKernelAndVDSO(t *testing.T) {
	t.Parallel()
	c := &Cache{Dir: t.TempDir()}
	r := New(Options{BuildIDDir: c.Dir, DebugDirs: []string{}, DebuginfodURLs: []string{}, DebuginfodCache: t.TempDir()})
	if e, err := c.AddKernel(); err == nil {
		res, err := r.Resolve(context.Background(), Query{BuildID: e.BuildID, Kind: dso.Kernel})
		if err != nil || res.Identity.Locator != "perf-cache" || res.Identity.Role != "kallsyms" {
			t.Errorf("kernel: %+v %v", res, err)
		}
	}
	if e, err := c.AddVDSO(); err == nil {
		res, err := r.Resolve(context.Background(), Query{BuildID: e.BuildID, Kind: dso.VDSO})
		if err != nil || res.Identity.Locator != "perf-cache" || res.Identity.Role != "vdso" {
			t.Errorf("vdso: %+v %v", res, err)
		}
		if !strings.HasSuffix(e.Dir, "/[vdso]/"+e.BuildID.String()) {
			t.Errorf("vdso entry dir %s", e.Dir)
		}
	}
}

// TestAddHostileNames feeds names a crafted perf.data could hold; none may
// write outside the cache, and a symlink planted in the cache must not be
// followed out of it.
func TestAddHostileNames(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	prog := buildC(t, dir, "prog", "-Wl,--build-id")
	base := t.TempDir()
	cacheDir := filepath.Join(base, "cache")
	outside := filepath.Join(base, "outside")
	os.MkdirAll(outside, 0o755)
	c := &Cache{Dir: cacheDir, DebugDirs: []string{}}
	for _, name := range []string{
		"", "relative/path", "../../outside/x", "/../../outside/x", "/a/../../outside/x",
		"/usr/bin/\x00x", "/.build-id/ab/cdef", "/", "//", "/.", "[a/b]", "[..]/x",
		strings.Repeat("/a", 3000),
	} {
		if _, err := c.AddFile(prog, name, nil); !errors.Is(err, ErrUnsafePath) {
			t.Errorf("AddFile(%q): err = %v, want ErrUnsafePath", name, err)
		}
	}
	// Planted symlinks inside the cache that point outside it.
	os.MkdirAll(cacheDir, 0o755)
	if err := os.Symlink(outside, filepath.Join(cacheDir, "usr")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddFile(prog, "/usr/bin/app", nil); err == nil {
		t.Error("AddFile followed a symlink out of the cache")
	}
	os.MkdirAll(filepath.Join(cacheDir, "ok"), 0o755)
	id := mustID(t, prog)
	h := id.BuildID.String()
	if err := os.Symlink(outside, filepath.Join(cacheDir, ".build-id")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddFile(prog, "/ok/app", nil); err == nil {
		t.Error("AddFile wrote its link through a planted .build-id symlink")
	}
	ents, _ := os.ReadDir(outside)
	if len(ents) != 0 {
		t.Errorf("something was written outside the cache: %v", ents)
	}
	// A link whose target leads outside is not listed and not pruned
	// through.
	os.Remove(filepath.Join(cacheDir, ".build-id"))
	os.MkdirAll(filepath.Join(cacheDir, ".build-id", h[:2]), 0o755)
	os.WriteFile(filepath.Join(outside, "victim"), []byte("keep"), 0o644)
	os.Symlink("../../../outside", filepath.Join(cacheDir, ".build-id", h[:2], h[2:]))
	list, err := c.List()
	if err != nil || len(list) != 0 {
		t.Errorf("List = %v, %v; want nothing", list, err)
	}
	if _, err := c.Prune(1, 0, time.Now(), false); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(filepath.Join(outside, "victim")); err != nil {
		t.Errorf("prune removed a file outside the cache: %v", err)
	}
}

func TestAddMismatchAndNoBuildID(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	prog := buildC(t, dir, "prog", "-Wl,--build-id")
	none := buildC(t, dir, "none", "-Wl,--build-id=none")
	c := &Cache{Dir: filepath.Join(dir, "cache")}
	if _, err := c.AddFile(prog, "/usr/bin/prog", buildid.ID{1, 2, 3, 4}); !errors.Is(err, ErrMismatch) {
		t.Errorf("mismatch: err = %v", err)
	}
	if _, err := c.Add(none); !errors.Is(err, ErrNoBuildID) {
		t.Errorf("no build-id: err = %v", err)
	}
	if l, _ := c.List(); len(l) != 0 {
		t.Errorf("cache not empty: %v", l)
	}
}

func TestAddHardLink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	prog := buildC(t, dir, "prog", "-Wl,--build-id")
	c := &Cache{Dir: filepath.Join(dir, "cache"), HardLink: true, DebugDirs: []string{}}
	e, err := c.Add(prog)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := os.Stat(prog)
	b, _ := os.Stat(filepath.Join(e.Dir, "elf"))
	if !os.SameFile(a, b) {
		t.Error("HardLink did not link")
	}
	c2 := &Cache{Dir: filepath.Join(dir, "cache2"), DebugDirs: []string{}}
	e2, err := c2.Add(prog)
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := os.Stat(filepath.Join(e2.Dir, "elf"))
	if os.SameFile(a, b2) || b2.Mode().Perm() != a.Mode().Perm() {
		t.Errorf("copy: same file %v, mode %v want %v", os.SameFile(a, b2), b2.Mode(), a.Mode())
	}
}

// TestAddWithDebug stores the separate debug file next to the binary, as
// perf does, and the resolver then prefers it for symbols.
func TestAddWithDebug(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin, dbg := debugPair(t, dir)
	id := mustID(t, bin)
	h := id.BuildID.String()
	dd := filepath.Join(dir, "debugdir")
	os.MkdirAll(filepath.Join(dd, ".build-id", h[:2]), 0o755)
	b, _ := os.ReadFile(dbg)
	os.WriteFile(filepath.Join(dd, ".build-id", h[:2], h[2:]+".debug"), b, 0o644)
	c := &Cache{Dir: filepath.Join(dir, "cache"), DebugDirs: []string{dd}}
	e, err := c.Add(bin)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(e.Files, ",") != "debug,elf" {
		t.Errorf("files %v", e.Files)
	}
	res, err := New(Options{BuildIDDir: c.Dir, DebugDirs: []string{}, DebuginfodURLs: []string{}, DebuginfodCache: t.TempDir()}).
		Resolve(context.Background(), Query{BuildID: id.BuildID})
	if err != nil {
		t.Fatal(err)
	}
	if res.Identity.Role != "elf" || res.Best.Role != "debug" || res.Best.Debug != DebugDWARF {
		t.Errorf("identity %+v best %+v", res.Identity, res.Best)
	}
}

func TestPrune(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := &Cache{Dir: filepath.Join(dir, "cache"), DebugDirs: []string{}}
	now := time.Now()
	var entries []*Entry
	for i, name := range []string{"a", "b", "c", "d"} {
		prog := buildC(t, dir, name, "-Wl,--build-id", "-DTAG=\""+name+"\"")
		e, err := c.Add(prog)
		if err != nil {
			t.Fatal(err)
		}
		// a is the least recently used, d the most.
		at := now.Add(-time.Duration(10-i) * 24 * time.Hour)
		if err := os.Chtimes(filepath.Join(e.Dir, "elf"), at, at); err != nil {
			t.Fatal(err)
		}
		entries = append(entries, e)
	}
	// A write in progress (fresh temp file) and a stale one.
	fresh := filepath.Join(entries[3].Dir, ".elf"+tmpMarker+"fresh")
	stale := filepath.Join(entries[3].Dir, ".elf"+tmpMarker+"stale")
	os.WriteFile(fresh, []byte("x"), 0o644)
	os.WriteFile(stale, []byte("x"), 0o644)
	old := now.Add(-2 * time.Hour)
	os.Chtimes(stale, old, old)

	list, _ := c.List()
	var total int64
	for _, e := range list {
		total += e.Size
	}
	one := list[0].Size
	// The write in progress counts in the cache's size (the stale one
	// goes anyway).
	st, err := os.Stat(fresh)
	if err != nil {
		t.Fatal(err)
	}
	total += fixtures.DiskBytes(st)

	// Dry run: nothing removed.
	rep, err := c.Prune(total-one, 0, now, true)
	if err != nil || len(rep.Removed) != 1 {
		t.Fatalf("dry run: %+v %v", rep, err)
	}
	if l, _ := c.List(); len(l) != 4 {
		t.Fatalf("dry run removed entries")
	}
	// Size: the oldest one goes.
	rep, err = c.Prune(total-one, 0, now, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Removed) != 1 || rep.Removed[0].Name != entries[0].Name || rep.Kept != 3 || rep.StaleTemps != 1 {
		t.Errorf("prune by size: %+v", rep)
	}
	if _, err := os.Stat(entries[0].Dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("entry dir still there: %v", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("a fresh temporary file was removed: %v", err)
	}
	if _, err := os.Stat(stale); err == nil {
		t.Error("a stale temporary file was kept")
	}
	// Age: older than 7.5 days removes b and c (9 and 8 days old).
	rep, err = c.Prune(NoSizeLimit, 180*time.Hour, now, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Removed) != 2 || rep.Kept != 1 {
		t.Errorf("prune by age: %+v", rep)
	}
	l, _ := c.List()
	if len(l) != 1 || l[0].Name != entries[3].Name {
		t.Errorf("left: %+v", l)
	}
	// perf agrees about what is left.
	if _, err := exec.LookPath("perf"); err == nil {
		out := perfCmd(t, t.TempDir(), "--buildid-dir", c.Dir, "buildid-cache", "-l")
		if strings.TrimSpace(out) != l[0].BuildID.String()+" "+l[0].Name {
			t.Errorf("perf buildid-cache -l after prune:\n%s", out)
		}
	}
}

// TestOldStyleEntries builds the layout perf before 3.x wrote (the
// .build-id link is itself the binary, kallsyms a file named by the
// build-id) by hand, since no perf here writes it any more.
func TestOldStyleEntries(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	prog := buildC(t, dir, "prog", "-Wl,--build-id")
	id := mustID(t, prog).BuildID
	h := id.String()
	cache := filepath.Join(dir, "cache")
	os.MkdirAll(filepath.Join(cache, ".build-id", h[:2]), 0o755)
	b, _ := os.ReadFile(prog)
	os.WriteFile(filepath.Join(cache, ".build-id", h[:2], h[2:]), b, 0o755)
	kid := buildid.ID{0xaa, 0xbb, 0xcc, 0xdd, 1, 2, 3, 4}
	os.MkdirAll(filepath.Join(cache, "[kernel.kallsyms]"), 0o755)
	os.WriteFile(filepath.Join(cache, "[kernel.kallsyms]", kid.String()), []byte("ffffffff81000000 T _text\n"), 0o644)

	r := New(Options{BuildIDDir: cache, DebugDirs: []string{}, DebuginfodURLs: []string{}, DebuginfodCache: t.TempDir()})
	res, err := r.Resolve(context.Background(), Query{BuildID: id})
	if err != nil || res.Identity.Path != filepath.Join(cache, ".build-id", h[:2], h[2:]) {
		t.Errorf("old-style binary: %+v %v", res, err)
	}
	res, err = r.Resolve(context.Background(), Query{BuildID: kid, Kind: dso.Kernel, Path: "[kernel.kallsyms]"})
	if err != nil || res.Identity.Role != "kallsyms" || res.Identity.Verified != "cache-key" {
		t.Errorf("old-style kallsyms: %+v %v", res, err)
	}
	// A kallsyms file is not accepted for a user binary's query.
	if _, err := r.Resolve(context.Background(), Query{BuildID: kid, Path: "/usr/bin/x"}); err == nil {
		t.Error("kallsyms accepted for a user binary")
	}
	list, err := (&Cache{Dir: cache}).List()
	if err != nil || len(list) != 1 || !list[0].OldStyle || list[0].BuildID.String() != h {
		t.Errorf("List = %+v %v", list, err)
	}
}

// TestHardLinkOverwrittenInPlace shows why copying is the default: a
// binary overwritten in place changes a hard-linked cache entry too. The
// resolver then rejects the entry instead of trusting it, and adding the
// original again repairs the entry.
func TestHardLinkOverwrittenInPlace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	prog := buildC(t, dir, "prog", "-Wl,--build-id")
	orig := filepath.Join(dir, "prog.orig")
	b, _ := os.ReadFile(prog)
	os.WriteFile(orig, b, 0o755)
	idA := mustID(t, prog).BuildID
	other := buildC(t, dir, "other", "-Wl,--build-id", "-O2", `-DTAG="b"`)
	c := &Cache{Dir: filepath.Join(dir, "cache"), HardLink: true, DebugDirs: []string{}}
	if _, err := c.Add(prog); err != nil {
		t.Fatal(err)
	}
	nb, _ := os.ReadFile(other)
	if err := os.WriteFile(prog, nb, 0o755); err != nil { // same inode, new bytes
		t.Fatal(err)
	}
	r := New(Options{BuildIDDir: c.Dir, DebugDirs: []string{}, DebuginfodURLs: []string{}, DebuginfodCache: t.TempDir()})
	_, err := r.Resolve(context.Background(), Query{BuildID: idA})
	var nf *NotFoundError
	if !errors.As(err, &nf) || len(nf.Rejected) == 0 || !errors.Is(nf.Rejected[0].Err, ErrMismatch) {
		t.Fatalf("corrupted entry: err = %v", err)
	}
	if _, ok := c.Has(idA); ok {
		t.Error("Has trusts the corrupted entry")
	}
	e, err := c.Add(orig)
	if err != nil || !e.Added {
		t.Fatalf("repair: %+v %v", e, err)
	}
	if res, err := r.Resolve(context.Background(), Query{BuildID: idA}); err != nil || res.Identity.Locator != "perf-cache" {
		t.Errorf("after repair: %+v %v", res, err)
	}
}

// TestFIFOPathDoesNotHang puts a FIFO where a recorded binary should be:
// opening it for reading would block forever.
func TestFIFOPathDoesNotHang(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "app")
	fixtures.Mkfifo(t, fifo)
	done := make(chan error, 1)
	go func() {
		_, err := New(Options{BuildIDDir: "-", DebugDirs: []string{dir}, DebuginfodURLs: []string{}, DebuginfodCache: t.TempDir()}).
			Resolve(context.Background(), Query{BuildID: buildid.ID{1, 2, 3, 4}, Path: fifo})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("err = %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Resolve hangs on a FIFO")
	}
	if _, err := (&Cache{Dir: filepath.Join(dir, "c")}).AddFile(fifo, "/app", nil); err == nil {
		t.Error("AddFile accepted a FIFO")
	}
}

// TestPaddedBuildID looks up an 8-byte build-id the way perf before 5.9
// recorded it: zero-padded to 20 bytes. The cache stores it under its real
// 16 hex digits, as perf 6.x does.
func TestPaddedBuildID(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	prog := buildC(t, dir, "prog", "-Wl,--build-id=0x0102030405060708")
	c := &Cache{Dir: filepath.Join(dir, "cache"), DebugDirs: []string{}}
	if _, err := c.Add(prog); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(c.Dir, ".build-id", "01", "02030405060708")); err != nil {
		t.Fatal(err)
	}
	padded := buildid.ID{1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	if _, ok := c.Has(padded); !ok {
		t.Error("Has(padded) = false")
	}
	r := New(Options{BuildIDDir: c.Dir, DebugDirs: []string{}, DebuginfodURLs: []string{}, DebuginfodCache: t.TempDir()})
	res, err := r.Resolve(context.Background(), Query{BuildID: padded, Path: "/gone"})
	if err != nil || res.Identity.Locator != "perf-cache" {
		t.Errorf("padded lookup: %+v %v", res, err)
	}
}

// TestPlantedLinks plants .build-id links whose targets stay inside the
// cache but are not entry directories (the .build-id tree itself, a
// fan-out directory, another entry's parent, a directory named by another
// build-id). List must not show them and Prune must not remove what they
// name: before the fix, the link to ../../.build-id was listed as "/." of
// size 0, pruned first, and Prune wiped every link.
func TestPlantedLinks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := &Cache{Dir: filepath.Join(dir, "cache"), DebugDirs: []string{}}
	prog := buildC(t, dir, "prog", "-Wl,--build-id")
	good, err := c.Add(prog)
	if err != nil {
		t.Fatal(err)
	}
	other := buildC(t, dir, "other", "-Wl,--build-id", "-DTAG=\"o\"")
	oe, err := c.Add(other)
	if err != nil {
		t.Fatal(err)
	}
	h := good.BuildID.String()
	oh := oe.BuildID.String()
	parent, _ := filepath.Rel(c.Dir, filepath.Dir(good.Dir))
	plant := map[string]string{
		"abcdef0011": "../../.build-id",
		"abcdef0022": "../../.build-id/" + h[:2],
		"abcdef0033": "../../" + filepath.ToSlash(parent),
		"abcdef0044": "../../" + filepath.ToSlash(parent) + "/" + h,
		"abcdef0055": "../.." + filepath.ToSlash(strings.TrimPrefix(oe.Name, "")) + "/" + oh,
		"abcdef0066": "..",
	}
	for id, target := range plant {
		p := filepath.Join(c.Dir, ".build-id", id[:2], id[2:])
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	list, err := c.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 {
		t.Errorf("List shows planted links: %+v", list)
	}
	for _, e := range list {
		if e.Name == "/." || e.Name == "/" || e.Size == 0 {
			t.Errorf("planted entry listed: %+v", e)
		}
	}
	if _, ok := c.Has(buildid.ID{0xab, 0xcd, 0xef, 0, 0x11}); ok {
		t.Error("Has accepts a planted link")
	}
	// Prune to one byte: every real entry may go, but the .build-id tree
	// of the other entries must not be wiped through a planted link, and
	// nothing outside an entry directory goes.
	if _, err := c.Prune(1, 0, time.Now(), false); err != nil {
		t.Fatal(err)
	}
	for id := range plant {
		if _, err := os.Lstat(filepath.Join(c.Dir, ".build-id", id[:2], id[2:])); err != nil {
			t.Errorf("planted link %s removed (Prune took it for an entry): %v", id, err)
		}
	}
	if _, err := os.Stat(filepath.Join(c.Dir, ".build-id")); err != nil {
		t.Errorf(".build-id removed: %v", err)
	}
	if l, _ := c.List(); len(l) != 0 {
		t.Errorf("after prune: %+v", l)
	}
}

// TestAddHardLinkSymlinkedSource: with HardLink, a source that is a
// symlink (as debug directories' .build-id files are) is linked through
// to its target, not as the symlink itself.
func TestAddHardLinkSymlinkedSource(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	prog := buildC(t, dir, "prog", "-Wl,--build-id")
	sym := filepath.Join(dir, "prog-link")
	if err := os.Symlink(prog, sym); err != nil {
		t.Fatal(err)
	}
	c := &Cache{Dir: filepath.Join(dir, "cache"), HardLink: true, DebugDirs: []string{}}
	e, err := c.AddFile(sym, "/usr/bin/prog", nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Lstat(filepath.Join(e.Dir, "elf"))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := os.Stat(prog)
	if !st.Mode().IsRegular() || !os.SameFile(a, st) {
		t.Errorf("elf is %v, same file as the target: %v", st.Mode(), os.SameFile(a, st))
	}
}

// TestAddControlCharsAndPlantedLinks: names with control characters are
// refused, and a write stopped by a planted symlink says ErrUnsafePath and
// names the link.
func TestAddControlCharsAndPlantedLinks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	prog := buildC(t, dir, "prog", "-Wl,--build-id")
	cacheDir := filepath.Join(dir, "cache")
	c := &Cache{Dir: cacheDir, DebugDirs: []string{}}
	for _, name := range []string{"/usr/bin/a\nb", "/usr/bin/\tx", "/usr/bin/\x1b[31mx", "/usr/bin/x\x7f", "[vd\nso]"} {
		if _, err := c.AddFile(prog, name, nil); !errors.Is(err, ErrUnsafePath) {
			t.Errorf("AddFile(%q): err = %v, want ErrUnsafePath", name, err)
		}
	}
	outside := filepath.Join(dir, "outside")
	os.MkdirAll(outside, 0o755)
	os.MkdirAll(cacheDir, 0o755)
	link := filepath.Join(cacheDir, "usr")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	_, err := c.AddFile(prog, "/usr/bin/app", nil)
	if !errors.Is(err, ErrUnsafePath) || !strings.Contains(err.Error(), link) {
		t.Errorf("planted %s: err = %v", link, err)
	}
	bid := filepath.Join(cacheDir, ".build-id")
	if err := os.Symlink(outside, bid); err != nil {
		t.Fatal(err)
	}
	_, err = c.AddFile(prog, "/ok/app", nil)
	if !errors.Is(err, ErrUnsafePath) || !strings.Contains(err.Error(), bid) {
		t.Errorf("planted %s: err = %v", bid, err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("written outside the cache: %v", ents)
	}
}

// halfReader reads until half of size has been copied, then calls at
// (while the half-written temporary file is on disk) and fails.
type halfReader struct {
	r       io.Reader
	n, size int64
	at      func()
}

func (h *halfReader) Read(b []byte) (int, error) {
	if h.n >= h.size/2 {
		h.at()
		return 0, errors.New("injected fault halfway through the copy")
	}
	b = b[:min(int64(len(b)), h.size/2-h.n)]
	n, err := h.r.Read(b)
	h.n += int64(n)
	return n, err
}

// TestAddInterruptedCopy fails a cache copy halfway. While the half file
// is on disk, and after the failure, there is no elf and no .build-id
// link, and List, Has and Resolve see nothing; a later Add succeeds.
func TestAddInterruptedCopy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	prog := buildC(t, dir, "prog", "-Wl,--build-id")
	id := mustID(t, prog).BuildID
	st, _ := os.Stat(prog)
	c := &Cache{Dir: filepath.Join(dir, "cache"), DebugDirs: []string{}}
	entryDir := filepath.Join(c.Dir, strings.TrimPrefix(prog, "/"), id.String())
	link := filepath.Join(c.Dir, ".build-id", id.String()[:2], id.String()[2:])
	nothing := func(when string) {
		t.Helper()
		if _, err := os.Lstat(filepath.Join(entryDir, "elf")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: elf exists: %v", when, err)
		}
		if _, err := os.Lstat(link); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: link exists: %v", when, err)
		}
		if l, err := c.List(); err != nil || len(l) != 0 {
			t.Errorf("%s: List = %+v, %v", when, l, err)
		}
		if _, ok := c.Has(id); ok {
			t.Errorf("%s: Has", when)
		}
		opts := noNet(t)
		opts.BuildIDDir = c.Dir
		if res, err := New(opts).Resolve(context.Background(), Query{BuildID: id}); err == nil {
			t.Errorf("%s: resolved to %+v", when, res.Identity)
		}
	}
	sawHalf := false
	c.copyFault = func(r io.Reader) io.Reader {
		return &halfReader{r: r, size: st.Size(), at: func() {
			ents, _ := os.ReadDir(entryDir)
			for _, e := range ents {
				if info, _ := e.Info(); strings.Contains(e.Name(), tmpMarker) && info.Size() == st.Size()/2 {
					sawHalf = true
				}
			}
			nothing("mid-copy")
		}}
	}
	if _, err := c.AddFile(prog, prog, nil); err == nil || !strings.Contains(err.Error(), "injected fault") {
		t.Fatalf("AddFile: %v", err)
	}
	if !sawHalf {
		t.Error("the half-written temporary file was not on disk during the copy")
	}
	nothing("after the failure")
	if ents, _ := os.ReadDir(entryDir); len(ents) != 0 {
		t.Errorf("left behind: %v", ents)
	}
	c.copyFault = nil
	if e, err := c.AddFile(prog, prog, nil); err != nil || !e.Added {
		t.Errorf("AddFile after the fault: %+v %v", e, err)
	}
}
