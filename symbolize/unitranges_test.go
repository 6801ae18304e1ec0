package symbolize

import (
	"debug/dwarf"
	"path/filepath"
	"reflect"
	"testing"
)

// TestUnitRanges checks that the ranges unitRanges reads for every entry
// of every unit are debug/dwarf's own (Data.Ranges on the entry), on
// DWARF 5 range lists (Go, gcc's default) and DWARF 4 .debug_ranges, and
// that the test met entries with DW_AT_ranges in each.
func TestUnitRanges(t *testing.T) {
	gcc := needTool(t, "gcc")
	dir := t.TempDir()
	bins := map[string]string{
		"go":          buildGoProg(t),
		"gcc dwarf 5": compile(t, dir, "prog5", gcc, testdataPath(t, "prog.c"), "-O2", "-g", "-gdwarf-5"),
		"gcc dwarf 4": compile(t, dir, "prog4", gcc, testdataPath(t, "prog.c"), "-O2", "-g", "-gdwarf-4"),
	}
	for what, p := range bins {
		b := mustOpenOpts(t, p, Options{NoDebugFile: true})
		x := b.loadDWARF()
		if x == nil || !x.hasData {
			t.Fatalf("%s: no DWARF", what)
		}
		x.mu.Lock()
		lists := 0
		for u := range x.units {
			s := &x.units[u]
			rangesOf := x.unitRanges(s.entry)
			r := x.d.Reader()
			r.Seek(s.entry.Offset)
			for {
				e, err := r.Next()
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if e == nil || (e.Tag == dwarf.TagCompileUnit || e.Tag == dwarf.TagPartialUnit) && e.Offset != s.entry.Offset {
					break
				}
				if e.Tag == 0 {
					continue
				}
				got, err1 := rangesOf(e)
				want, err2 := x.d.Ranges(e)
				if !reflect.DeepEqual(got, want) || (err1 == nil) != (err2 == nil) {
					t.Fatalf("%s: entry at %#x (%v): ranges %v (%v), debug/dwarf %v (%v)", what, e.Offset, e.Tag, got, err1, want, err2)
				}
				if e.Tag != dwarf.TagCompileUnit && e.AttrField(dwarf.AttrRanges) != nil && len(want) > 0 {
					lists++
				}
			}
		}
		x.mu.Unlock()
		if lists == 0 {
			t.Errorf("%s: no entry with DW_AT_ranges: the test would not exercise range lists", what)
		}
		t.Logf("%s: %d entries with range lists", what, lists)
	}
}

// buildGoProg builds testdata/goprog (the Go linker compresses its DWARF
// with zlib, so the sections are decompressed into anonymous memory).
func buildGoProg(t *testing.T) string {
	t.Helper()
	gobin := needTool(t, "go")
	dir := goProgDir(t)
	p := filepath.Join(dir, "goprog")
	if o, err := goBuild(gobin, dir, p); err != nil {
		t.Fatalf("go build: %v\n%s", err, o)
	}
	return p
}
