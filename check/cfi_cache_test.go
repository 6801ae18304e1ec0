package check

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/perfcheck/perfcheck/buildid"
	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/dso"
	"github.com/perfcheck/perfcheck/internal/fixtures"
	"github.com/perfcheck/perfcheck/perfdata"
)

// userFrames returns, per sample (thread and time), its user frames as
// "dso+0xoffset", leaf first.
func userFrames(t *testing.T, res *Result) map[sampleKey][]string {
	t.Helper()
	out := map[sampleKey][]string{}
	err := res.EachSample(context.Background(), func(s *Sample) error {
		var fr []string
		for _, l := range s.Stack.Locations() {
			if l.DSO.Kind == dso.File {
				fr = append(fr, dso.BaseName(l.DSO.Path)+"+0x"+strconv.FormatUint(l.Offset, 16))
			}
		}
		out[sampleKey{int32(s.TID), s.Time}] = fr
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// --call-graph dwarf after a deploy: the program is deleted and its
// library rebuilt at the same path. perf's build-id cache (filled by perf
// record itself, HOME is the test's) or a debuginfod server still holds
// the binaries that ran: the user stacks must unwind through them exactly
// as they did before the deploy. Without them, the library at the path is
// another build, its unwind tables must not be used: stacks stop at the
// library's frame, and its notes say why.
func TestRealDwarfUnwindAfterDeploy(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	lib, bin, data := w.dwarfApp()
	served := w.path("served")
	if err := os.MkdirAll(served, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{lib, bin} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(served, filepath.Base(p)), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}

	// Before the deploy, through the files at their paths.
	base := w.analyze(data, Options{Lookup: buildidcache.Options{BuildIDDir: t.TempDir()}, Replay: true, NoSymbols: true})
	want := userFrames(t, base)
	inLib := samplesIn(base, lib, true)
	through := 0 // samples with their leaf in the library and callers in the program
	for _, fr := range want {
		if len(fr) > 1 && strings.HasPrefix(fr[0], "libwork.so+") && strings.HasPrefix(fr[len(fr)-1], "app+") {
			through++
		}
	}
	if inLib == 0 || through == 0 || base.UnprovenUnwinds != 0 {
		t.Fatalf("before the deploy: %d samples in the library, %d unwound from it into the program, %d unwinds stopped",
			inLib, through, base.UnprovenUnwinds)
	}

	// The deploy.
	w.gcc(lib, libV2, "-shared", "-fPIC", "-fomit-frame-pointer")
	if err := os.Remove(bin); err != nil {
		t.Fatal(err)
	}

	same := func(name string, res *Result) {
		t.Helper()
		got := userFrames(t, res)
		if len(got) != len(want) {
			t.Errorf("%s: %d samples, %d before the deploy", name, len(got), len(want))
		}
		diff := 0
		for k, fr := range want {
			if strings.Join(got[k], " ") != strings.Join(fr, " ") {
				if diff++; diff <= 3 {
					t.Errorf("%s: tid %d time %d: %v, before the deploy %v", name, k.tid, k.time, got[k], fr)
				}
			}
		}
		if diff > 0 || res.UnprovenUnwinds != 0 {
			t.Errorf("%s: %d samples unwound otherwise than before the deploy; %d unwinds stopped", name, diff, res.UnprovenUnwinds)
		}
		for _, d := range res.DSOs {
			if len(d.Notes) != 0 {
				t.Errorf("%s: %s: notes %v", name, d.Path, d.Notes)
			}
		}
		assertNoName(t, res, "lib_new_work", "lib_new_pad")
	}

	// perf's build-id cache, which perf record filled.
	res := w.analyze(data, Options{Lookup: buildidcache.Options{BuildIDDir: w.cache()}, Replay: true})
	for _, p := range []string{lib, bin} {
		d := mustDSO(t, res, p, Verified)
		if d.Source != "perf-cache" || !strings.HasPrefix(d.FoundPath, w.cache()) {
			t.Errorf("%s: found %s (%s), want perf's cache %s", p, d.FoundPath, d.Source, w.cache())
		}
	}
	same("perf cache", res)
	assertName(t, res, "main_loop")

	// A debuginfod server, through buildidcache's Resolver, perf's cache off.
	url := fixtures.Debuginfod(t, served, mustDSO(t, res, lib, Verified).BuildID.String())
	r := buildidcache.New(buildidcache.Options{BuildIDDir: "-", DebugDirs: []string{},
		DebuginfodURLs: []string{url}, DebuginfodCache: filepath.Join(w.dir, "dcache")})
	defer r.Close()
	res = w.analyze(data, Options{Replay: true, locator: &resolverLocator{r: r}})
	for _, p := range []string{lib, bin} {
		if d := mustDSO(t, res, p, Verified); d.Source != "debuginfod" {
			t.Errorf("%s: source %q, want debuginfod", p, d.Source)
		}
	}
	same("debuginfod", res)

	// Nothing holds them: the rebuilt library at the path is not used.
	res = w.analyze(data, Options{Lookup: buildidcache.Options{BuildIDDir: t.TempDir()}, Replay: true})
	d := mustDSO(t, res, lib, Mismatch)
	mustDSO(t, res, bin, Missing)
	got := userFrames(t, res)
	stopped := uint64(0)
	for k, fr := range got {
		if len(fr) > 0 && strings.HasPrefix(fr[0], "libwork.so+") {
			if len(fr) != 1 {
				t.Errorf("tid %d time %d: unwound past the rebuilt library: %v", k.tid, k.time, fr)
			}
			stopped++
		}
	}
	// Samples whose user part starts in the library (their leaf, or the
	// user frame under a kernel leaf) stop there.
	if stopped < inLib || res.UnprovenUnwinds < stopped || d.unwindStops != stopped {
		t.Errorf("%d samples stopped at the library, %d unwinds stopped in all, %d counted at the library; %d samples have their leaf there",
			stopped, res.UnprovenUnwinds, d.unwindStops, inLib)
	}
	note := "unwinding stopped here in " + strconv.FormatUint(stopped, 10) + " samples"
	if len(d.Notes) != 1 || !strings.Contains(d.Notes[0], note) || !strings.Contains(d.Notes[0], "no binary with its build-id "+d.BuildID.String()) {
		t.Errorf("library notes %q; want one saying %q and that build-id %s was not found", d.Notes, note, d.BuildID)
	}
	var rep *DSO
	for _, r := range res.Report().DSOs {
		if r.Path == lib {
			rep = r
		}
	}
	if rep == nil || strings.Join(rep.Notes, "|") != strings.Join(d.Notes, "|") {
		t.Errorf("the report's row for the library does not carry its notes: %+v", rep)
	}
	assertNoName(t, res, "lib_new_work", "lib_new_pad")
}

// Which file may give a DSO's unwind tables, decided while reading (before
// the verdicts), on a real binary: the table's one build-id proves the
// file at the path for the inode there now; once the recording has mapped
// the path as another inode, the table's build-id (read when the recording
// ended) may describe either, so only the inode at the path now is
// unwound through; several build-ids for the path prove nothing; without
// a build-id, device and inode must match.
func TestCFIFilesIdentity(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "prog")
	buildC(t, bin, "int main(void) { return 0; }\n")
	st := statFile(bin)
	if st.BuildID == nil {
		t.Fatal("gcc gave no build-id")
	}
	mmap := func(s *session, pid int32, ino uint64) *DSO {
		s.update(mmap2Rec(pid, 0x400000, 0x1000, 0, bin, st.Maj, st.Min, ino, 0))
		return s.dsoOf(s.tracker.Lookup(uint32(pid), perfdata.CPUModeUser, 0x400000))
	}
	table := []perfdata.BuildIDEntry{{PID: -1, CPUMode: perfdata.CPUModeUser, Filename: bin, BuildID: st.BuildID}}

	s := newTestSession(t, Options{Lookup: buildidcache.Options{BuildIDDir: t.TempDir()}})
	s.addBuildIDs(table)
	now := mmap(s, 10, st.Ino)
	if paths, why := s.cfiFiles(now); why != "" || len(paths) == 0 || paths[0] != bin {
		t.Errorf("the inode at the path, with the table's build-id: %v, %q", paths, why)
	}
	old := mmap(s, 11, st.Ino+1)
	if old == now {
		t.Fatal("two inodes gave one DSO")
	}
	if _, why := s.cfiFiles(old); !strings.Contains(why, "changed during the recording") {
		t.Errorf("another inode of the path: %q", why)
	}
	if _, why := s.cfiFiles(now); why != "" {
		t.Errorf("the inode at the path now, after another was mapped: %q", why)
	}

	s = newTestSession(t, Options{Lookup: buildidcache.Options{BuildIDDir: t.TempDir()}})
	other := append(buildid.ID(nil), st.BuildID...)
	other[0] ^= 0xff
	s.addBuildIDs(append(table, perfdata.BuildIDEntry{PID: -1, CPUMode: perfdata.CPUModeUser, Filename: bin, BuildID: other}))
	if _, why := s.cfiFiles(mmap(s, 10, st.Ino)); !strings.Contains(why, "2 build-ids") {
		t.Errorf("two build-ids for the path: %q", why)
	}

	s = newTestSession(t, Options{Lookup: buildidcache.Options{BuildIDDir: t.TempDir()}})
	s.addBuildIDs([]perfdata.BuildIDEntry{{PID: -1, CPUMode: perfdata.CPUModeUser, Filename: bin, BuildID: other}})
	if _, why := s.cfiFiles(mmap(s, 10, st.Ino)); !strings.Contains(why, "no binary with its build-id "+other.String()) {
		t.Errorf("the table names another build than the file at the path: %q", why)
	}

	s = newTestSession(t, Options{Lookup: buildidcache.Options{BuildIDDir: t.TempDir()}})
	if paths, why := s.cfiFiles(mmap(s, 10, st.Ino)); why != "" || len(paths) != 1 || paths[0] != bin {
		t.Errorf("no build-id, same device and inode: %v, %q", paths, why)
	}
	if _, why := s.cfiFiles(mmap(s, 11, st.Ino+1)); !strings.Contains(why, "not the device and inode that ran") {
		t.Errorf("no build-id, another inode: %q", why)
	}
}
