package check

import (
	"bytes"
	"compress/gzip"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/perfcheck/perfcheck/buildid"
	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/dso"
	"github.com/perfcheck/perfcheck/perfdata"
	"github.com/perfcheck/perfcheck/symbolize"
)

// Kernel modules cannot be recorded on this project's VM: its kernel is
// built without module support (no /proc/modules, no /sys/module/*/notes,
// no /lib/modules). What is real here: a relocatable object built and
// linked the way kbuild links a .ko (gcc -mcmodel=kernel -c, ld -r
// --build-id=sha1), its symbols as readelf lists them, and the kernel's
// own formats of /proc/modules, /proc/kallsyms and /sys/module/NAME/notes,
// written from that object as the kernel would show it loaded (the note
// file is the object's .note.gnu.build-id section, byte for byte, as
// /sys/module/NAME/notes exposes it). The recording is fed to a Session as
// perf's synthesized module MMAP (pid -1, pgoff 0, start from
// /proc/modules) and kernel-mode samples.

const modSrc = `
volatile unsigned long msink;
__attribute__((noinline)) void mod_first(long n) { for (long i = 0; i < n; i++) msink += i; }
__attribute__((noinline)) static void mod_second(long n) { for (long i = 0; i < n; i++) msink ^= i * 7; }
void mod_entry(long n) { mod_first(n); mod_second(n); }
__attribute__((section(".init.text"))) int mod_init(void) { mod_entry(3); return 0; }
`

// modSrcV2 has other functions: none of its names may name the recording.
const modSrcV2 = `
volatile unsigned long msink;
__attribute__((noinline)) void mod_v2_only(long n) { for (long i = 0; i < n; i++) msink -= i; }
void mod_v2_entry(long n) { mod_v2_only(n); mod_v2_only(n + 1); }
`

// buildKO builds src into a module at out and returns its build-id.
// script, when not "", is an ld linker script for the ld -r step.
func buildKO(t *testing.T, out, src, script string) buildid.ID {
	t.Helper()
	for _, tool := range []string{"gcc", "ld", "readelf"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed: cannot build a module object", tool)
		}
	}
	dir := t.TempDir()
	c, o := filepath.Join(dir, "mod.c"), filepath.Join(dir, "mod.o")
	if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(name string, args ...string) {
		if b, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, b)
		}
	}
	run("gcc", "-O1", "-fno-pic", "-mcmodel=kernel", "-c", c, "-o", o)
	args := []string{"-r", "--build-id=sha1", "-o", out, o}
	if script != "" {
		lds := filepath.Join(dir, "mod.lds")
		if err := os.WriteFile(lds, []byte(script), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "-T", lds)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	run("ld", args...)
	f, err := elf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	note := f.Section(".note.gnu.build-id")
	if note == nil {
		t.Fatal("ld -r --build-id wrote no build-id note")
	}
	b, err := note.Data()
	if err != nil || len(b) < 16+20 {
		t.Fatalf("build-id note: %v", err)
	}
	return buildid.ID(b[16:])
}

// readelfTextFuncs returns the FUNC symbols readelf lists in the module's
// .text section: name → value and size.
func readelfTextFuncs(t *testing.T, ko string) map[string][2]uint64 {
	t.Helper()
	secs, err := exec.Command("readelf", "-SW", ko).Output()
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`\[\s*(\d+)\] \.text\s`).FindSubmatch(secs)
	if m == nil {
		t.Fatalf("readelf shows no .text in %s", ko)
	}
	text := string(m[1])
	out, err := exec.Command("readelf", "-sW", ko).Output()
	if err != nil {
		t.Fatal(err)
	}
	funcs := map[string][2]uint64{}
	for _, line := range strings.Split(string(out), "\n") {
		// "     5: 0000000000000030    37 FUNC    GLOBAL DEFAULT    2 mod_first"
		fs := strings.Fields(line)
		if len(fs) != 8 || fs[3] != "FUNC" || fs[6] != text {
			continue
		}
		v, err1 := strconv.ParseUint(fs[1], 16, 64)
		n, err2 := strconv.ParseUint(fs[2], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("readelf line %q", line)
		}
		funcs[fs[7]] = [2]uint64{v, n}
	}
	if len(funcs) == 0 {
		t.Fatalf("readelf lists no function in .text of %s", ko)
	}
	return funcs
}

const modBase uint64 = 0xffffffffc0a1b000

// moduleSession feeds a session what perf records for module path loaded
// at modBase: the synthesized module MMAP, the build-id table's kernel
// entry, and one kernel sample at each offset.
func moduleSession(t *testing.T, opts Options, path string, id buildid.ID, offs []uint64) *Result {
	t.Helper()
	s := newTestSession(t, opts)
	s.addBuildIDs([]perfdata.BuildIDEntry{{PID: -1, CPUMode: perfdata.CPUModeKernel, Filename: path, BuildID: id}})
	s.update(mmapRec(-1, modBase, 0x4000, 0, path))
	for i, off := range offs {
		s.sample(&sampleEvent{PID: 7, TID: 7, Time: uint64(i + 1), Period: 1, Mode: perfdata.CPUModeKernel, IP: modBase + off})
	}
	res, err := s.finish(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// moduleNames returns the function named at each offset ("" when none).
func moduleNames(res *Result, d *DSO) map[uint64]string {
	out := map[uint64]string{}
	for _, l := range res.Locations {
		if l.DSO == d {
			out[l.Offset] = ""
			if len(l.Frames) > 0 {
				out[l.Offset] = l.Frames[0].Function
			}
		}
	}
	return out
}

// notLoaded is a /sys and /proc where no module is loaded (this VM cannot
// load modules; the roots are empty).
func notLoaded(t *testing.T) hostRoots {
	return hostRoots{sys: t.TempDir(), proc: t.TempDir()}
}

// fakeRunning lays out, under a temporary /sys and /proc, module name as
// the kernel shows it loaded at base: the build-id note of ko, its line in
// /proc/modules and its .text functions in /proc/kallsyms, between lines
// of the core kernel and of another module. It returns those roots, for
// Options.host.
func fakeRunning(t *testing.T, ko, name string, base uint64) hostRoots {
	t.Helper()
	sys, proc := t.TempDir(), t.TempDir()
	f, err := elf.Open(ko)
	if err != nil {
		t.Fatal(err)
	}
	note, err := f.Section(".note.gnu.build-id").Data()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	notes := filepath.Join(sys, "module", name, "notes")
	sections := filepath.Join(sys, "module", name, "sections")
	os.MkdirAll(notes, 0o755)
	os.MkdirAll(sections, 0o755)
	os.WriteFile(filepath.Join(notes, ".note.gnu.build-id"), note, 0o444)
	os.WriteFile(filepath.Join(sections, ".text"), []byte(fmt.Sprintf("0x%016x\n", base)), 0o444)
	os.WriteFile(filepath.Join(proc, "modules"), []byte(fmt.Sprintf(
		"other_mod 16384 0 - Live 0xffffffffc0001000\n%s 16384 0 - Live 0x%x\n", name, base)), 0o444)
	var ks strings.Builder
	ks.WriteString("ffffffff81000000 T _text\nffffffff81001000 T core_fn\n")
	for fn, vs := range readelfTextFuncs(t, ko) {
		typ := "T"
		if fn == "mod_second" {
			typ = "t"
		}
		fmt.Fprintf(&ks, "%016x %s %s\t[%s]\n", base+vs[0], typ, fn, name)
	}
	// The module's data follows its text (perf and the kernel list data
	// symbols too): here .bss's msink, a page after the text.
	fmt.Fprintf(&ks, "%016x b msink\t[%s]\n", base+0x1000, name)
	fmt.Fprintf(&ks, "%016x t other_fn\t[other_mod]\n", base+0x2000)
	os.WriteFile(filepath.Join(proc, "kallsyms"), []byte(ks.String()), 0o444)
	return hostRoots{sys: sys, proc: proc}
}

func TestModuleNamedFromKO(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ko := filepath.Join(dir, "lib/modules/6.1.0-test/kernel/drivers/misc/perfcheck-test.ko")
	id := buildKO(t, ko, modSrc, "")
	funcs := readelfTextFuncs(t, ko)
	host := notLoaded(t)

	var offs []uint64
	want := map[uint64]string{}
	var textEnd uint64
	for fn, vs := range funcs {
		for _, off := range []uint64{vs[0], vs[0] + vs[1]/2, vs[0] + vs[1] - 1} {
			offs = append(offs, off)
			want[off] = fn
		}
		textEnd = max(textEnd, vs[0]+vs[1])
	}
	// Past .text: the module's data or init code, which cannot be named.
	offs = append(offs, textEnd+0x40, 0x3ff0)
	want[textEnd+0x40], want[0x3ff0] = "", ""
	if _, ok := funcs["mod_init"]; ok {
		t.Fatal("readelf puts mod_init (.init.text) in .text")
	}

	res := moduleSession(t, Options{Lookup: buildidcache.Options{BuildIDDir: t.TempDir()}, host: host}, ko, id, offs)
	d := mustDSO(t, res, ko, Verified)
	if d.Kind != dso.Module || !d.Symbolized || !strings.Contains(d.Reason, "named from the .text symbols of "+ko) {
		t.Errorf("module: kind %v, symbolized %v, reason %q", d.Kind, d.Symbolized, d.Reason)
	}
	got := moduleNames(res, d)
	for off, fn := range want {
		if got[off] != fn {
			t.Errorf("offset %#x: named %q, readelf says %q", off, got[off], fn)
		}
	}

	// Rebuilt at the path with other code, nothing holding the old one:
	// a mismatch, never named.
	buildKO(t, ko, modSrcV2, "")
	res = moduleSession(t, Options{Lookup: buildidcache.Options{BuildIDDir: t.TempDir()}, host: host}, ko, id, offs)
	d = mustDSO(t, res, ko, Mismatch)
	for off, fn := range moduleNames(res, d) {
		if fn != "" {
			t.Errorf("mismatched module: offset %#x named %q", off, fn)
		}
	}
	assertNoName(t, res, "mod_v2_only", "mod_v2_entry", "mod_first")
}

// A module whose text starts with another section than .text: offsets
// from its load address are not .text offsets, so it is verified but left
// unnamed, and the reason says why.
func TestModuleTextNotFirst(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ko := filepath.Join(dir, "odd.ko")
	src := modSrc + `__attribute__((section(".text.hot"), noinline)) void mod_hot(long n) { msink += n; }` + "\n"
	id := buildKO(t, ko, src, "SECTIONS { .text.hot : { *(.text.hot) } .text : { *(.text) } }\n")
	res := moduleSession(t, Options{Lookup: buildidcache.Options{BuildIDDir: t.TempDir()}, host: notLoaded(t)}, ko, id, []uint64{0x10, 0x20})
	d := mustDSO(t, res, ko, Verified)
	if d.Symbolized || !strings.Contains(d.Reason, ".text.hot precedes .text") {
		t.Errorf("symbolized %v, reason %q", d.Symbolized, d.Reason)
	}
	for off, fn := range moduleNames(res, d) {
		if fn != "" {
			t.Errorf("offset %#x named %q", off, fn)
		}
	}
}

// The module loaded now with the recorded build-id at the recorded
// address: named from /proc/kallsyms, even with no .ko anywhere. Loaded
// elsewhere, or another build: offsets, with the reason.
func TestModuleNamedFromKallsyms(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ko := filepath.Join(dir, "perfcheck-test.ko")
	id := buildKO(t, ko, modSrc, "")
	funcs := readelfTextFuncs(t, ko)
	var offs []uint64
	for _, vs := range funcs {
		offs = append(offs, vs[0]+vs[1]/2)
	}
	// Past the module's data symbol: kallsyms gives no sizes, so the
	// last function runs up to it (as perf's symbols__fixup_end), and
	// nothing after it is named.
	offs = append(offs, 0x3ff0)
	name := "perfcheck_test"

	// Loaded at the recorded address; the .ko deleted.
	host := fakeRunning(t, ko, name, modBase)
	kept := filepath.Join(dir, "kept.ko")
	if err := os.Rename(ko, kept); err != nil {
		t.Fatal(err)
	}
	res := moduleSession(t, Options{Lookup: buildidcache.Options{BuildIDDir: t.TempDir()}, host: host}, ko, id, offs)
	d := mustDSO(t, res, ko, Verified)
	if d.Source != "running-module" || !strings.Contains(d.Reason, "named from /proc/kallsyms") {
		t.Errorf("source %q, reason %q", d.Source, d.Reason)
	}
	got := moduleNames(res, d)
	for fn, vs := range funcs {
		if off := vs[0] + vs[1]/2; got[off] != fn {
			t.Errorf("offset %#x: named %q, want %s", off, got[off], fn)
		}
	}
	if got[0x3ff0] != "" {
		t.Errorf("offset 0x3ff0, past the module's functions, named %q", got[0x3ff0])
	}

	// Loaded at another address now (reloaded since): verified by its
	// build-id, but kallsyms' addresses are not the recording's.
	host = fakeRunning(t, kept, name, modBase+0x10000)
	res = moduleSession(t, Options{Lookup: buildidcache.Options{BuildIDDir: t.TempDir()}, host: host}, ko, id, offs)
	d = mustDSO(t, res, ko, Verified)
	if d.Symbolized || !strings.Contains(d.Reason, fmt.Sprintf("loaded now at %#x, not at %#x", modBase+0x10000, modBase)) {
		t.Errorf("reloaded elsewhere: symbolized %v, reason %q", d.Symbolized, d.Reason)
	}
	assertNoName(t, res, "mod_first", "mod_entry")

	// Another build loaded now at the same address, no .ko: missing.
	other := filepath.Join(dir, "other.ko")
	buildKO(t, other, modSrcV2, "")
	host = fakeRunning(t, other, name, modBase)
	res = moduleSession(t, Options{Lookup: buildidcache.Options{BuildIDDir: t.TempDir()}, host: host}, ko, id, offs)
	d = mustDSO(t, res, ko, Missing)
	assertNoName(t, res, "mod_v2_only", "mod_v2_entry")

	// The .ko back at its path and the module loaded elsewhere: named from
	// the .ko, as the same names.
	if err := os.Rename(kept, ko); err != nil {
		t.Fatal(err)
	}
	host = fakeRunning(t, ko, name, modBase+0x10000)
	res = moduleSession(t, Options{Lookup: buildidcache.Options{BuildIDDir: t.TempDir()}, host: host}, ko, id, offs)
	d = mustDSO(t, res, ko, Verified)
	got = moduleNames(res, d)
	for fn, vs := range funcs {
		if off := vs[0] + vs[1]/2; got[off] != fn {
			t.Errorf("from the .ko: offset %#x: named %q, want %s", off, got[off], fn)
		}
	}
	if !strings.Contains(d.Reason, "named from the .text symbols") {
		t.Errorf("reason %q", d.Reason)
	}
}

// This machine's /proc/kallsyms in the format the module reader expects:
// whatever module lines it has ("[__builtin__ftrace]" on a kernel without
// modules) are read without error, and a name with a path in it is never
// looked up under /sys.
func TestRunningModuleFormats(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/kallsyms"); err != nil {
		t.Skip("no /proc/kallsyms")
	}
	var here hostRoots // this machine's /sys and /proc
	if _, err := symbolize.ReadLoadedModule(here.kallsyms(), "__builtin__ftrace", 0, ^uint64(0)); err != nil && !strings.Contains(err.Error(), "lists no function") {
		t.Errorf("reading this machine's /proc/kallsyms: %v", err)
	}
	for _, bad := range []string{"../../etc", "a/b", "", strings.Repeat("x", 65)} {
		if _, err := here.runningModuleBuildID(bad); err == nil || !strings.Contains(err.Error(), "not a module name") {
			t.Errorf("module name %q: %v", bad, err)
		}
	}
	if n := moduleName("/lib/modules/6.1/kernel/net/nf-tables.ko.xz"); n != "nf_tables" {
		t.Errorf("moduleName: %q", n)
	}
	if n := moduleName("[nf-tables]"); n != "nf_tables" {
		t.Errorf("moduleName: %q", n)
	}
}

// cacheModule files the module compressed (as its distribution ships it,
// .ko.xz) the way perf's build-id cache keeps it: <cache>/<path>/<bid>/elf,
// with no suffix left to tell it is compressed, and the .build-id link.
func cacheModule(t *testing.T, cache, ko string, id buildid.ID) string {
	t.Helper()
	if _, err := exec.LookPath("xz"); err != nil {
		t.Skip("xz not installed: cannot compress a module")
	}
	if b, err := exec.Command("xz", "-k", "-f", ko).CombinedOutput(); err != nil {
		t.Fatalf("xz: %v\n%s", err, b)
	}
	hex := id.String()
	entry := filepath.Join(cache, filepath.Clean("/"+ko+".xz"), hex)
	if err := os.MkdirAll(entry, 0o755); err != nil {
		t.Fatal(err)
	}
	elfPath := filepath.Join(entry, "elf")
	if err := os.Rename(ko+".xz", elfPath); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(cache, ".build-id", hex[:2], hex[2:])
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(entry, link); err != nil {
		t.Fatal(err)
	}
	return elfPath
}

// staleCachedModule builds the test module, keeps it in a fresh perf-style
// cache (compressed, as cacheModule does) and rebuilds it from modSrcV2 at
// its path, so that only the cache holds the module that ran; no module is
// loaded (Options.host is to be notLoaded). It returns the module's path,
// the build-id and .text functions of the one that ran, the cache and the
// cached file.
func staleCachedModule(t *testing.T) (ko string, id buildid.ID, funcs map[string][2]uint64, cache, elfPath string) {
	t.Helper()
	ko = filepath.Join(t.TempDir(), "lib/modules/6.1.0-test/kernel/drivers/misc/perfcheck-test.ko")
	id = buildKO(t, ko, modSrc, "")
	funcs = readelfTextFuncs(t, ko)
	cache = t.TempDir()
	elfPath = cacheModule(t, cache, ko, id)
	buildKO(t, ko, modSrcV2, "")
	return ko, id, funcs, cache, elfPath
}

// perf caches a compressed module as it found it, under <bid>/elf: the
// locator verifies it by its content (buildidcache recognises xz by its
// magic bytes), so naming its frames must decompress it by content too,
// not by a file name that has no .xz to go by.
func TestModuleNamedFromCompressedCacheEntry(t *testing.T) {
	t.Parallel()
	ko, id, funcs, cache, elfPath := staleCachedModule(t)

	var offs []uint64
	want := map[uint64]string{}
	for fn, vs := range funcs {
		off := vs[0] + vs[1]/2
		offs = append(offs, off)
		want[off] = fn
	}
	res := moduleSession(t, Options{Lookup: buildidcache.Options{BuildIDDir: cache}, host: notLoaded(t)}, ko, id, offs)
	d := mustDSO(t, res, ko, Verified)
	if d.Source != "perf-cache" || !d.Symbolized {
		t.Fatalf("source %q, symbolized %v: %s", d.Source, d.Symbolized, d.Reason)
	}
	if !strings.Contains(d.Reason, "named from the .text symbols of ") {
		t.Errorf("the cached module %s is not named from: %s", elfPath, d.Reason)
	}
	got := moduleNames(res, d)
	for off, fn := range want {
		if got[off] != fn {
			t.Errorf("offset %#x: named %q, readelf says %q", off, got[off], fn)
		}
	}
}

// A small gzip stream that inflates far beyond what a module of its size
// can be (concatenated members of zeros, which gzip readers go on through,
// RFC 1952 section 2.2): refused with buildidcache.ErrTooLarge once past
// the bound its compressed size gives, having allocated a small multiple
// of that bound, not of the stream's 300 MiB. Not parallel: the
// allocations are the whole process's.
func TestModuleDecompressionBomb(t *testing.T) {
	var member bytes.Buffer
	zw, err := gzip.NewWriterLevel(&member, gzip.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	zw.Write(make([]byte, 1<<20))
	zw.Close()
	bomb := bytes.Repeat(member.Bytes(), 300)
	p := filepath.Join(t.TempDir(), "bomb.ko.gz")
	if err := os.WriteFile(p, bomb, 0o644); err != nil {
		t.Fatal(err)
	}
	// buildidcache's bound: 64 times the input plus 16 MiB.
	bound := uint64(64*len(bomb) + 16<<20)
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	_, err = symbolize.ReadModule(p, nil, 0x1000, nil)
	runtime.ReadMemStats(&m1)
	if !errors.Is(err, buildidcache.ErrTooLarge) || !strings.Contains(err.Error(), p) {
		t.Errorf("ReadModule of a %d-byte gzip bomb: %v; want ErrTooLarge naming the file", len(bomb), err)
	}
	if got := m1.TotalAlloc - m0.TotalAlloc; got > 4*bound {
		t.Errorf("allocated %d MiB for a %d KiB file (bound %d MiB)", got>>20, len(bomb)>>10, bound>>20)
	}
}

// The locator verified the .ko by build-id, then the file at that path
// changed before its symbols were read: the build-id is checked again on
// the bytes parsed, and another build is refused rather than named.
func TestModuleSymbolsCheckBuildIDOfBytesRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ko := filepath.Join(dir, "m.ko")
	id := buildKO(t, ko, modSrc, "")
	if _, err := symbolize.ReadModule(ko, nil, 0x4000, id); err != nil {
		t.Fatalf("the module with the build-id asked for: %v", err)
	}
	elfPath := cacheModule(t, t.TempDir(), ko, id)
	if _, err := symbolize.ReadModule(elfPath, nil, 0x4000, id); err != nil {
		t.Fatalf("its compressed copy: %v", err)
	}
	other := buildKO(t, ko, modSrcV2, "")
	if _, err := symbolize.ReadModule(ko, nil, 0x4000, id); err == nil || !strings.Contains(err.Error(), other.String()) {
		t.Errorf("another build at the path: %v; want an error naming its build-id %s", err, other)
	}
}
