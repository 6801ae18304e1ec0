package symbolize

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestAliasChoice feeds buildSymTable aliases at one address, in both
// table orders, and checks the name perf's choose_best_symbol
// (tools/perf/util/symbol.c) would keep: sized over zero-sized, non-weak
// over weak, global over local, fewer leading underscores, longer name;
// then, on a tie, the first in table order (first is the answer then,
// in either order).
func TestAliasChoice(t *testing.T) {
	t.Parallel()
	type sym struct {
		name string
		bind elf.SymBind
		typ  elf.SymType
		size uint64
	}
	g, w, l := elf.STB_GLOBAL, elf.STB_WEAK, elf.STB_LOCAL
	fn, ifn, none := elf.STT_FUNC, elf.STT_GNU_IFUNC, elf.STT_NOTYPE
	cases := []struct {
		why  string
		syms []sym
		want string
	}{
		{"sized beats zero-sized", []sym{{"a_much_longer_label", g, fn, 0}, {"f", l, fn, 16}}, "f"},
		{"non-weak beats weak", []sym{{"memcpy", w, fn, 16}, {"__memcpy_avx", l, fn, 16}}, "__memcpy_avx"},
		{"global beats local", []sym{{"helper_long_name", l, fn, 16}, {"api", g, fn, 16}}, "api"},
		{"fewer underscores", []sym{{"__libc_malloc", g, fn, 16}, {"malloc", g, fn, 16}}, "malloc"},
		{"fewer underscores, weak pair", []sym{{"_IO_puts", w, fn, 16}, {"puts", w, fn, 16}}, "puts"},
		{"longer name", []sym{{"memcpy", g, fn, 16}, {"memmove", g, fn, 16}}, "memmove"},
		{"first in table order on a tie", []sym{{"pthread_once@GLIBC_2.2.5", g, fn, 16}, {"pthread_once@@GLIBC_2.34", g, fn, 16}}, "first"},
		{"a function beats an untyped label", []sym{{"label_x", g, none, 16}, {"func_x", g, fn, 16}}, "func_x"},
		{"an IFUNC is a function", []sym{{"resolve_add", l, fn, 42}, {"add", g, ifn, 42}}, "add"},
		{"glibc hidden alias", []sym{{"__GI___libc_write", l, fn, 16}, {"__libc_write", g, fn, 16}, {"write", w, fn, 16}, {"__write", w, fn, 16}}, "__libc_write"},
	}
	for _, c := range cases {
		for _, reverse := range []bool{false, true} {
			var raw []rawSym
			for i := range c.syms {
				s := c.syms[i]
				if reverse {
					s = c.syms[len(c.syms)-1-i]
				}
				raw = append(raw, rawSym{value: 0x1000, size: s.size, name: s.name, rank: aliasRank(s.bind, s.typ, s.size), limit: 0x2000})
			}
			// Another symbol after, so zero-sized ones are bounded.
			raw = append(raw, rawSym{value: 0x1800, size: 8, name: "next", rank: aliasRank(g, fn, 8), limit: 0x2000})
			want := c.want
			if want == "first" {
				want = raw[0].name
			}
			tab := buildSymTable(raw)
			s, ok := tab.lookup(0x1000)
			if !ok || s.name != want {
				got := "<none>"
				if ok {
					got = s.name
				}
				t.Errorf("%s (reverse=%v): chose %s, want %s", c.why, reverse, got, want)
			}
		}
	}
}

// ifuncC calls add, an IFUNC whose resolver picks one of two bodies
// (TestIFUNC, TestPLTCross).
const ifuncC = `#include <stdio.h>
#include <stdlib.h>
static int add_slow(int a, int b) { int r = 0; for (int i = 0; i < b; i++) r++; return a + r; }
static int add_fast(int a, int b) { return a + b; }
static int (*resolve_add(void))(int, int) { return getenv("SLOW") ? add_slow : add_fast; }
int add(int a, int b) __attribute__((ifunc("resolve_add")));
int main(int argc, char **argv) { printf("%d\n", add(argc, 41)); return 0; }
`

// TestIFUNC builds a program with a GNU indirect function
// (__attribute__((ifunc))) and checks its names: the IFUNC symbol shares
// its resolver's address and wins as a global; the implementations keep
// their own names; a call through the PLT (IRELATIVE slot, objdump's
// *ABS*+0xV@plt) is named add@plt, as perf's get_ifunc_name names it.
func TestIFUNC(t *testing.T) {
	t.Parallel()
	needTool(t, "gcc")
	needTool(t, "objdump")
	dir := t.TempDir()
	src := filepath.Join(dir, "ifunc.c")
	os.WriteFile(src, []byte(ifuncC), 0o644)
	for _, flags := range [][]string{{"-O1"}, {"-O1", "-no-pie"}} {
		p := compile(t, dir, fmt.Sprint("ifunc", len(flags)), "gcc", src, flags...)
		add := elfSymbol(t, p, "add")
		if elf.ST_TYPE(add.Info) != elf.STT_GNU_IFUNC {
			t.Fatalf("%s: add is %v, not an IFUNC", p, elf.ST_TYPE(add.Info))
		}
		b, err := Open(p, Options{NoDebugFile: true})
		if err != nil {
			t.Fatal(err)
		}
		if fr := mustFrames(t, b, add.Value+3); fr[0].Function != "add" {
			t.Errorf("%v: resolver address: %q, want add", flags, fr[0].Function)
		}
		fast := elfSymbol(t, p, "add_fast")
		if fr := mustFrames(t, b, fast.Value); fr[0].Function != "add_fast" {
			t.Errorf("%v: implementation: %q, want add_fast", flags, fr[0].Function)
		}
		tb := openTestBinary(t, p)
		stub, ok := tb.pltStubs()[fmt.Sprintf("*ABS*+%#x@plt", add.Value)]
		if !ok {
			t.Fatalf("%v: objdump shows no IRELATIVE stub for add: %v", flags, tb.pltStubs())
		}
		if fr := mustFrames(t, b, stub+4); fr[0].Function != "add@plt" {
			t.Errorf("%v: IRELATIVE PLT stub: %q, want add@plt", flags, fr[0].Function)
		}
		b.Close()
	}
	if out, err := exec.Command("gcc", "--version").Output(); err == nil {
		t.Logf("%s", out[:min(len(out), 40)])
	}
}

// TestPerfLabels checks untyped labels against perf's rule on the real
// dynamic loader: perf keeps an STT_NOTYPE symbol that has a name, is
// defined (not SHN_UNDEF or SHN_ABS), is not hidden or internal and lies in
// a code section, local or global (elf_sym__is_label and its use in
// dso__load_sym, tools/perf/util/symbol-elf.c). The expected labels come
// from readelf's listing of the file that holds ld.so's .symtab (its
// Debian debug file, libc6-dbg, when ld.so is stripped) with that rule
// applied; each must be what Symbol names at its address, or an alias
// there. ld.so has local labels (_start, _dl_start_user), which a rule
// keeping only global labels dropped, so the test requires one.
func TestPerfLabels(t *testing.T) {
	t.Parallel()
	readelf := needTool(t, "readelf")
	var ldso string
	for _, p := range []string{"/lib64/ld-linux-x86-64.so.2", "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1"} {
		if _, err := os.Stat(p); err == nil {
			ldso = p
			break
		}
	}
	if ldso == "" {
		t.Skip("no ld.so at a known path")
	}
	b, err := Open(ldso, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	src := ldso
	if !hasSymtab(t, ldso) {
		src = b.DebugFile()
		if src == "" || !hasSymtab(t, src) {
			t.Skipf("%s is stripped and its debug file (Debian: libc6-dbg) is not installed", ldso)
		}
	}
	code := readelfCodeSections(t, readelf, src)
	syms := readelfSymtab(t, readelf, src)
	names := map[uint64][]string{}
	for _, s := range syms {
		names[s.value] = append(names[s.value], s.name)
	}
	labels, locals := 0, 0
	for _, s := range syms {
		sec, inCode := code[s.ndx]
		if s.typ != "NOTYPE" || s.name == "" || s.ndx == "UND" || s.ndx == "ABS" ||
			s.vis == "HIDDEN" || s.vis == "INTERNAL" || !inCode || isMappingSymbol(s.name) {
			continue
		}
		if s.value == sec[0]+sec[1] {
			continue // a label at the end of its section (_etext) covers no byte
		}
		name, start, _, ok := b.Symbol(s.value)
		labels++
		if s.bind == "LOCAL" {
			locals++
		}
		if !ok || start != s.value {
			t.Errorf("label %s (%s) at %#x: Symbol gives %q at %#x, ok=%v", s.name, s.bind, s.value, name, start, ok)
			continue
		}
		if name != s.name && !slices.Contains(names[s.value], name) {
			t.Errorf("label %s at %#x: Symbol gives %q, which is no symbol at that address", s.name, s.value, name)
		}
	}
	if locals == 0 {
		t.Fatalf("%s: no local label in code: the test would not tell perf's rule from keeping global labels only", src)
	}
	// The one perf users meet: ld.so's entry code after _start.
	if sym := elfSymbolIn(syms, "_dl_start_user"); sym != nil {
		fr, err := b.Frames(sym.value+1, nil)
		if err != nil || len(fr) == 0 || fr[len(fr)-1].RawName != "_dl_start_user" {
			t.Errorf("Frames(_dl_start_user+1) = %+v, %v; want the function _dl_start_user, as perf names it", fr, err)
		}
	}
	t.Logf("%s: %d labels in code (%d local) named as perf names them", src, labels, locals)
}

type readelfSym struct {
	value                     uint64
	typ, bind, vis, ndx, name string
}

// readelfSymtab parses the .symtab part of readelf -sW.
func readelfSymtab(t *testing.T, readelf, p string) []readelfSym {
	out := run(t, nil, readelf, "-sW", p)
	var syms []readelfSym
	in := false
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "Symbol table ") {
			in = strings.Contains(line, "'.symtab'")
			continue
		}
		f := strings.Fields(line)
		if !in || len(f) < 7 || !strings.HasSuffix(f[0], ":") {
			continue
		}
		v, err := strconv.ParseUint(f[1], 16, 64)
		if err != nil {
			continue
		}
		// Visibility may be followed by bracketed flags
		// ([VARIANT_PCS] on AArch64) before the section index.
		i := 6
		for i < len(f) && strings.HasPrefix(f[i], "[") {
			i++
		}
		if i >= len(f) {
			continue
		}
		s := readelfSym{value: v, typ: f[3], bind: f[4], vis: f[5], ndx: f[i]}
		if i+1 < len(f) {
			s.name = f[i+1]
		}
		syms = append(syms, s)
	}
	if len(syms) == 0 {
		t.Fatalf("readelf -sW %s: no .symtab entries parsed", p)
	}
	return syms
}

// readelfCodeSections maps the index (as readelf prints it in symbol
// listings) of each section with the X flag to its address and size.
func readelfCodeSections(t *testing.T, readelf, p string) map[string][2]uint64 {
	out := run(t, nil, readelf, "-SW", p)
	re := regexp.MustCompile(`^\s*\[\s*(\d+)\]\s+\S+\s+\S+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([A-Za-z]*)\s`)
	m := map[string][2]uint64{}
	for _, line := range strings.Split(string(out), "\n") {
		g := re.FindStringSubmatch(line)
		if g == nil || !strings.Contains(g[4], "X") {
			continue
		}
		addr, _ := strconv.ParseUint(g[2], 16, 64)
		size, _ := strconv.ParseUint(g[3], 16, 64)
		m[g[1]] = [2]uint64{addr, size}
	}
	if len(m) == 0 {
		t.Fatalf("readelf -SW %s: no code section parsed", p)
	}
	return m
}

func elfSymbolIn(syms []readelfSym, name string) *readelfSym {
	for i := range syms {
		if syms[i].name == name {
			return &syms[i]
		}
	}
	return nil
}

func hasSymtab(t *testing.T, p string) bool {
	ef, err := elf.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	return ef.Section(".symtab") != nil
}

// TestColdParts names the cold parts of GCC's hot/cold splits (foo.cold,
// in .text.unlikely): with DWARF, whose subprogram covers both parts with
// DW_AT_ranges, the function and line must be llvm-symbolizer's, which
// names each part after its symbol as perf report does (addr2line's name
// for a cold part depends on which address of the function it was asked
// first); from the symbol table alone the name is the .cold symbol's. The
// C++ program has the hard case: a clone in an anonymous namespace, whose
// DWARF name is only "work".
func TestColdParts(t *testing.T) {
	t.Parallel()
	nm := needTool(t, "nm")
	dir := t.TempDir()
	cases := []struct {
		name, compiler, src string
		flags               []string
		must                string // a cold symbol that must be present
	}{
		{"c-O2-g", "gcc", "prog.c", []string{"-O2", "-g"}, "scale.cold"},
		{"c-O2", "gcc", "prog.c", []string{"-O2"}, "scale.cold"},
		{"cc-O2-g", "g++", "prog.cc", []string{"-O2", "-g"}, "_ZN12_GLOBAL__N_14workEii.constprop.0.cold"},
		{"cc-O2", "g++", "prog.cc", []string{"-O2"}, "_ZN12_GLOBAL__N_14workEii.constprop.0.cold"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := compile(t, dir, c.name, c.compiler, testdataPath(t, c.src), c.flags...)
			dwarf := slices.Contains(c.flags, "-g")
			// nm -S: "ADDR SIZE TYPE NAME" for sized symbols.
			type sym struct {
				name        string
				start, size uint64
			}
			var colds []sym
			for _, line := range strings.Split(string(run(t, nil, nm, "-S", p)), "\n") {
				f := strings.Fields(line)
				if len(f) != 4 || !strings.HasSuffix(f[3], ".cold") || (f[2] != "t" && f[2] != "T") {
					continue
				}
				a, err1 := strconv.ParseUint(f[0], 16, 64)
				n, err2 := strconv.ParseUint(f[1], 16, 64)
				if err1 == nil && err2 == nil && n > 0 {
					colds = append(colds, sym{f[3], a, n})
				}
			}
			if !slices.ContainsFunc(colds, func(s sym) bool { return s.name == c.must }) {
				t.Fatalf("%s: no cold part %s (nm: %v); the test would not cover it", c.name, c.must, colds)
			}
			b, err := Open(p, Options{NoDebugFile: true})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			var addrs []uint64
			for _, s := range colds {
				addrs = append(addrs, s.start, s.start+s.size/2, s.start+s.size-1)
			}
			var ref [][]refFrame
			if dwarf {
				ref = llvmFrames(t, p, addrs)
			}
			for i, a := range addrs {
				s := colds[i/3]
				fr, err := b.Frames(a, nil)
				if err != nil || len(fr) == 0 {
					t.Errorf("%s+%#x: %v", s.name, a-s.start, err)
					continue
				}
				outer := fr[len(fr)-1]
				if !dwarf {
					if outer.RawName != s.name || outer.Function != Demangle(s.name) {
						t.Errorf("%s+%#x from the symbol table: %q (%q), want the cold symbol", s.name, a-s.start, outer.Function, outer.RawName)
					}
					continue
				}
				r := ref[i]
				if len(r) == 0 || normFn(outer.Function) != normFn(r[len(r)-1].fn) || fr[0].Line != r[0].line {
					t.Errorf("%s+%#x: ours %s, llvm-symbolizer %s", s.name, a-s.start, fmtOurs(fr), fmtRef(r))
				}
				if outer.RawName != s.name {
					t.Errorf("%s+%#x: raw name %q, want the cold part's symbol", s.name, a-s.start, outer.RawName)
				}
			}
			t.Logf("%s: %d cold parts, %d addresses", c.name, len(colds), len(addrs))
		})
	}
}

// TestSymtabLocalFile names, from the symbol table alone (no DWARF), two
// static functions of the same name in two files with the file of their
// STT_FILE scope, and a global function with none.
func TestSymtabLocalFile(t *testing.T) {
	t.Parallel()
	gcc := needTool(t, "gcc")
	dir := t.TempDir()
	for _, f := range []struct{ name, src string }{
		{"one.c", "static int helper(int v) { return v * 3 + 1; }\nint fone(int v) { return helper(v) + 2; }\n"},
		{"two.c", "static int helper(int v) { return v * 5 + 7; }\nint ftwo(int v) { return helper(v) - 4; }\n"},
		{"main.c", "int fone(int); int ftwo(int);\nint main(int argc, char **argv) { return fone(argc) + ftwo(argc); }\n"},
	} {
		if err := os.WriteFile(filepath.Join(dir, f.name), []byte(f.src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(gcc, "-O0", "-g0", "-o", "prog", "one.c", "two.c", "main.c")
	cmd.Dir = dir
	if o, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, o)
	}
	p := filepath.Join(dir, "prog")
	_, syms := elfSymbols(t, p)
	b := mustOpenOpts(t, p, Options{NoDebugFile: true})
	defer b.Close()
	found := map[string]bool{} // "name in file"
	file := ""
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FILE {
			file = s.Name
			continue
		}
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || (s.Name != "helper" && s.Name != "fone") {
			continue
		}
		f, err := b.Frames(s.Value, nil)
		if err != nil || len(f) != 1 || f[0].Function != s.Name {
			t.Fatalf("%s at %#x: %v (%v)", s.Name, s.Value, f, err)
		}
		exp := ""
		if elf.ST_BIND(s.Info) == elf.STB_LOCAL {
			exp = file
		}
		found[s.Name+" in "+exp] = true
		if f[0].File != exp {
			t.Errorf("%s at %#x: file %q, want %q", s.Name, s.Value, f[0].File, exp)
		}
	}
	if len(found) != 3 {
		t.Fatalf("found %v: want helper in one.c and two.c and fone", found)
	}
}
