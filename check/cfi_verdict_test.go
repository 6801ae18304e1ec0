package check

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/perfdata"
)

// A binary without a build-id rewritten in place (same device and inode)
// after it was mapped and before the recording ended: judge calls it
// Replaced, so cfiFiles must refuse its unwind tables too, or the new
// build's CFI would invent callers beneath a frame the verdict distrusts.
// The rule is one (modifiedAfterMapped); this holds both to it.
func TestCFIRefusedWhenVerdictReplacedInPlace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "prog")
	buildC(t, bin, "int main(void) { return 0; }\n", "-Wl,--build-id=none")
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	st0 := statFile(bin)
	if st0.BuildID != nil {
		t.Fatal("linked with --build-id=none, yet has a build-id")
	}
	mapped := time.Now().Add(-10 * time.Minute)
	// Rewrite in place (O_TRUNC keeps the inode), dated after the mapping
	// and before the recording's end.
	f, err := os.OpenFile(bin, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(bin, mapped.Add(time.Minute), mapped.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	st := statFile(bin)
	if st.Ino != st0.Ino {
		t.Fatal("rewriting in place changed the inode")
	}
	const perfT = 1_000_000_000 // perf time of the mapping = wall time `mapped`
	s := newTestSession(t, Options{Lookup: buildidcache.Options{BuildIDDir: t.TempDir()}})
	s.rec = recInfo{end: time.Now(), clock: &perfdata.ClockData{WallClockNS: uint64(mapped.UnixNano()), ClockIDNS: perfT}}
	s.update(mmap2Rec(10, 0x400000, 0x1000, 0, bin, st.Maj, st.Min, st.Ino, perfT))
	d := s.dsoOf(s.tracker.Lookup(10, perfdata.CPUModeUser, 0x400000))
	paths, why := s.cfiFiles(d)
	s.judge(context.Background(), d, s.opts.locator)
	if d.Verdict != Replaced {
		t.Fatalf("verdict %v (%s), want Replaced: modified after it was mapped", d.Verdict, d.Reason)
	}
	if why == "" {
		t.Errorf("unwinding uses the CFI of %v, a file the verdict calls replaced (%s)", paths, d.Reason)
	}

	// Not modified since it was mapped: both trust it.
	if err := os.Chtimes(bin, mapped.Add(-time.Minute), mapped.Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	s = newTestSession(t, Options{Lookup: buildidcache.Options{BuildIDDir: t.TempDir()}})
	s.rec = recInfo{end: time.Now(), clock: &perfdata.ClockData{WallClockNS: uint64(mapped.UnixNano()), ClockIDNS: perfT}}
	s.update(mmap2Rec(10, 0x400000, 0x1000, 0, bin, st.Maj, st.Min, st.Ino, perfT))
	d = s.dsoOf(s.tracker.Lookup(10, perfdata.CPUModeUser, 0x400000))
	paths, why = s.cfiFiles(d)
	s.judge(context.Background(), d, s.opts.locator)
	if d.Verdict != Unverified || why != "" || len(paths) != 1 || paths[0] != bin {
		t.Errorf("unchanged since mapped: verdict %v (%s), CFI files %v %q", d.Verdict, d.Reason, paths, why)
	}
}
