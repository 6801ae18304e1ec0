package symbolize

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPLTCross names the PLT stubs of i386 and AArch64 binaries built in the
// test with Debian's cross compilers (gcc-i686-linux-gnu,
// gcc-aarch64-linux-gnu; the test skips an architecture whose compiler or
// objdump is missing): every stub that objdump -d labels foo@plt must be
// foo@plt for us at its first and last byte, in PIE and non-PIE binaries,
// with IBT's .plt.sec on i386 and BTI/PAC stubs on AArch64. An IFUNC
// called through the PLT of a non-PIE binary (an IRELATIVE slot, labelled
// *ABS*+0xV@plt by objdump, *ABS*@plt on i386 whose REL relocations keep
// the resolver's address in the slot) must be named after the IFUNC, as
// perf's get_ifunc_name does. A -O2 -g build of prog.c also goes through
// the whole differential test against addr2line and llvm-symbolizer
// (32-bit DWARF and symbols on i386, AArch64 code).
func TestPLTCross(t *testing.T) {
	t.Parallel()
	ifuncSrc := filepath.Join(t.TempDir(), "ifunc.c")
	os.WriteFile(ifuncSrc, []byte(ifuncC), 0o644)
	arches := []struct {
		triplet string
		machine elf.Machine
		hard    []string // flags for the hardened stub layout
		section string   // the section those stubs are in
	}{
		{"i686-linux-gnu", elf.EM_386, []string{"-fcf-protection=full", "-Wl,-z,ibtplt"}, ".plt.sec"},
		// ld gives BTI stubs to a non-PIE binary (a PIE one binds
		// every call at load time and needs none); pac-plt adds
		// autia1716: 24-byte stubs.
		{"aarch64-linux-gnu", elf.EM_AARCH64, []string{"-mbranch-protection=standard", "-no-pie", "-Wl,-z,force-bti", "-Wl,-z,pac-plt"}, ".plt"},
	}
	for _, a := range arches {
		t.Run(a.triplet, func(t *testing.T) {
			gcc, err := exec.LookPath(a.triplet + "-gcc")
			if err != nil {
				t.Skipf("%s-gcc not installed (Debian: gcc-%s)", a.triplet, strings.TrimSuffix(a.triplet, "-linux-gnu"))
			}
			objdump, err := exec.LookPath(a.triplet + "-objdump")
			if err != nil && a.machine == elf.EM_386 {
				objdump, err = exec.LookPath("objdump") // the host's reads i386 too
			}
			if err != nil {
				t.Skipf("no objdump for %s", a.triplet)
			}
			dir := t.TempDir()
			cases := []struct {
				name  string
				src   string
				flags []string
			}{
				{"pie", testdataPath(t, "prog.c"), []string{"-O2"}},
				{"nopie", testdataPath(t, "prog.c"), []string{"-O2", "-no-pie"}},
				{"hardened", testdataPath(t, "prog.c"), append([]string{"-O2"}, a.hard...)},
				{"ifunc-nopie", ifuncSrc, []string{"-O1", "-no-pie"}},
				{"diff-O2-g", testdataPath(t, "prog.c"), []string{"-O2", "-g"}},
			}
			for i, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					p := compile(t, dir, c.name, gcc, c.src, c.flags...)
					tb := openTestBinary(t, p)
					tb.objdump = objdump
					if tb.ef.Machine != a.machine {
						t.Fatalf("%s: machine %v, want %v", p, tb.ef.Machine, a.machine)
					}
					if c.name == "hardened" {
						checkHardenedPLT(t, tb, a.section)
					}
					if c.name == "diff-O2-g" {
						// The whole differential test (DWARF,
						// inlines, symbols, PLT) on the other
						// architecture.
						diffTest(t, p, Options{}, int64(700+i))
						return
					}
					b, err := Open(p, Options{NoDebugFile: true})
					if err != nil {
						t.Fatal(err)
					}
					defer b.Close()
					checkPLT(t, tb, b)
					if c.name != "ifunc-nopie" {
						return
					}
					add := elfSymbol(t, p, "add")
					if elf.ST_TYPE(add.Info) != elf.STT_GNU_IFUNC {
						t.Fatalf("add is %v, not an IFUNC", elf.ST_TYPE(add.Info))
					}
					stub, ok := tb.pltStubs()[fmt.Sprintf("*ABS*+%#x@plt", add.Value)]
					if !ok {
						// REL (i386) keeps the resolver in the GOT
						// slot, not in the relocation: objdump
						// labels the stub without it.
						stub, ok = tb.pltStubs()["*ABS*@plt"]
					}
					if !ok {
						t.Fatalf("objdump shows no IRELATIVE stub for add: %v", tb.pltStubs())
					}
					if fr := mustFrames(t, b, stub+4); fr[0].Function != "add@plt" {
						t.Errorf("IRELATIVE PLT stub: %q, want add@plt", fr[0].Function)
					}
				})
			}
		})
	}
}

// checkHardenedPLT makes sure the hardened build has the stub layout the
// case is for: i386 IBT stubs (endbr32) in .plt.sec, AArch64 stubs that
// start with BTI c.
func checkHardenedPLT(t *testing.T, tb *testBinary, section string) {
	t.Helper()
	s := tb.ef.Section(section)
	if s == nil {
		t.Fatalf("no %s: the hardened flags did not change the PLT", section)
	}
	d, err := s.Data()
	if err != nil {
		t.Fatal(err)
	}
	var marker []byte
	switch tb.ef.Machine {
	case elf.EM_386:
		marker = []byte{0xf3, 0x0f, 0x1e, 0xfb} // endbr32
	case elf.EM_AARCH64:
		marker = []byte{0x5f, 0x24, 0x03, 0xd5} // bti c
	}
	n := 0
	for off := 0; off+4 <= len(d); off += 4 {
		if string(d[off:off+4]) == string(marker) {
			n++
		}
	}
	if n < 2 {
		t.Fatalf("%s has %d stubs with % x: not the hardened layout", section, n, marker)
	}
}
