package check

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/buildid"
	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/dso"
	"github.com/perfcheck/perfcheck/symbolize"
)

// The file a DSO is named from must be the one its verdict rests on. These
// tests replace a file after the verdict was given and before it is opened
// for names — the window a deploy hits on a large recording, or a file
// opened ahead (prefetch.go) — through an opener that swaps the file in,
// then opens it with the default opener.

// swapOpener renames a prepared file over a path the first time that
// path is opened, then opens it with base; every rename is done before
// the open, so the opener sees the new file.
type swapOpener struct {
	base symbolOpener
	mu   sync.Mutex
	swap map[string]func() error // path → what replaces it, once
	errs []error
}

func newSwapOpener() *swapOpener {
	return &swapOpener{base: defaultOpener{}, swap: map[string]func() error{}}
}

// renameOver makes the first Open of path find src there instead.
func (o *swapOpener) renameOver(path, src string) {
	o.swap[path] = func() error { return os.Rename(src, path) }
}

func (o *swapOpener) Open(path string, kind dso.Kind) (symbolLookup, error) {
	o.mu.Lock()
	if fn := o.swap[path]; fn != nil {
		delete(o.swap, path)
		if err := fn(); err != nil {
			o.errs = append(o.errs, err)
		}
	}
	o.mu.Unlock()
	return o.base.Open(path, kind)
}

// done fails the test when a swap failed or never happened.
func (o *swapOpener) done(t *testing.T) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, err := range o.errs {
		t.Error(err)
	}
	for p := range o.swap {
		t.Errorf("%s was never opened for names: the test did not test the swap", p)
	}
}

func fileBuildID(t *testing.T, path string) buildid.ID {
	t.Helper()
	id, err := buildidcache.ReadFileIdentity(path)
	if err != nil || len(id.BuildID) == 0 {
		t.Fatalf("build-id of %s: %v", path, err)
	}
	return id.BuildID
}

// assertRefused checks that d, replaced before its names were read, is
// shown as offsets with verdict want, every sample through it untrusted,
// and that no name of either build appears.
func assertRefused(t *testing.T, res *Result, d *DSO, want Verdict, newID buildid.ID) {
	t.Helper()
	if d.Verdict != want || d.Symbolized || !strings.Contains(d.Reason, "changed since") {
		t.Errorf("verdict %v (%s), symbolized %v; want %v, unsymbolized, the change said", d.Verdict, d.Reason, d.Symbolized, want)
	}
	if !bytes.Equal(d.FoundBuildID, newID) {
		t.Errorf("found build-id %s, want the replacement's %s", d.FoundBuildID, newID)
	}
	if res.TrustedSamples != 0 || res.UntrustedLeafSamples != 10 {
		t.Errorf("counts: %s", res.Report().Summary())
	}
	if !res.Report().Failed(false) {
		t.Error("a binary replaced before its names were read must fail the check")
	}
	if n := names(res); strings.Contains(n, "new_only") || strings.Contains(n, "pad") || strings.Contains(n, "old_only_hot") {
		t.Errorf("named from a file that is not the one verified:\n%s", n)
	}
	if got := res.Locations[0].String(); !strings.Contains(got, "+0x") || !strings.Contains(got, "["+want.String()+"]") {
		t.Errorf("label %q", got)
	}
}

func TestSymbolFileReplacedAfterVerdict(t *testing.T) {
	t.Parallel()
	t.Run("control", func(t *testing.T) {
		t.Parallel()
		// The same opener with nothing to swap: verified and named.
		path := filepath.Join(t.TempDir(), "prog")
		sy := newSynthetic(t, path)
		res := finish(t, sy.session(t, Options{symbolizer: newSwapOpener()}))
		if d := dsoOf(t, res, path); d.Verdict != Verified || !strings.Contains(names(res), "old_only_hot") {
			t.Fatalf("%+v\n%s", d, names(res))
		}
	})
	t.Run("verified", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "prog")
		sy := newSynthetic(t, path)
		buildC(t, path+".v2", progV2)
		newID := fileBuildID(t, path+".v2")
		o := newSwapOpener()
		o.renameOver(path, path+".v2")
		res := finish(t, sy.session(t, Options{symbolizer: o}))
		o.done(t)
		d := dsoOf(t, res, path)
		assertRefused(t, res, d, Mismatch, newID)
		if d.Source != "" || d.advice == "" {
			t.Errorf("source %q, advice %q", d.Source, d.advice)
		}
	})
	t.Run("unverified", func(t *testing.T) {
		t.Parallel()
		// No build-id recorded, same inode: unverified, named from the
		// path; replaced before the open, it is replaced.
		path := filepath.Join(t.TempDir(), "prog")
		sy := newSynthetic(t, path)
		sy.noTable = true
		buildC(t, path+".v2", progV2)
		newID := fileBuildID(t, path+".v2")
		o := newSwapOpener()
		o.renameOver(path, path+".v2")
		res := finish(t, sy.session(t, Options{symbolizer: o}))
		o.done(t)
		assertRefused(t, res, dsoOf(t, res, path), Replaced, newID)
	})
	t.Run("trust-paths", func(t *testing.T) {
		t.Parallel()
		// Mismatched, named from the file at the path under TrustPaths:
		// not from yet another file put there after the verdict.
		path := filepath.Join(t.TempDir(), "prog")
		sy := newSynthetic(t, path)
		buildC(t, path+".v2", progV2)
		if err := os.Rename(path+".v2", path); err != nil {
			t.Fatal(err)
		}
		buildC(t, path+".v3", progV1, "-DV3")
		o := newSwapOpener()
		o.renameOver(path, path+".v3")
		res := finish(t, sy.session(t, Options{symbolizer: o, TrustPaths: true}))
		o.done(t)
		d := dsoOf(t, res, path)
		if d.Verdict != Mismatch || d.Symbolized || !strings.Contains(d.SymbolError, "changed since") {
			t.Errorf("verdict %v, symbolized %v, symbol error %q", d.Verdict, d.Symbolized, d.SymbolError)
		}
		if n := names(res); strings.Contains(n, "old_only_hot") || strings.Contains(n, "new_only") {
			t.Errorf("named:\n%s", n)
		}
	})
	t.Run("debug-file", func(t *testing.T) {
		t.Parallel()
		// Verified through a separate debug file (the richest file the
		// lookup found), replaced by another build's debug file.
		if _, err := exec.LookPath("objcopy"); err != nil {
			t.Skip("objcopy not installed")
		}
		dir := t.TempDir()
		path := filepath.Join(dir, "prog")
		sy := newSynthetic(t, path)
		dbg := filepath.Join(dir, "prog.debug")
		buildC(t, path+".v2", progV2)
		for _, args := range [][]string{
			{"--only-keep-debug", path, dbg},
			{"--only-keep-debug", path + ".v2", dbg + ".v2"},
		} {
			if b, err := exec.Command("objcopy", args...).CombinedOutput(); err != nil {
				t.Fatalf("objcopy %v: %v\n%s", args, err, b)
			}
		}
		newID := fileBuildID(t, dbg+".v2")
		loc := &fixedLocator{buildidcache.Result{BuildID: sy.bid,
			Identity: buildidcache.Candidate{Locator: "debug-dir", Path: path},
			Best:     buildidcache.Candidate{Locator: "debug-dir", Path: dbg}}}
		res := finish(t, sy.session(t, Options{locator: loc}))
		if d := dsoOf(t, res, path); d.Verdict != Verified || !strings.Contains(names(res), "old_only_hot") {
			t.Fatalf("before the swap: %+v\n%s", d, names(res))
		}
		o := newSwapOpener()
		o.renameOver(dbg, dbg+".v2")
		res = finish(t, sy.session(t, Options{locator: loc, symbolizer: o}))
		o.done(t)
		assertRefused(t, res, dsoOf(t, res, path), Mismatch, newID)
	})
}

// fixedLocator answers every query with one result.
type fixedLocator struct{ res buildidcache.Result }

func (f *fixedLocator) Locate(_ context.Context, q buildidcache.Query) (*buildidcache.Result, error) {
	res := f.res
	return &res, nil
}

// A real recording: the profiled binary is replaced between the verdict
// and the open for names (through Analyze, so through the opener that
// opens files ahead too), and a vdso copy in perf's cache likewise. Each
// in a world of its own, so that they run in parallel.
func TestRealReplacedBeforeNames(t *testing.T) {
	t.Parallel()
	t.Run("binary", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t)
		bin := w.path("busy")
		w.gcc(bin, busyV1)
		data := w.record("names.data", nil, bin)
		w.gcc(bin+".v2", busyV2)
		res := w.analyze(data, Options{})
		mustDSO(t, res, bin, Verified)
		assertName(t, res, "first_hot")
		hits := samplesIn(res, bin, false)

		o := newSwapOpener()
		o.renameOver(bin, bin+".v2")
		res = w.analyze(data, Options{symbolizer: o})
		o.done(t)
		d := mustDSO(t, res, bin, Mismatch)
		if !strings.Contains(d.Reason, "changed since") || d.Symbolized {
			t.Errorf("reason %q, symbolized %v", d.Reason, d.Symbolized)
		}
		if res.UntrustedAnySamples != hits || hits == 0 {
			t.Errorf("untrusted samples %d, want every sample through %s (%d)", res.UntrustedAnySamples, bin, hits)
		}
		if !res.Report().Failed(false) {
			t.Error("the check must fail")
		}
		assertNoName(t, res, append(v2Names, "first_hot", "second_hot")...)
	})
	t.Run("vdso", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t)
		bin := w.path("clock")
		w.gcc(bin, vdsoSrc)
		data := w.record("vdso-names.data", nil, bin)
		opts := Options{Lookup: buildidcache.Options{BuildIDDir: w.cache()}}
		res := w.analyze(data, opts)
		d := mustDSO(t, res, "[vdso]", Verified)
		if d.Source != "perf-cache" {
			t.Fatalf("vdso verified by %s, want perf-cache", d.Source)
		}
		cached := d.FoundPath // the cache's vdso file, as the lookup named it
		if !strings.HasPrefix(cached, w.cache()) || filepath.Base(cached) != "vdso" {
			t.Fatalf("vdso found at %s, want its file in the cache %s", cached, w.cache())
		}
		other := w.path("other.so")
		w.gcc(other, libV1, "-shared", "-fPIC")

		o := newSwapOpener()
		o.renameOver(cached, other)
		opts.symbolizer = o
		res = w.analyze(data, opts)
		o.done(t)
		d = mustDSO(t, res, "[vdso]", Mismatch)
		if d.HitsAny == 0 || res.UntrustedAnySamples < d.HitsAny {
			t.Errorf("vdso hits %d, untrusted samples %d", d.HitsAny, res.UntrustedAnySamples)
		}
		for _, l := range res.Locations {
			if l.DSO == d && len(l.Frames) > 0 {
				t.Errorf("vdso frame named %q from another file", l.Frames[0].Function)
			}
		}
		assertNoName(t, res, "lib_old_work")
	})
}

// idLookup is a caller's lookup that reports the build-id id.
type idLookup struct{ id []byte }

func (l idLookup) Lookup(uint64) ([]symbolize.Frame, error) { return nil, nil }
func (l idLookup) BuildID() buildid.ID                      { return l.id }
func (l idLookup) Close() error                             { return nil }

// What each kind of symbol source can prove for a verified kernel: a
// kallsyms listing has no build-id (it is proven by where it was found),
// an ELF image (vmlinux) must carry the recorded one, zero padding
// allowed.
func TestProveLookupKernel(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	withID, noID := filepath.Join(dir, "vmlinux"), filepath.Join(dir, "vmlinux-noid")
	buildC(t, withID, progV1)
	buildC(t, noID, progV1, "-Wl,--build-id=none")
	id := fileBuildID(t, withID)
	kallsyms := filepath.Join(dir, "kallsyms")
	os.WriteFile(kallsyms, []byte("ffffffff81000000 T _text\nffffffff81001000 T core_fn\n"), 0o644)
	other := append(buildid.ID(nil), id...)
	other[0] ^= 0xff

	for _, c := range []struct {
		name string
		path string       // opened with the default opener, or
		lk   symbolLookup // a caller's lookup
		want buildid.ID   // recorded
		ok   bool
	}{
		{"listing", kallsyms, nil, id, true},
		{"vmlinux", withID, nil, id, true},
		{"vmlinux padded", withID, nil, append(append(buildid.ID(nil), id...), make([]byte, 20-len(id))...), true},
		{"vmlinux of another build", withID, nil, other, false},
		{"vmlinux without build-id", noID, nil, id, false},
		{"caller's listing", "", idLookup{}, id, true},
		{"caller's other build", "", idLookup{other}, id, false},
	} {
		lk := c.lk
		if lk == nil {
			var err error
			if lk, err = (defaultOpener{}).Open(c.path, dso.Kernel); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
		}
		d := &DSO{Path: "[kernel.kallsyms]", Kind: dso.Kernel, Verdict: Verified, BuildID: c.want, Source: "debug-dir", symPath: c.path}
		err := d.proveLookup(lk)
		lk.Close()
		if (err == nil) != c.ok {
			t.Errorf("%s: proveLookup = %v, want ok %v", c.name, err, c.ok)
		}
	}
	// A caller's lookup without a build-id for a file: refused.
	d := &DSO{Path: "/bin/x", Kind: dso.File, Verdict: Verified, BuildID: id, symPath: "/bin/x"}
	if err := d.proveLookup(idLookup{}); err == nil {
		t.Error("a file's lookup without a build-id was accepted")
	}
}

// A module named from /proc/kallsyms is proven by the build-id of the
// module loaded now, read after the listing: another build loaded at the
// same address since the verdict is refused, a reload elsewhere too.
func TestRunningModuleNamesBuildID(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ko, other := filepath.Join(dir, "perfcheck-test.ko"), filepath.Join(dir, "other.ko")
	id := buildKO(t, ko, modSrc, "")
	otherID := buildKO(t, other, modSrcV2, "")
	name := "perfcheck_test"
	d := func(h hostRoots) *DSO {
		return &DSO{Path: ko, Kind: dso.Module, Verdict: Verified, BuildID: id, Source: "running-module",
			FoundPath: ko, modNames: "kallsyms", symPath: h.kallsyms()}
	}

	host := fakeRunning(t, ko, name, modBase)
	l, err := host.runningModuleNames(name, modBase, 0x4000)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(l.BuildID(), id) {
		t.Fatalf("build-id %x, want %s", l.BuildID(), id)
	}
	if err := d(host).proveLookup(l); err != nil {
		t.Fatal(err)
	}

	host = fakeRunning(t, other, name, modBase)
	if l, err = host.runningModuleNames(name, modBase, 0x4000); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(l.BuildID(), otherID) {
		t.Fatalf("build-id %x, want the module loaded now, %s", l.BuildID(), otherID)
	}
	m := d(host)
	err = m.proveLookup(l)
	if err == nil {
		t.Fatal("another build's listing was accepted")
	}
	m.refuseLookup(err, host)
	if m.Verdict != Mismatch || m.Symbolized || !bytes.Equal(m.FoundBuildID, otherID) || m.FoundPath != filepath.Join(host.sys, "module", name) {
		t.Errorf("verdict %v, symbolized %v, found %s at %s", m.Verdict, m.Symbolized, m.FoundBuildID, m.FoundPath)
	}

	// Reloaded elsewhere after the listing was read: the listing (still
	// at the recorded address here) is not trusted.
	host = fakeRunning(t, ko, name, modBase)
	os.WriteFile(filepath.Join(host.proc, "modules"), []byte(fmt.Sprintf("%s 16384 0 - Live 0x%x\n", name, modBase+0x10000)), 0o444)
	if _, err := host.runningModuleNames(name, modBase, 0x4000); err == nil || !strings.Contains(err.Error(), "loaded at") {
		t.Errorf("reloaded elsewhere: %v", err)
	}
}

// A module without a recorded build-id is named from the .ko at its path
// (unverified) when that file is the one the verdict examined: its
// lookup reports the build-id read from the bytes its names come from.
func TestUnverifiedModuleNamedFromKO(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ko := filepath.Join(dir, "perfcheck-test.ko")
	buildKO(t, ko, modSrc, "")
	funcs := readelfTextFuncs(t, ko)
	vs := funcs["mod_first"]
	res := moduleSession(t, Options{host: notLoaded(t)}, ko, make(buildid.ID, 20), []uint64{vs[0] + vs[1]/2})
	d := mustDSO(t, res, ko, Unverified)
	if got := moduleNames(res, d)[vs[0]+vs[1]/2]; got != "mod_first" {
		t.Errorf("named %q, want mod_first (%s; %s)", got, d.Reason, d.SymbolError)
	}
}

// The default opener maps file offsets with the program headers of the
// file symbolize opened: a file renamed over the path after the open lends
// the lookup neither its segments nor its build-id.
func TestDefaultOpenerProgramHeadersSameFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "prog")
	sy := newSynthetic(t, path)
	off, _ := symbolOffset(t, path, "old_only_hot")
	// Another build whose code sits elsewhere: its segments would move
	// every address.
	buildC(t, path+".v2", progV2, "-Wl,-z,separate-code", "-Wl,--section-start=.init=0x3000")
	lk, err := defaultOpener{}.Open(path, dso.File)
	require.NoError(t, err)
	defer lk.Close()
	require.NoError(t, os.Rename(path+".v2", path))

	assert.Equal(t, sy.bid, lk.BuildID())
	fr, err := lk.Lookup(off)
	require.NoError(t, err)
	require.NotEmpty(t, fr)
	assert.Equal(t, "old_only_hot", fr[len(fr)-1].Function)
}
