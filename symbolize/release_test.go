package symbolize

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// rangeUnits returns one address in each unit of x that has code ranges.
func rangeUnits(x *dwarfIndex) []uint64 {
	seen := map[int32]bool{}
	var addrs []uint64
	for _, r := range x.ranges {
		if !seen[r.unit] {
			seen[r.unit] = true
			addrs = append(addrs, r.lo)
		}
	}
	return addrs
}

// TestDWARFReleasedWhenAllUnitsDecoded builds a program with a unit of data
// alone (no code, so no address ever falls in it) besides the units with
// code: once an address of every unit with code has been looked up, the
// raw sections, the name cache and the decode buffers must be released,
// and lookups still give the same answers.
func TestDWARFReleasedWhenAllUnitsDecoded(t *testing.T) {
	t.Parallel()
	gcc := needTool(t, "gcc")
	dir := t.TempDir()
	data := filepath.Join(dir, "data.c")
	if err := os.WriteFile(data, []byte("struct pt { int x, y; };\nstruct pt table[4] = {{1, 2}, {3, 4}};\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := compile(t, dir, "prog", gcc, testdataPath(t, "prog.c"), "-O2", "-g", data)
	b := mustOpenOpts(t, p, Options{MaxDecodedDWARF: -1, NoDebugFile: true})
	x := b.loadDWARF()
	if x == nil || !x.hasData {
		t.Fatalf("%s: no DWARF", p)
	}
	addrs := rangeUnits(x)
	if len(addrs) >= len(x.units) {
		t.Fatalf("%s: %d units, all with code: the test needs one without", p, len(x.units))
	}
	var want [][]Frame
	for _, a := range addrs {
		want = append(want, mustFrames(t, b, a))
	}
	x.mu.Lock()
	pending, released, names := x.pending, x.d == nil, x.names
	x.mu.Unlock()
	if pending != 0 || !released || names != nil || x.dies != nil {
		t.Errorf("every unit with code decoded (%d of %d units): pending %d, sections released %v, name cache %d entries, DIE reader kept %v",
			len(addrs), len(x.units), pending, released, len(names), x.dies != nil)
	}
	for i, a := range addrs {
		if got := mustFrames(t, b, a); !reflect.DeepEqual(got, want[i]) {
			t.Errorf("%#x after release: %s, before %s", a, fmtOurs(got), fmtOurs(want[i]))
		}
	}
}

// TestDWARFNameCacheBounded cycles lookups over every unit of a
// twelve-unit program under a budget that evicts every unit but the last
// one decoded: the sections stay loaded (units come back), and the cache
// of names that inlined calls refer to must not grow with every unit ever
// decoded, outside the budget; it may hold at most what one unit's decode
// needs.
func TestDWARFNameCacheBounded(t *testing.T) {
	t.Parallel()
	p := buildMultiUnit(t)
	ref := mustOpenOpts(t, p, Options{MaxDecodedDWARF: -1, NoDebugFile: true})
	rx := ref.loadDWARF()
	if rx == nil {
		t.Fatalf("%s: no DWARF", p)
	}
	// What each unit's decode adds to the cache, without a bound.
	perUnit, total := 0, 0
	for _, a := range rangeUnits(rx) {
		n := len(rx.names)
		mustFrames(t, ref, a)
		if rx.names == nil {
			break // every unit decoded: the cache was dropped
		}
		perUnit = max(perUnit, len(rx.names)-n)
		total = len(rx.names)
	}
	if total <= perUnit {
		t.Fatalf("%s: the name cache holds %d entries at most per unit and %d in all: the test needs several units that fill it", p, perUnit, total)
	}
	b := mustOpenOpts(t, p, Options{MaxDecodedDWARF: 1, NoDebugFile: true})
	x := b.loadDWARF()
	addrs := rangeUnits(x)
	for round := 0; round < 3; round++ {
		for _, a := range addrs {
			mustFrames(t, b, a)
			x.mu.Lock()
			n, evictions := len(x.names), x.evictions
			x.mu.Unlock()
			if n > perUnit {
				t.Fatalf("round %d, %#x: the name cache holds %d entries after %d evictions, more than one unit's %d (%d for every unit)", round, a, n, evictions, perUnit, total)
			}
		}
	}
}
