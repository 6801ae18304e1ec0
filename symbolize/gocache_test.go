package symbolize

import (
	"path/filepath"
	"testing"
)

// TestGoInlineCacheOnlyWithoutDWARF checks that .gopclntab's decoded
// tables are cached only for a binary without DWARF (where the table
// answers every lookup), and that the uncached decoder answers as the
// cached one: the same program built with and without DWARF (-w leaves
// the code as it is) is asked every address twice through .gopclntab
// alone, the second time from the cache where there is one.
func TestGoInlineCacheOnlyWithoutDWARF(t *testing.T) {
	t.Parallel()
	gobin := needTool(t, "go")
	dir := goProgDir(t)
	withDWARF, without := filepath.Join(dir, "dwarf"), filepath.Join(dir, "nodwarf")
	for _, v := range []struct{ out, ld string }{{withDWARF, ""}, {without, "-w"}} {
		if o, err := goBuild(gobin, dir, v.out, "-ldflags="+v.ld); err != nil {
			t.Fatalf("go build: %v\n%s", err, o)
		}
	}
	bd, bn := mustOpen(t, withDWARF), mustOpen(t, without)
	gd, gn := bd.loadGo(), bn.loadGo()
	if gd == nil || gd.inline == nil || gn == nil || gn.inline == nil {
		t.Fatal("no .gopclntab inline decoder")
	}
	if bd.loadDWARF() == nil || bn.loadDWARF() != nil {
		t.Fatal("the builds do not differ in DWARF: the test would check nothing")
	}
	if gd.inline.tables != nil {
		t.Error("decoded tables cached for a binary whose DWARF answers")
	}
	if gn.inline.tables == nil {
		t.Fatal("no cache of decoded tables for a binary without DWARF")
	}
	addrs := textAddrs(t, without, 2000)
	for round := range 2 {
		for _, a := range addrs {
			want, wok, werr := gn.frames(bn, a, nil)
			got, gok, gerr := gd.frames(bd, a, nil)
			if fmtOurs(got) != fmtOurs(want) || gok != wok || (gerr == nil) != (werr == nil) {
				t.Fatalf("round %d, %#x: uncached %s (%v, %v), cached %s (%v, %v)", round, a, fmtOurs(got), gok, gerr, fmtOurs(want), wok, werr)
			}
		}
	}
	if gn.inline.cached.Load() == 0 {
		t.Fatal("nothing was cached: the second round did not compare against cached tables")
	}
}

// TestCachePCTables checks when .gopclntab's tables are cached: without a
// DWARF index, or with one that holds no DWARF (a debug file of symbols
// only, DWARF that failed to load), and not beside DWARF that answers.
func TestCachePCTables(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		dw   *dwarfIndex
		want bool
	}{
		{"no index", nil, true},
		{"index without DWARF", &dwarfIndex{}, true},
		{"DWARF", &dwarfIndex{hasData: true}, false},
	} {
		if got := cachePCTables(c.dw); got != c.want {
			t.Errorf("%s: cache %v, want %v", c.name, got, c.want)
		}
	}
}
