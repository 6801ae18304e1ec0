package symbolize

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/perfcheck/perfcheck/addrspace"
	"github.com/perfcheck/perfcheck/dso"
)

// elfSymbol returns the value of the named symbol of p, read with
// debug/elf directly (not through our index).
func elfSymbol(t *testing.T, p, name string) elf.Symbol {
	t.Helper()
	ef, err := elf.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	syms, _ := ef.Symbols()
	dyn, _ := ef.DynamicSymbols()
	for _, s := range append(syms, dyn...) {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("%s: no symbol %s", p, name)
	return elf.Symbol{}
}

// elfSymbols opens p with debug/elf, for the test's life, and returns it
// with its .symtab symbols as debug/elf reads them.
func elfSymbols(t *testing.T, p string) (*elf.File, []elf.Symbol) {
	t.Helper()
	ef, err := elf.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ef.Close() })
	syms, err := ef.Symbols()
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	return ef, syms
}

func mustFrames(t *testing.T, s Symbolizer, addr uint64) []Frame {
	t.Helper()
	fr, err := s.Frames(addr, nil)
	if err != nil {
		t.Fatalf("Frames(%#x): %v", addr, err)
	}
	return fr
}

// TestBiasNonZeroBasedLibrary builds a shared library linked at a non-zero
// base (as prelinked libraries are), maps each of its PT_LOAD segments the
// way the kernel would at another address, and checks that a runtime
// address in each mapping symbolizes to the function there.
func TestBiasNonZeroBasedLibrary(t *testing.T) {
	t.Parallel()
	needTool(t, "gcc")
	dir := t.TempDir()
	src := filepath.Join(dir, "lib.c")
	os.WriteFile(src, []byte("int lib_a(int x){return x*3+1;}\nint lib_b(int x){return lib_a(x)+2;}\n"), 0o644)
	p := compile(t, dir, "lib.so", "gcc", src, "-O1", "-g", "-shared", "-fPIC", "-Wl,-Ttext-segment=0x10000000")
	b, err := Open(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ef, _ := elf.Open(p)
	defer ef.Close()
	var loads []*elf.Prog
	for _, pr := range ef.Progs {
		if pr.Type == elf.PT_LOAD {
			loads = append(loads, pr)
		}
	}
	if len(loads) < 2 || loads[0].Vaddr != 0x10000000 {
		t.Fatalf("want several PT_LOADs based at 0x10000000, got %d, first at %#x", len(loads), loads[0].Vaddr)
	}
	const loadAddr = 0x7f1234560000
	fn := elfSymbol(t, p, "lib_b")
	var biases []uint64
	for _, pr := range loads {
		// The kernel maps each segment at loadAddr + (p_vaddr - first
		// p_vaddr), page aligned, from the page holding p_offset.
		start := loadAddr + (pr.Vaddr &^ 0xfff) - loads[0].Vaddr
		end := (loadAddr + pr.Vaddr + pr.Memsz - loads[0].Vaddr + 0xfff) &^ 0xfff
		m := addrspace.Mapping{Start: start, Limit: end, Pgoff: pr.Off &^ 0xfff}
		bias, err := b.Bias(m)
		if err != nil {
			t.Fatalf("Bias(%+v): %v", m, err)
		}
		biases = append(biases, bias)
	}
	for _, bias := range biases {
		if bias != biases[0] {
			t.Fatalf("segments give different biases: %#x", biases)
		}
	}
	if want := uint64(loadAddr - 0x10000000); biases[0] != want {
		t.Fatalf("bias %#x, want %#x", biases[0], want)
	}
	runtime := loadAddr + fn.Value - 0x10000000 + 2
	fr := mustFrames(t, b, runtime-biases[0])
	if fr[len(fr)-1].Function != "lib_b" {
		t.Fatalf("runtime %#x: %+v, want lib_b", runtime, fr)
	}
	if _, err := b.Bias(addrspace.Mapping{Start: loadAddr, Limit: loadAddr + 0x1000, Pgoff: 0x7fff0000}); !errors.Is(err, ErrNoMapping) {
		t.Fatalf("offset beyond every PT_LOAD: err %v, want ErrNoMapping", err)
	}
}

// TestBiasLiveProcess maps a real PIE process (sleep) and its libc as
// /proc/PID/maps shows them: every mapping of one file must give the same
// bias, so that the several PT_LOADs of a library agree.
func TestBiasLiveProcess(t *testing.T) {
	t.Parallel()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	cmd := exec.Command(sleep, "5")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill, then reap: deferred separately they ran in the opposite
	// order (Wait first), so the test waited out the sleep.
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var maps []byte
	// Wait for the dynamic loader to map libc.
	for i := 0; i < 200; i++ {
		maps, _ = os.ReadFile(fmt.Sprintf("/proc/%d/maps", cmd.Process.Pid))
		if bytes.Contains(maps, []byte("libc.so")) {
			break
		}
		exec.Command("true").Run()
	}
	perFile := map[string][]addrspace.Mapping{}
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 6 || !strings.HasPrefix(f[5], "/") {
			continue
		}
		lo, hi, _ := strings.Cut(f[0], "-")
		s, _ := strconv.ParseUint(lo, 16, 64)
		e, _ := strconv.ParseUint(hi, 16, 64)
		off, _ := strconv.ParseUint(f[2], 16, 64)
		perFile[f[5]] = append(perFile[f[5]], addrspace.Mapping{Start: s, Limit: e, Pgoff: off})
	}
	checked := 0
	for path, ms := range perFile {
		b, err := Open(path, Options{NoDebugFile: true})
		if err != nil {
			continue
		}
		var first uint64
		for i, m := range ms {
			bias, err := b.Bias(m)
			if err != nil {
				// A mapping of bss-only pages past the file data.
				continue
			}
			if i == 0 {
				first = bias
			} else if bias != first {
				t.Errorf("%s: mapping %+v gives bias %#x, first gave %#x", path, m, bias, first)
			}
			if bias&0xfff != 0 {
				t.Errorf("%s: bias %#x not page aligned", path, bias)
			}
		}
		b.Close()
		checked++
	}
	if checked < 2 {
		t.Fatalf("checked %d mapped files, want the executable and libc at least:\n%s", checked, maps)
	}
}

// TestBiasKernel checks the KASLR rule on an ELF that has a _text symbol:
// perf's kernel map carries the runtime _text in its pgoff.
func TestBiasKernel(t *testing.T) {
	t.Parallel()
	needTool(t, "gcc")
	dir := t.TempDir()
	src := filepath.Join(dir, "k.c")
	os.WriteFile(src, []byte("void _text(void){}\nint main(void){return 0;}\n"), 0o644)
	p := compile(t, dir, "k", "gcc", src, "-no-pie", "-O0")
	b, err := Open(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	text := elfSymbol(t, p, "_text").Value
	const slide = 0x1e000000
	bias, err := b.Bias(addrspace.Mapping{Start: text + slide, Limit: text + slide + 0x100000, Pgoff: text + slide, Kind: dso.Kernel, Path: "[kernel.kallsyms]"})
	if err != nil {
		t.Fatal(err)
	}
	if bias != slide {
		t.Fatalf("kernel bias %#x, want %#x", bias, slide)
	}
	// perf 6.1 names the map [kernel.kallsyms]_stext; this image has no
	// _stext, which must be an error rather than a guess.
	if _, err := b.Bias(addrspace.Mapping{Start: text + slide, Pgoff: text + slide, Kind: dso.Kernel, Path: "[kernel.kallsyms]_stext"}); !errors.Is(err, ErrNoMapping) {
		t.Fatalf("missing reference symbol: %v", err)
	}
	main := elfSymbol(t, p, "main").Value
	if fr := mustFrames(t, b, main+slide-bias); fr[0].Function != "main" {
		t.Fatalf("got %+v", fr)
	}
}

func TestKallsyms(t *testing.T) {
	t.Parallel()
	const listing = "ffffffff81000000 T _text\n" +
		"ffffffff81000000 T startup_64\n" +
		"ffffffff81001000 t secondary\n" +
		"ffffffff81002000 D some_data\n" +
		"ffffffff81003000 W weak_fn\n" +
		"ffffffffc0a00000 t mod_fn\t[mymod]\n"
	b, err := OpenKallsyms(strings.NewReader(listing), "kallsyms", Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		addr uint64
		want string
	}{
		{0xffffffff81000010, "startup_64"}, // alias of _text: fewer leading underscores win, as in perf
		{0xffffffff81001fff, "secondary"},
		{0xffffffff81002800, "secondary"}, // data symbols are not code: secondary extends to weak_fn
		{0xffffffff81003004, "weak_fn"},
		{0xffffffffc0a00010, "mod_fn"},
	} {
		fr := mustFrames(t, b, c.addr)
		if fr[0].Function != c.want {
			t.Errorf("%#x: %q, want %q", c.addr, fr[0].Function, c.want)
		}
	}
	if _, err := b.Frames(0xffffffffc0a00000+kallsymsLastSize, nil); !errors.Is(err, ErrUnknownAddr) {
		t.Errorf("past the last symbol: %v, want ErrUnknownAddr", err)
	}
	if b.Format() != FormatKallsyms {
		t.Errorf("kind %v", b.Format())
	}
	if _, err := OpenKallsyms(strings.NewReader("0000000000000000 T _text\n0000000000000000 t x\n"), "k", Options{}); !errors.Is(err, ErrMalformed) {
		t.Errorf("all-zero kallsyms: %v, want ErrMalformed", err)
	}
	if _, err := OpenKallsyms(strings.NewReader("ffff T\n"), "k", Options{}); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "offset 0") {
		t.Errorf("short line: %v, want ErrMalformed at offset 0", err)
	}
}

// TestProcKallsyms reads the running kernel's /proc/kallsyms through Open
// (a text file not named perf-*.map) and checks a few symbols.
func TestProcKallsyms(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("/proc/kallsyms")
	if err != nil {
		t.Skipf("no /proc/kallsyms: %v", err)
	}
	if bytes.HasPrefix(data, []byte("0000000000000000")) {
		t.Skip("kptr_restrict hides kernel addresses")
	}
	p := filepath.Join(t.TempDir(), "kallsyms")
	os.WriteFile(p, data, 0o644)
	b, err := Open(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() && n < 50 {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || f[1] != "T" || !strings.HasPrefix(f[2], "vfs_") {
			continue
		}
		a, _ := strconv.ParseUint(f[0], 16, 64)
		name, start, _, ok := b.Symbol(a)
		if !ok || start != a {
			t.Errorf("%s at %#x: got %q at %#x", f[2], a, name, start)
		}
		n++
	}
	if n == 0 {
		t.Skip("no vfs_ text symbols in /proc/kallsyms")
	}
}

func TestPerfMap(t *testing.T) {
	t.Parallel()
	const m = "7f0000001000 40 LazyCompile:~foo bar.js:1\n" +
		"0x7f0000001040 0x20 Interpreter stub\n" +
		"7f0000001000 10 LazyCompile:*foo bar.js:1\n"
	p := filepath.Join(t.TempDir(), "perf-1234.map")
	os.WriteFile(p, []byte(m), 0o644)
	b, err := Open(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if b.Format() != FormatPerfMap {
		t.Fatalf("kind %v", b.Format())
	}
	if fr := mustFrames(t, b, 0x7f0000001008); fr[0].Function != "LazyCompile:*foo bar.js:1" {
		t.Errorf("re-jitted code: %q, want the later entry", fr[0].Function)
	}
	if fr := mustFrames(t, b, 0x7f000000105f); fr[0].Function != "Interpreter stub" {
		t.Errorf("got %q", fr[0].Function)
	}
	if _, err := b.Frames(0x7f0000001060, nil); !errors.Is(err, ErrUnknownAddr) {
		t.Errorf("past the end: %v", err)
	}
	if w := b.Warnings(); len(w) != 0 {
		t.Errorf("warnings on a clean map: %q", w)
	}
	if _, err := OpenPerfMap(strings.NewReader("zz 10 x\n\n7f00 \n"), "m", Options{}); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "offset 0") {
		t.Errorf("no valid line: %v", err)
	}
	// A live JIT's map: a bad line in the middle and a half-written last
	// line are skipped and counted, the rest answers.
	live := m + "7f00000020zz 10 garbage\n7f0000003000 80 Baseline:bar baz.js:7\n7f0000004000 4"
	b2, err := OpenPerfMap(strings.NewReader(live), "perf-99.map", Options{})
	if err != nil {
		t.Fatalf("a map with two bad lines: %v", err)
	}
	if fr := mustFrames(t, b2, 0x7f0000003010); fr[0].Function != "Baseline:bar baz.js:7" {
		t.Errorf("after a bad line: %q", fr[0].Function)
	}
	if w := b2.Warnings(); len(w) != 1 || !strings.Contains(w[0], "perf-99.map: 2 malformed") || !strings.Contains(w[0], fmt.Sprintf("offset %d", len(m))) {
		t.Errorf("Warnings() = %q, want 2 skipped lines, the first at offset %d", w, len(m))
	}
}

// TestMiniDebugInfo builds a .gnu_debugdata section as Fedora's
// find-debuginfo does (the .symtab of functions missing from .dynsym,
// xz-compressed, added to the stripped binary) and checks that static
// functions are named from it.
func TestMiniDebugInfo(t *testing.T) {
	t.Parallel()
	needTool(t, "gcc")
	needTool(t, "objcopy")
	needTool(t, "xz")
	dir := t.TempDir()
	p := compile(t, dir, "prog", "gcc", testdataPath(t, "prog.c"), "-O1", "-g")
	mini := filepath.Join(dir, "mini")
	steps := [][]string{
		{"objcopy", "--only-keep-debug", p, mini + ".dbg"},
		{"objcopy", "-S", "--remove-section", ".gdb_index", "--remove-section", ".comment", "--keep-symbol=fib", "--keep-symbol=cmp_points", mini + ".dbg", mini},
		{"xz", "-k", mini},
		{"objcopy", "--strip-all", "--remove-section", ".gnu_debuglink", "--add-section", ".gnu_debugdata=" + mini + ".xz", p, p + ".stripped"},
	}
	for _, s := range steps {
		if o, err := exec.Command(s[0], s[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", s, err, o)
		}
	}
	b, err := Open(p+".stripped", Options{NoDebugFile: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, name := range []string{"fib", "cmp_points"} {
		v := elfSymbol(t, p, name).Value
		fr := mustFrames(t, b, v+1)
		if fr[0].Function != name {
			t.Errorf("%s: got %+v", name, fr)
		}
	}
}

// TestNoAllocsSteadyState checks that a lookup allocates nothing once the
// unit is decoded and the caller passes its buffer back.
func TestNoAllocsSteadyState(t *testing.T) {
	p, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	addrs := textAddrs(t, p, 64)
	var buf []Frame
	// Every address is in .text of a Go test binary with DWARF: each
	// lookup must answer with a named function, or the allocation count
	// below would measure an error path. Two passes reach the steady
	// state: a function that only pclntab names (padding after Go code)
	// has its pc-value tables scanned at its first lookup and decoded at
	// its second.
	for pass := 0; pass < 2; pass++ {
		for _, a := range addrs {
			var err error
			buf, err = b.Frames(a, buf)
			if err != nil || len(buf) == 0 || buf[len(buf)-1].Function == "" {
				t.Fatalf("Frames(%#x) = %v, %v: want a named frame", a, fmtOurs(buf), err)
			}
		}
	}
	buf = make([]Frame, 0, 64)
	i, failed := 0, 0
	allocs := testing.AllocsPerRun(200, func() {
		var err error
		buf, err = b.Frames(addrs[i%len(addrs)], buf)
		if err != nil || len(buf) == 0 {
			failed++
		}
		i++
	})
	if failed != 0 {
		t.Fatalf("%d of %d measured lookups failed", failed, i)
	}
	if allocs != 0 {
		t.Fatalf("%.1f allocations per lookup, want 0", allocs)
	}
}

// TestMalformed damages a real binary in the ways that hurt decoders
// (truncation, corrupted headers and DWARF) and checks that opening and
// symbolizing return errors or answers, never panic.
func TestMalformed(t *testing.T) {
	t.Parallel()
	needTool(t, "gcc")
	dir := t.TempDir()
	p := compile(t, dir, "prog", "gcc", testdataPath(t, "prog.c"), "-O2", "-g")
	orig, _ := os.ReadFile(p)
	tb := openTestBinary(t, p)
	addrs := sampleAddrs(t, tb, rand.New(rand.NewSource(9)), 20)
	ef, _ := elf.Open(p)
	info := ef.Section(".debug_info")
	line := ef.Section(".debug_line")
	ef.Close()
	rng := rand.New(rand.NewSource(3))
	for i := 0; i < 60; i++ {
		d := append([]byte(nil), orig...)
		switch i % 4 {
		case 0:
			d = d[:rng.Intn(len(d))]
		case 1:
			for k := 0; k < 8; k++ {
				d[int(info.Offset)+rng.Intn(int(info.Size))] = byte(rng.Intn(256))
			}
		case 2:
			for k := 0; k < 8; k++ {
				d[int(line.Offset)+rng.Intn(int(line.Size))] = byte(rng.Intn(256))
			}
		case 3:
			for k := 0; k < 4; k++ {
				d[64+rng.Intn(len(d)-64)] = byte(rng.Intn(256))
			}
		}
		q := filepath.Join(dir, fmt.Sprint("bad", i))
		os.WriteFile(q, d, 0o644)
		b, err := Open(q, Options{NoDebugFile: true})
		if err != nil {
			if !strings.Contains(err.Error(), q) {
				t.Errorf("error does not name the file: %v", err)
			}
			continue
		}
		for _, a := range addrs {
			fr, err := b.Frames(a, nil)
			if err != nil && len(fr) != 0 {
				t.Errorf("frames with an error")
			}
		}
		b.Close()
	}
}

// TestRelocatableObject symbolizes a relocatable object (ET_REL, the form
// of kernel modules): addresses are .text offsets, DWARF comes through
// debug/elf's relocation, and the answer must equal addr2line's on the
// object.
func TestRelocatableObject(t *testing.T) {
	t.Parallel()
	needTool(t, "gcc")
	needTool(t, "addr2line")
	dir := t.TempDir()
	p := compile(t, dir, "prog.o", "gcc", testdataPath(t, "prog.c"), "-c", "-O0", "-g")
	b, err := Open(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if bias, err := b.Bias(addrspace.Mapping{Start: 0xffffffffc0a00000, Limit: 0xffffffffc0a10000}); err != nil || bias != 0xffffffffc0a00000 {
		t.Fatalf("module bias %#x, %v: want the mapping start", bias, err)
	}
	for _, name := range []string{"work", "checksum", "main"} {
		v := elfSymbol(t, p, name).Value + 4
		fr := mustFrames(t, b, v)
		out, err := exec.Command("addr2line", "-f", "-e", p, fmt.Sprintf("%#x", v)).Output()
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		got := fmt.Sprintf("%s %s:%d", fr[0].Function, fr[0].File, fr[0].Line)
		want := strings.Join(lines, " ")
		if got != discriminator.ReplaceAllString(want, "") {
			t.Errorf("%s+4: %q, addr2line %q", name, got, want)
		}
	}
}

// TestVDSO copies this process's vDSO out of /proc/self/mem (as perf
// caches it) and symbolizes its exported functions at their runtime
// addresses through the [vdso] mapping.
func TestVDSO(t *testing.T) {
	t.Parallel()
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skip("no /proc/self/maps")
	}
	var m addrspace.Mapping
	for _, l := range strings.Split(string(maps), "\n") {
		if strings.HasSuffix(l, "[vdso]") {
			f := strings.Fields(l)
			lo, hi, _ := strings.Cut(f[0], "-")
			m.Start, _ = strconv.ParseUint(lo, 16, 64)
			m.Limit, _ = strconv.ParseUint(hi, 16, 64)
		}
	}
	if m.Start == 0 {
		t.Skip("no vdso mapped")
	}
	mem, err := os.Open("/proc/self/mem")
	if err != nil {
		t.Skip(err)
	}
	defer mem.Close()
	img := make([]byte, m.Limit-m.Start)
	if _, err := mem.ReadAt(img, int64(m.Start)); err != nil {
		t.Skipf("reading the vdso: %v", err)
	}
	p := filepath.Join(t.TempDir(), "vdso.so")
	os.WriteFile(p, img, 0o644)
	b, err := Open(p, Options{NoDebugFile: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	bias, err := b.Bias(m)
	if err != nil {
		t.Fatal(err)
	}
	ef, err := elf.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	dyn, _ := ef.DynamicSymbols()
	n := 0
	for _, s := range dyn {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Size == 0 {
			continue
		}
		var runtime uint64
		for _, pr := range ef.Progs {
			if pr.Type == elf.PT_LOAD {
				runtime = m.Start + s.Value - pr.Vaddr + pr.Off
				break
			}
		}
		name, start, _, ok := b.Symbol(runtime + 1 - bias)
		if !ok || start != s.Value {
			t.Errorf("%s at runtime %#x: got %q at %#x", s.Name, runtime, name, start)
		}
		n++
	}
	if n == 0 {
		t.Fatal("no vdso functions")
	}
}
