package symbolize

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestAliasChoice feeds buildSymTable aliases at one address, in both
// table orders, and checks the name perf's choose_best_symbol
// (tools/perf/util/symbol.c) would keep: sized over zero-sized, non-weak
// over weak, global over local, fewer leading underscores, longer name;
// then the byte-wise smaller, so that table order never decides.
func TestAliasChoice(t *testing.T) {
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
		{"byte-wise smaller on a tie", []sym{{"bcopy", g, fn, 16}, {"acopy", g, fn, 16}}, "acopy"},
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
			tab := buildSymTable(raw)
			s, ok := tab.lookup(0x1000)
			if !ok || s.name != c.want {
				got := "<none>"
				if ok {
					got = s.name
				}
				t.Errorf("%s (reverse=%v): chose %s, want %s", c.why, reverse, got, c.want)
			}
		}
	}
}

// TestIFUNC builds a program with a GNU indirect function
// (__attribute__((ifunc))) and checks its names: the IFUNC symbol shares
// its resolver's address and wins as a global; the implementations keep
// their own names; a call through the PLT (IRELATIVE slot, objdump's
// *ABS*+0xV@plt) is named add@plt, as perf's get_ifunc_name names it.
func TestIFUNC(t *testing.T) {
	needTool(t, "gcc")
	needTool(t, "objdump")
	dir := t.TempDir()
	src := filepath.Join(dir, "ifunc.c")
	os.WriteFile(src, []byte(`#include <stdio.h>
#include <stdlib.h>
static int add_slow(int a, int b) { int r = 0; for (int i = 0; i < b; i++) r++; return a + r; }
static int add_fast(int a, int b) { return a + b; }
static int (*resolve_add(void))(int, int) { return getenv("SLOW") ? add_slow : add_fast; }
int add(int a, int b) __attribute__((ifunc("resolve_add")));
int main(int argc, char **argv) { printf("%d\n", add(argc, 41)); return 0; }
`), 0o644)
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
