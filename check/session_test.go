package check

import (
	"context"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/perfcheck/perfcheck/buildid"
	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/perfdata"
)

// buildC compiles src into out with gcc; the test is skipped without gcc.
func buildC(t *testing.T, out, src string, flags ...string) {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed: cannot build test binaries")
	}
	dir := t.TempDir()
	c := filepath.Join(dir, "prog.c")
	if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-O1", "-g", "-fno-omit-frame-pointer", "-o", out, c}, flags...)
	if b, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, b)
	}
}

// symbolOffset returns the file offset of a function's first byte.
func symbolOffset(t *testing.T, path, name string) (off uint64, seg *elf.Prog) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range syms {
		if s.Name != name {
			continue
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_LOAD && s.Value >= p.Vaddr && s.Value < p.Vaddr+p.Filesz {
				return s.Value - p.Vaddr + p.Off, p
			}
		}
	}
	t.Fatalf("%s: no symbol %s", path, name)
	return 0, nil
}

const progV1 = `
volatile unsigned long sink;
__attribute__((noinline)) void old_only_hot(long n) { for (long i = 0; i < n; i++) sink += i; }
int main(void) { old_only_hot(100); return 0; }
`

const progV2 = `
volatile unsigned long sink;
__attribute__((noinline)) void pad(void) { for (int i = 0; i < 7; i++) sink ^= i * 3; }
__attribute__((noinline)) void new_only_hot(long n) { for (long i = 0; i < n; i++) sink -= i * 7; pad(); }
int main(void) { new_only_hot(100); return 0; }
`

type synthetic struct {
	path    string
	bid     buildid.ID
	ev      *perfdata.Mmap2
	noInode bool // feed ev as an MMAP record, without device and inode
	ip      uint64
	devino  bool
	noTable bool
}

// record feeds a session with one process that maps path and takes 10
// samples at old_only_hot, as perf would have recorded them.
func (sy *synthetic) session(t testing.TB, opts Options) *session {
	s := newTestSession(t, opts)
	s.update(commRec(100, 100, "prog", true))
	if ev := sy.ev; sy.noInode {
		s.update(mmapRec(int32(ev.PID), ev.Addr, ev.Len, ev.PgOff, ev.Filename))
	} else {
		s.update(ev)
	}
	for i := 0; i < 10; i++ {
		s.sample(&sampleEvent{PID: 100, TID: 100, Mode: perfdata.CPUModeUser, IP: sy.ip, Period: 1,
			Callchain: []uint64{contextUser, sy.ip}})
	}
	if !sy.noTable {
		s.addBuildIDs([]perfdata.BuildIDEntry{{PID: -1, CPUMode: perfdata.CPUModeUser, BuildID: sy.bid, Filename: sy.path}})
	}
	return s
}

func newSynthetic(t *testing.T, path string) *synthetic {
	buildC(t, path, progV1)
	id, err := buildidcache.ReadFileIdentity(path)
	if err != nil || id.BuildID == nil {
		t.Fatalf("build-id of %s: %v", path, err)
	}
	off, seg := symbolOffset(t, path, "old_only_hot")
	pgoff := seg.Off &^ 0xfff
	start := uint64(0x555555554000) + pgoff
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	fid, ok := buildidcache.FileIDOf(st)
	if !ok {
		t.Fatalf("%s: stat gives no device and inode", path)
	}
	return &synthetic{
		path: path,
		bid:  id.BuildID,
		ip:   start + off - pgoff + 4,
		ev:   mmap2Rec(100, start, seg.Off+seg.Filesz-pgoff, pgoff, path, fid.Maj, fid.Min, fid.Ino, 0),
	}
}

func finish(t *testing.T, s *session) *Result {
	t.Helper()
	res, err := s.finish(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func dsoOf(t *testing.T, res *Result, path string) *DSO {
	t.Helper()
	for _, d := range res.DSOs {
		if d.Path == path {
			return d
		}
	}
	t.Fatalf("no DSO %s in %v", path, res.Report().DSOs)
	return nil
}

// names returns every function name the result would print.
func names(res *Result) string {
	var b strings.Builder
	for _, l := range res.Locations {
		b.WriteString(l.String())
		b.WriteByte('\n')
		for _, f := range l.Frames {
			b.WriteString(f.Function + " " + f.RawName + "\n")
		}
	}
	return b.String()
}

func TestVerdictsSynthetic(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "prog")
	sy := newSynthetic(t, path)

	// The binary is there: verified, named.
	res := finish(t, sy.session(t, Options{}))
	d := dsoOf(t, res, path)
	if d.Verdict != Verified || d.Source != "path" || d.BuildIDSource != "header" {
		t.Fatalf("clean: %+v", d)
	}
	if res.TrustedSamples != 10 || res.UntrustedAnySamples != 0 || d.HitsLeaf != 10 || d.HitsAny != 10 {
		t.Fatalf("clean counts: %+v", res.Report())
	}
	if n := names(res); !strings.Contains(n, "old_only_hot") {
		t.Fatalf("clean: old_only_hot not named:\n%s", n)
	}
	// The callchain repeats the IP: one location, not two.
	if len(res.Stacks) != 1 || len(res.Stacks[0].Locations()) != 1 {
		t.Fatalf("stack: %d stacks, first has %d locations", len(res.Stacks), len(res.Stacks[0].Locations()))
	}

	// Keep a copy in a perf-style cache, then rebuild at the same path.
	cache := filepath.Join(dir, "debug")
	id := sy.bid.String()
	entry := filepath.Join(cache, path, id)
	os.MkdirAll(entry, 0o755)
	data, _ := os.ReadFile(path)
	os.WriteFile(filepath.Join(entry, "elf"), data, 0o755)
	os.MkdirAll(filepath.Join(cache, ".build-id", id[:2]), 0o755)
	os.Symlink(filepath.Join("..", "..", path, id), filepath.Join(cache, ".build-id", id[:2], id[2:]))
	end := time.Now()
	time.Sleep(20 * time.Millisecond)
	// Build the replacement beside the old file and rename it over, as a
	// build system does: built after a delete, the new file could get the
	// freed inode number back (ext4 reuses them), which is exactly why the
	// mtime is checked too.
	buildC(t, path+".new", progV2)
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}

	res = finish(t, sy.session(t, Options{}))
	d = dsoOf(t, res, path)
	if d.Verdict != Mismatch || d.FoundBuildID == nil || d.FoundBuildID.Matches(sy.bid) {
		t.Fatalf("rebuilt, no cache: %+v", d)
	}
	if res.TrustedSamples != 0 || res.UntrustedLeafSamples != 10 || res.UntrustedAnySamples != 10 {
		t.Fatalf("rebuilt counts: %+v", res.Report())
	}
	if n := names(res); strings.Contains(n, "new_only") || strings.Contains(n, "pad") || strings.Contains(n, "old_only_hot") {
		t.Fatalf("rebuilt: a name was given for a mismatched binary:\n%s", n)
	}
	if got := res.Locations[0].String(); !strings.HasPrefix(got, "prog+0x") || !strings.Contains(got, "[mismatch]") {
		t.Fatalf("label %q", got)
	}

	res = finish(t, sy.session(t, Options{Lookup: buildidcache.Options{BuildIDDir: cache}}))
	d = dsoOf(t, res, path)
	if d.Verdict != Verified || d.Source != "perf-cache" {
		t.Fatalf("rebuilt, cache kept: %+v", d)
	}
	if n := names(res); !strings.Contains(n, "old_only_hot") || strings.Contains(n, "new_only") {
		t.Fatalf("rebuilt, cache kept: names:\n%s", n)
	}

	// No build-id recorded: the inode tells.
	sy.noTable = true
	res = finish(t, sy.session(t, Options{}))
	d = dsoOf(t, res, path)
	if d.Verdict != Replaced || !strings.Contains(d.Reason, "inode") {
		t.Fatalf("no build-id, other inode: %+v", d)
	}
	if n := names(res); strings.Contains(n, "new_only") {
		t.Fatalf("replaced: named from the replacement:\n%s", n)
	}
	// Without dev/inode (MMAP records), the mtime against the recording's end.
	sy.noInode = true
	s := sy.session(t, Options{})
	s.rec.end = end
	res = finish(t, s)
	if d = dsoOf(t, res, path); d.Verdict != Replaced || !strings.Contains(d.Reason, "after the recording ended") {
		t.Fatalf("no build-id, mtime after the end: %+v", d)
	}
	// Nothing to compare: unverified, named, marked.
	res = finish(t, sy.session(t, Options{}))
	if d = dsoOf(t, res, path); d.Verdict != Unverified || res.TrustedSamples != 10 {
		t.Fatalf("no evidence: %+v", d)
	}
	// Deleted: missing.
	os.Remove(path)
	sy.noTable = false
	res = finish(t, sy.session(t, Options{}))
	if d = dsoOf(t, res, path); d.Verdict != Missing || d.advice == "" {
		t.Fatalf("deleted: %+v", d)
	}
	if rep := res.Report(); !rep.Failed(false) || rep.Problems != 1 || len(rep.Advice) != 1 {
		t.Fatalf("deleted report: %+v", rep)
	}
}

// A path with two build-ids in the table and nothing to tie a mapping to
// one of them must not be resolved by path.
func TestAmbiguousTable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "prog")
	sy := newSynthetic(t, path)
	sy.noInode = true
	s := sy.session(t, Options{})
	s.addBuildIDs([]perfdata.BuildIDEntry{{PID: -1, CPUMode: perfdata.CPUModeUser, BuildID: buildid.ID{1, 2, 3}, Filename: path}})
	res := finish(t, s)
	d := dsoOf(t, res, path)
	if d.Verdict != Replaced || len(d.Candidates) != 2 || d.Symbolized {
		t.Fatalf("ambiguous: %+v", d)
	}
}

func TestCallchainOnlyDSOVisible(t *testing.T) {
	t.Parallel()
	s := newTestSession(t, Options{})
	// Recorded on this machine: its kernel release, arch and host.
	s.rec.machine = s.opts.host.runningMachine()
	s.update(mmapRec(5, 0x1000, 0x1000, 0, "/nonexistent/leaf"))
	s.update(mmapRec(5, 0x8000, 0x1000, 0, "/nonexistent/caller"))
	s.update(mmapRec(-1, 0xffffffff81000000, 0x1000000, 0xffffffff81000000, "[kernel.kallsyms]_text"))
	// Kernel leaf, user callers: markers switch modes; the first kernel
	// entry repeats the IP.
	s.sample(&sampleEvent{PID: 5, TID: 5, Mode: perfdata.CPUModeKernel, IP: 0xffffffff81000100, Period: 1,
		Callchain: []uint64{contextKernel, 0xffffffff81000100, 0xffffffff81000200, contextUser, 0x1010, 0x8010, 0x8020}})
	s.addBuildIDs([]perfdata.BuildIDEntry{{PID: -1, CPUMode: perfdata.CPUModeUser, BuildID: buildid.ID{0xaa, 0xbb}, Filename: "/nonexistent/leaf"}})
	res := finish(t, s)
	if len(res.Stacks) != 1 || len(res.Stacks[0].Locations()) != 5 {
		t.Fatalf("stack: %+v", res.Stacks[0])
	}
	caller := dsoOf(t, res, "/nonexistent/caller")
	if caller.HitsLeaf != 0 || caller.HitsAny != 1 || caller.Verdict != Missing {
		t.Fatalf("callchain-only DSO: %+v", caller)
	}
	if k := dsoOf(t, res, "[kernel.kallsyms]"); k.HitsLeaf != 1 || k.HitsAny != 1 {
		t.Fatalf("kernel: %+v", k)
	}
	// The kernel leaf has no recorded build-id but this machine's
	// release, arch and host: unverified against the running kernel, so
	// the leaf is trusted and the user frames are not.
	if res.UntrustedAnySamples != 1 || res.UntrustedLeafSamples != 0 {
		t.Fatalf("counts: %+v", res.Report())
	}
}

func TestReportSummaryAndFailure(t *testing.T) {
	t.Parallel()
	rep := &Report{Samples: 3, TrustedSamples: 2, UntrustedLeafSamples: 0, UntrustedAnySamples: 1, StrictProblems: 1}
	if got, want := rep.Summary(), "3 samples, 66.7% fully trusted; 0% have an untrusted leaf; 33.3% an untrusted frame"; got != want {
		t.Errorf("Summary() = %q, want %q", got, want)
	}
	if rep.Failed(false) || !rep.Failed(true) {
		t.Error("an unverified DSO fails only --strict")
	}
	for v := Verified; v <= NoFile; v++ {
		var back Verdict
		if err := back.UnmarshalText([]byte(v.String())); err != nil || back != v {
			t.Errorf("verdict %v does not round-trip: %v %v", v, back, err)
		}
		if v.Problem(false) == v.Trusted() {
			t.Errorf("%v: a problem verdict must be untrusted and vice versa", v)
		}
	}
}
