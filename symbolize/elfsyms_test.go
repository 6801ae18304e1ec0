package symbolize

import (
	"debug/elf"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
)

// TestAppendSymtab checks appendSymtab, which reads .symtab into
// anonymous memory, against appendELFSyms over elf.File.Symbols (what it
// replaced) on a Go program for amd64 and for 386 (ELF32), a gcc program,
// and a static gcc program (whose glibc brings IFUNC symbols, returned
// for pltSymbols): the same code symbols in the same order, and the same
// IFUNC symbols.
func TestAppendSymtab(t *testing.T) {
	t.Parallel()
	gobin := needTool(t, "go")
	dir := goProgDir(t)
	bins := map[string]string{"go-amd64": buildGoProg(t)}
	p386 := filepath.Join(dir, "goprog-386")
	if o, err := goBuildFor(gobin, dir, p386, "386"); err != nil {
		t.Fatalf("go build for 386: %v\n%s", err, o)
	}
	bins["go-386"] = p386
	wantIfuncs := false
	if _, err := exec.LookPath("gcc"); err == nil {
		bins["gcc"] = compile(t, t.TempDir(), "prog", "gcc", testdataPath(t, "prog.c"), "-O2", "-g")
		sdir := t.TempDir()
		if err := exec.Command("gcc", "-static", "-O2", "-o", filepath.Join(sdir, "static"), testdataPath(t, "prog.c")).Run(); err == nil {
			bins["gcc-static"] = filepath.Join(sdir, "static")
			wantIfuncs = true
		} else {
			t.Logf("no static glibc (%v): IFUNC symbols not checked", err)
		}
	}
	for name, p := range bins {
		t.Run(name, func(t *testing.T) {
			ef, syms := elfSymbols(t, p)
			want := appendELFSyms(nil, ef, syms, nil)
			var wantIF []elf.Symbol
			for _, s := range syms {
				if elf.ST_TYPE(s.Info) == elf.STT_GNU_IFUNC {
					wantIF = append(wantIF, s)
				}
			}
			got, gotIF := appendSymtab(nil, ef)
			if len(want) == 0 {
				t.Fatal("no code symbol: the test would check nothing")
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%d code symbols, want %d (or they differ)", len(got), len(want))
				for i := range min(len(got), len(want)) {
					if got[i] != want[i] {
						t.Fatalf("first difference at %d: %+v, want %+v", i, got[i], want[i])
					}
				}
			}
			if !reflect.DeepEqual(gotIF, wantIF) {
				t.Errorf("IFUNC symbols: %d, want %d", len(gotIF), len(wantIF))
			}
			if name == "gcc-static" && wantIfuncs && len(wantIF) == 0 {
				t.Error("a static glibc program with no IFUNC symbol: the test would not check them")
			}
			t.Logf("%d code symbols, %d IFUNC", len(got), len(gotIF))
		})
	}
}
