package symbolize

import (
	"testing"
	"unsafe"
)

// TestDWARFNamesShareSymbols symbolizes a Go program once with its symbol
// table loaded first (as perfcheck symbolize does, for Warnings) and once
// without, demands the same answers, and checks that in the first, the
// functions of decoded units named as the symbol at their address use the
// symbol table's copy of the name (those whose name comes from the name
// caches, out-of-line copies of functions inlined elsewhere, keep the
// cache's: it is shared with the units that inline them).
func TestDWARFNamesShareSymbols(t *testing.T) {
	t.Parallel()
	p := buildGoProg(t)
	addrs := textAddrs(t, p, 2000)
	shared, plain := mustOpen(t, p), mustOpen(t, p)
	shared.Warnings() // loads the symbol table before any unit is decoded
	for _, a := range addrs {
		got, err1 := shared.Frames(a, nil)
		want, err2 := plain.Frames(a, nil)
		if fmtOurs(got) != fmtOurs(want) || (err1 == nil) != (err2 == nil) {
			t.Fatalf("%#x: with the symbol table loaded first %s (%v), without %s (%v)", a, fmtOurs(got), err1, fmtOurs(want), err2)
		}
	}
	x := shared.loadDWARF()
	st := shared.loadSyms()
	if x == nil || st == nil {
		t.Fatal("no DWARF or no symbol table")
	}
	n, same := 0, 0
	for u := range x.units {
		ui := x.units[u].info.Load()
		if ui == nil {
			continue
		}
		for _, r := range ui.roots {
			sc := &ui.scopes[r.scope]
			addr := ui.base + uint64(sc.lo)
			s, ok := st.lookup(addr)
			name := ui.names[sc.name&^nameLinkage]
			if !ok || s.start != addr || s.name != name {
				continue
			}
			if unsafe.StringData(s.name) == unsafe.StringData(name) {
				same++
			}
			n++
		}
	}
	if n == 0 {
		t.Fatal("no function named as its symbol: the test would check nothing")
	}
	if same == 0 {
		t.Errorf("none of %d functions named as their symbol shares its name", n)
	}
	t.Logf("%d of %d functions named as their symbol share its name", same, n)
}
