//go:build linux

package symbolize

import (
	"debug/dwarf"
	"errors"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// openDropping opens p and returns its DWARF index, which must drop pages.
func openDropping(t *testing.T, p string, o Options) (*Binary, *dwarfIndex) {
	t.Helper()
	b := mustOpenOpts(t, p, o)
	x := b.loadDWARF()
	if x == nil || x.drop == nil || x.drop.info == nil || x.drop.line == nil {
		t.Fatalf("%s: .debug_info and .debug_line are not decompressed into anonymous memory: the test needs them so", p)
	}
	return b, x
}

// forCompressions runs test on the Go program as its linker compresses
// its DWARF (zlib: units are filled again by range) and with its DWARF
// recompressed with zstd by objcopy (sections decompressed again whole).
func forCompressions(t *testing.T, test func(t *testing.T, p string)) {
	p := buildGoProg(t)
	z := filepath.Join(t.TempDir(), "goprog-zstd")
	if o, err := exec.Command(needTool(t, "objcopy"), "--compress-debug-sections=zstd", p, z).CombinedOutput(); err != nil {
		t.Fatalf("objcopy --compress-debug-sections=zstd: %v\n%s", err, o)
	}
	for _, c := range []struct {
		name, path string
		partial    bool
	}{{"zlib", p, true}, {"zstd", z, false}} {
		t.Run(c.name, func(t *testing.T) {
			_, x := openDropping(t, c.path, Options{})
			x.mu.Lock()
			partial := x.drop.partial
			x.mu.Unlock()
			if partial != c.partial {
				t.Fatalf("%s: partial refills %v, want %v", c.name, partial, c.partial)
			}
			test(t, c.path)
		})
	}
}

// resident returns which pages of mem are resident (mincore(2)).
func resident(t *testing.T, mem []byte) []byte {
	t.Helper()
	page := os.Getpagesize()
	vec := make([]byte, (len(mem)+page-1)/page)
	if _, _, e := syscall.Syscall(syscall.SYS_MINCORE, uintptr(unsafe.Pointer(&mem[0])), uintptr(len(mem)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatalf("mincore: %v", e)
	}
	return vec
}

// TestDroppedSectionPages symbolizes a Go program with its decompressed
// .debug_info and .debug_line given back unit by unit as units are
// decoded, checks every answer against the same binary with the sections
// kept whole, and that the pages inside every decoded unit's DIEs and
// line program are no longer resident.
func TestDroppedSectionPages(t *testing.T) { forCompressions(t, testDroppedSectionPages) }

func testDroppedSectionPages(t *testing.T, p string) {
	addrs := textAddrs(t, p, 3000)
	b, x := openDropping(t, p, Options{})
	ref, rx := openDropping(t, p, Options{})
	rx.mu.Lock()
	rx.keepWhole()
	rx.mu.Unlock()
	for _, a := range addrs {
		got, err1 := b.Frames(a, nil)
		want, err2 := ref.Frames(a, nil)
		if fmtOurs(got) != fmtOurs(want) || (err1 == nil) != (err2 == nil) {
			t.Fatalf("%#x: with pages dropped %s (%v), sections whole %s (%v)", a, fmtOurs(got), err1, fmtOurs(want), err2)
		}
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	sd := x.drop
	if sd == nil {
		t.Fatal("every unit decoded: the sections were released before the test could look at them; use fewer addresses")
	}
	if sd.dropped == 0 || len(sd.refNames) == 0 {
		t.Fatalf("%d bytes dropped, %d referable names kept: nothing was dropped", sd.dropped, len(sd.refNames))
	}
	page := os.Getpagesize()
	check := func(what string, r *region, spans []dropSpan) {
		res := resident(t, r.mem)
		gone := 0
		for _, s := range spans {
			if !s.gone {
				continue
			}
			gone++
			for pg := (s.lo + page - 1) / page; pg < s.hi/page; pg++ {
				if res[pg]&1 != 0 {
					t.Fatalf("%s: page %d inside dropped span [%#x, %#x) is resident", what, pg, s.lo, s.hi)
				}
			}
		}
		if gone == 0 {
			t.Fatalf("%s: no span dropped", what)
		}
		t.Logf("%s: %d of %d spans dropped", what, gone, len(spans))
	}
	check(".debug_info", sd.info, sd.infoSpans)
	check(".debug_line", sd.line, sd.lineSpans)
	if sd.rng == nil {
		t.Fatal(".debug_rnglists is not dropped: the Go linker compresses it, the test needs it so")
	}
	check(".debug_rnglists", sd.rng, sd.rngGone)
	// Whole lists go, not just their first bytes: most of the section
	// is lists of decoded units.
	gone := 0
	for _, g := range sd.rngGone {
		gone += g.hi - g.lo
	}
	t.Logf(".debug_rnglists: %d of %d bytes in dropped extents", gone, len(x.dies.rnglists))
	if gone < len(x.dies.rnglists)/2 {
		t.Errorf(".debug_rnglists: only %d of %d bytes in dropped extents", gone, len(x.dies.rnglists))
	}
	// What a unit read ends with the end of a list (DW_RLE_end_of_list,
	// 0), read from the sections kept whole.
	whole := rx.dies.rnglists
	for u, e := range sd.unitRng {
		if e[0] >= 0 && (e[1] > len(whole) || whole[e[1]-1] != 0) {
			t.Fatalf("unit %d read range lists [%#x, %#x), which does not end a list", u, e[0], e[1])
		}
	}
	if sd.refills != 0 {
		t.Errorf("%d refills: the names of referable DIEs should have answered every cross-unit reference of a Go program", sd.refills)
	}
}

// TestDroppedSectionRefill reads dropped bytes again both ways a decode
// can need them: a cross-unit name that refNames does not hold, and a
// unit decoded again after the budget evicted it. Both must decompress
// the sections again and give the answers of a binary whose sections stay
// whole, and after maxRefills the sections must stay whole.
func TestDroppedSectionRefill(t *testing.T) { forCompressions(t, testDroppedSectionRefill) }

func testDroppedSectionRefill(t *testing.T, p string) {
	addrs := textAddrs(t, p, 300)

	// A name in a dropped unit, refNames emptied.
	b, x := openDropping(t, p, Options{})
	for _, a := range addrs[:100] {
		mustFrames(t, b, a)
	}
	x.mu.Lock()
	// A DIE of a decoded unit: with zlib, units not decoded yet are
	// dropped too, and filling one is not a refill.
	decoded := map[int]bool{}
	for u := range x.units {
		if i := x.drop.unitInfo[u]; i >= 0 && x.units[u].info.Load() != nil {
			decoded[int(i)] = true
		}
	}
	var off, want = dieNameAt{}, dieName{}
	for o, dn := range x.drop.refNames {
		if i := x.drop.infoSpanOf(o); i >= 0 && x.drop.infoSpans[i].gone && decoded[i] {
			off.off, off.ok, want = o, true, dn
			break
		}
	}
	if !off.ok {
		x.mu.Unlock()
		t.Fatal("no referable DIE in a dropped, decoded unit")
	}
	x.drop.refNames = map[dwarf.Offset]dieName{}
	x.names = map[dwarf.Offset]dieName{}
	got := x.nameAt(off.off, 0)
	refills, readable := x.drop.refills, !x.drop.infoSpans[x.drop.infoSpanOf(off.off)].gone
	x.redropDecoded()
	gone := x.drop.infoSpans[x.drop.infoSpanOf(off.off)].gone
	x.mu.Unlock()
	if got != want || refills != 1 {
		t.Fatalf("DIE %#x in a dropped unit: %+v after %d refills, want %+v after 1", off.off, got, refills, want)
	}
	if !readable || !gone {
		t.Fatalf("DIE %#x: unit readable after the refill %v, dropped again after the decode %v", off.off, readable, gone)
	}

	// Units evicted and decoded again.
	b, x = openDropping(t, p, Options{MaxDecodedDWARF: 1})
	ref, rx := openDropping(t, p, Options{})
	rx.mu.Lock()
	rx.keepWhole()
	rx.mu.Unlock()
	for round := 0; round < 2; round++ {
		for _, a := range addrs[:60] {
			got, err1 := b.Frames(a, nil)
			want, err2 := ref.Frames(a, nil)
			if fmtOurs(got) != fmtOurs(want) || (err1 == nil) != (err2 == nil) {
				t.Fatalf("round %d, %#x: evicted and decoded again %s (%v), sections whole %s (%v)", round, a, fmtOurs(got), err1, fmtOurs(want), err2)
			}
		}
	}
	x.mu.Lock()
	refills, disabled, evictions, partial := x.drop.refills, x.drop.disabled, x.evictions, x.drop.partial
	x.mu.Unlock()
	if evictions == 0 {
		t.Fatal("no unit evicted: the test would not decode any again")
	}
	if partial {
		// zlib: each unit decoded again fills its own bytes alone,
		// as often as needed.
		if refills == 0 || disabled {
			t.Fatalf("after %d evictions: %d refills, dropping disabled %v; want refills and dropping on", evictions, refills, disabled)
		}
		return
	}
	if refills != maxRefills || !disabled {
		t.Fatalf("after %d evictions: %d refills, dropping disabled %v; want %d refills, then the sections kept whole", evictions, refills, disabled, maxRefills)
	}
}

type dieNameAt struct {
	off dwarf.Offset
	ok  bool
}

// TestDroppedRangeLists reads range lists given back again: rngTouch must
// decompress .debug_rnglists again before the read (the bytes equal those
// of a binary whose sections stay whole) and the decoded units' lists go
// again after the decode (redrop).
func TestDroppedRangeLists(t *testing.T) { forCompressions(t, testDroppedRangeLists) }

func testDroppedRangeLists(t *testing.T, p string) {
	addrs := textAddrs(t, p, 300)
	b, x := openDropping(t, p, Options{})
	_, rx := openDropping(t, p, Options{})
	for _, a := range addrs[:100] {
		mustFrames(t, b, a)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	rx.mu.Lock()
	defer rx.mu.Unlock()
	sd := x.drop
	if sd.rng == nil || len(sd.rngGone) == 0 || sd.refills != 0 {
		t.Fatalf("range lists dropped: region %v, %d extents gone, %d refills; want some gone, none refilled", sd.rng != nil, len(sd.rngGone), sd.refills)
	}
	page := os.Getpagesize()
	var g dropSpan
	for _, s := range sd.rngGone {
		if s.hi-s.lo >= 2*page {
			g = s
			break
		}
	}
	if g.hi == 0 {
		t.Fatal("no dropped extent of two pages or more")
	}
	mid := (g.lo + g.hi) / 2
	x.rngTouch(mid, mid+1)
	sd.rngRead = [2]int{-1, -1}
	if sd.partial {
		// Only the dropped bytes around mid are filled; every byte
		// outside the extents still gone must be the section's.
		j := sort.Search(len(sd.rngGone), func(j int) bool { return sd.rngGone[j].hi > mid })
		if sd.refills != 1 || j < len(sd.rngGone) && sd.rngGone[j].lo <= mid {
			t.Fatalf("a read inside dropped range lists: %d refills, offset %#x still gone; want 1 refill, the offset filled", sd.refills, mid)
		}
		at := 0
		for _, s := range append(sd.rngGone, dropSpan{lo: len(x.dies.rnglists), hi: len(x.dies.rnglists)}) {
			if got, want := x.dies.rnglists[at:s.lo], rx.dies.rnglists[at:s.lo]; string(got) != string(want) {
				t.Fatalf("range lists [%#x, %#x), not dropped, differ from the whole section's after the fill", at, s.lo)
			}
			at = s.hi
		}
	} else {
		if sd.refills != 1 || len(sd.rngGone) != 0 {
			t.Fatalf("a read inside dropped range lists: %d refills, %d extents still gone; want 1 and 0", sd.refills, len(sd.rngGone))
		}
		if got, want := x.dies.rnglists[g.lo:g.hi], rx.dies.rnglists[g.lo:g.hi]; string(got) != string(want) {
			t.Fatalf("range lists [%#x, %#x) differ from the whole section's after the refill", g.lo, g.hi)
		}
	}
	x.rngTouch(0, 1) // not gone: no refill
	sd.rngRead = [2]int{-1, -1}
	if sd.refills != 1 {
		t.Fatalf("a read outside dropped extents refilled (%d refills)", sd.refills)
	}
	x.redropDecoded()
	i := sort.Search(len(sd.rngGone), func(i int) bool { return sd.rngGone[i].hi > mid })
	if i == len(sd.rngGone) || sd.rngGone[i].lo > mid {
		t.Fatalf("offset %#x not dropped again after the refill", mid)
	}
	res := resident(t, sd.rng.mem)
	for _, s := range sd.rngGone {
		for pg := (s.lo + page - 1) / page; pg < s.hi/page; pg++ {
			if res[pg]&1 != 0 {
				t.Fatalf("page %d inside range lists [%#x, %#x) dropped again is resident", pg, s.lo, s.hi)
			}
		}
	}
}

// TestRnglistEnd checks where rnglistEnd finds the end of DWARF 5 range
// lists of every entry kind (DWARF 5 section 7.25).
func TestRnglistEnd(t *testing.T) {
	addr := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	var list []byte
	list = append(list, 1, 0x81, 0x01)                       // base_addressx, 2-byte ULEB
	list = append(list, 2, 3, 4)                             // startx_endx
	list = append(list, 3, 5, 0x80, 0x80, 0x01)              // startx_length
	list = append(list, 4, 1, 2)                             // offset_pair
	list = append(list, 5)                                   // base_address
	list = append(list, addr...)                             //
	list = append(list, 6)                                   // start_end
	list = append(list, append(addr, addr...)...)            //
	list = append(list, 7)                                   // start_length, at a zero address: a parse off by
	list = append(list, append(make([]byte, 8), 0x90, 1)...) // the start_end before it stops at one of its zeros
	list = append(list, 0x2a)                                // unknown: stepped over, as debug/dwarf does
	list = append(list, 0)                                   // end_of_list
	sec := append(append([]byte{0xee, 0xee}, list...), 4, 1, 2, 0)
	if got, want := rnglistEnd(sec, 2, 8), 2+len(list); got != want {
		t.Errorf("end of a list of every kind: %d, want %d", got, want)
	}
	if got, want := rnglistEnd(sec, 2+len(list), 8), len(sec); got != want {
		t.Errorf("end of the next list: %d, want %d", got, want)
	}
	if got := rnglistEnd(sec[:2+5], 2, 8); got != 7 {
		t.Errorf("a list cut short ends at the section's end: %d, want 7", got)
	}
	if got := rnglistEnd([]byte{5, 1, 2, 3, 4, 0, 9}, 0, 4); got != 6 {
		t.Errorf("4-byte addresses: %d, want 6", got)
	}
}

// TestPartialRefill decodes every unit of a Go program, whose linker
// compresses its DWARF with zlib, in a random order, twice, under a
// budget that evicts units all along (so units are decoded again from
// bytes filled again), with checkpoints every 4 KiB (so fills start at
// checkpoints in the middle of units), and compares every answer with
// the same program whose sections objcopy decompressed. A fill that
// writes a wrong byte, or misses a range a decode reads, changes an
// answer or fails a decode.
func TestPartialRefill(t *testing.T) {
	p := buildGoProg(t)
	plain := filepath.Join(t.TempDir(), "plain")
	if o, err := exec.Command(needTool(t, "objcopy"), "--decompress-debug-sections", p, plain).CombinedOutput(); err != nil {
		t.Fatalf("objcopy: %v\n%s", err, o)
	}
	defer func(old int64) { inflateInterval = old }(inflateInterval)
	inflateInterval = 4 << 10
	b, x := openDropping(t, p, Options{MaxDecodedDWARF: 256 << 10})
	ref := mustOpenOpts(t, plain, Options{})
	if rx := ref.loadDWARF(); rx == nil || rx.drop != nil {
		t.Fatalf("%s: sections still compressed", plain)
	}
	x.mu.Lock()
	partial, cps := x.drop.partial, len(x.drop.info.ix.cps)
	x.mu.Unlock()
	if !partial || cps < 10 {
		t.Fatalf("partial refills %v, %d checkpoints in .debug_info: the test needs zlib sections with checkpoints", partial, cps)
	}
	addrs := append(rangeUnits(x), textAddrs(t, p, 800)...)
	r := rand.New(rand.NewSource(5))
	for round := range 2 {
		r.Shuffle(len(addrs), func(i, j int) { addrs[i], addrs[j] = addrs[j], addrs[i] })
		for _, a := range addrs {
			got, err1 := b.Frames(a, nil)
			want, err2 := ref.Frames(a, nil)
			if fmtOurs(got) != fmtOurs(want) || (err1 == nil) != (err2 == nil) {
				t.Fatalf("round %d, %#x: compressed, filled by range %s (%v), decompressed by objcopy %s (%v)", round, a, fmtOurs(got), err1, fmtOurs(want), err2)
			}
		}
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.drop == nil {
		t.Fatal("sections released: every unit stayed decoded, the budget evicted nothing")
	}
	sd := x.drop
	t.Logf("%d units, %d evictions, %d fills, %d refills of decoded units, %d checkpoints", len(x.units), x.evictions, sd.fills, sd.refills, cps)
	if x.evictions == 0 || sd.refills == 0 || sd.fills < len(rangeUnits(x)) {
		t.Fatalf("%d evictions, %d fills, %d refills: the test must decode units again from filled bytes", x.evictions, sd.fills, sd.refills)
	}
	// Between decodes nothing of .debug_info or .debug_line is resident.
	page := os.Getpagesize()
	for _, c := range []struct {
		r     *region
		spans []dropSpan
	}{{sd.info, sd.infoSpans}, {sd.line, sd.lineSpans}} {
		res := resident(t, c.r.mem)
		for _, s := range c.spans {
			if !s.gone {
				t.Fatalf("span [%#x, %#x) still present between decodes", s.lo, s.hi)
			}
			for pg := (s.lo + page - 1) / page; pg < s.hi/page; pg++ {
				if res[pg]&1 != 0 {
					t.Fatalf("page %d inside span [%#x, %#x) is resident between decodes", pg, s.lo, s.hi)
				}
			}
		}
	}
}

// TestPartialRefillFileChanged rewrites (here: only re-dates) a binary
// under an open Binary whose zlib sections were dropped: a fill, which
// has no checksum to check, must then fail the decode that needs it with
// ErrMalformed rather than decompress whatever the file now holds.
func TestPartialRefillFileChanged(t *testing.T) {
	p := filepath.Join(t.TempDir(), "goprog")
	data, err := os.ReadFile(buildGoProg(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o755); err != nil {
		t.Fatal(err)
	}
	b, x := openDropping(t, p, Options{})
	addrs := rangeUnits(x)
	if len(addrs) < 2 {
		t.Fatal("the test needs two units with code")
	}
	mustFrames(t, b, addrs[0])
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(p, later, later); err != nil {
		t.Fatal(err)
	}
	_, err = b.Frames(addrs[1], nil)
	if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "changed since it was opened") {
		t.Fatalf("a unit decoded after its file changed: %v, want an error saying the file changed", err)
	}
}

// TestLineDroppedEarly checks that .debug_line, which nothing reads at
// load, is given back as soon as it is decompressed (its programs found
// then), and that a program it did not find there (a DW_AT_stmt_list
// pointing elsewhere) makes it whole again, byte for byte.
func TestLineDroppedEarly(t *testing.T) {
	p := buildGoProg(t)
	_, x := openDropping(t, p, Options{})
	_, rx := openDropping(t, p, Options{})
	x.mu.Lock()
	defer x.mu.Unlock()
	rx.mu.Lock()
	defer rx.mu.Unlock()
	sd := x.drop
	r := sd.line
	if !sd.partial || r.early == nil || len(r.early) != len(sd.lineSpans) {
		t.Fatalf("partial %v, %d programs found early, %d line spans: .debug_line was not given back at load", sd.partial, len(r.early), len(sd.lineSpans))
	}
	for _, pg := range resident(t, r.mem) {
		if pg&1 != 0 {
			t.Fatal(".debug_line has resident pages before any decode")
		}
	}
	rx.keepWhole()
	whole := rx.drop.line.data
	if lo, hi, ok := sd.lineExtent(r.data, int64(r.early[0].lo), x.ef.ByteOrder); !ok || lo != r.early[0].lo || hi != r.early[0].hi || r.early == nil {
		t.Fatalf("first program: [%#x, %#x) %v; want [%#x, %#x) from the early spans", lo, hi, ok, r.early[0].lo, r.early[0].hi)
	}
	// An offset inside the first program is no program's start.
	sd.lineExtent(r.data, int64(r.early[0].lo+1), x.ef.ByteOrder)
	if r.early != nil || string(r.data) != string(whole) {
		t.Fatal("a program not found early did not make .debug_line whole again")
	}
}

// TestLineReadBeforeInfo checks the order of the load's reads: .debug_line
// (given back as soon as it is read) is read, and given back, before the
// sections that stay whole until the unit table is built (.debug_info,
// .debug_rnglists) start, so that it is never whole at the same time as
// they are; the sections that stay whole anyway read alongside it.
func TestLineReadBeforeInfo(t *testing.T) {
	p := buildGoProg(t)
	var mu sync.Mutex
	var events []string
	testHookLoadSection = func(name string, done bool) {
		mu.Lock()
		defer mu.Unlock()
		if done {
			name += " done"
		}
		events = append(events, name)
	}
	defer func() { testHookLoadSection = nil }()
	_, x := openDropping(t, p, Options{})
	testHookLoadSection = nil
	if x.secs.find(x.drop.line.data).early == nil {
		t.Fatal(".debug_line was not given back at load: the test would check nothing")
	}
	at := func(ev string) int {
		t.Helper()
		i := slices.Index(events, ev)
		if i < 0 {
			t.Fatalf("no %q in the load's reads %v", ev, events)
		}
		return i
	}
	lineDone := at("line done")
	for _, name := range []string{"info", "rnglists"} {
		if at(name) < lineDone {
			t.Errorf("%s read before .debug_line was given back: %v", name, events)
		}
	}
	if at("abbrev") > lineDone {
		t.Errorf(".debug_abbrev (whole anyway) not read alongside .debug_line: %v", events)
	}
}

// TestKeepAllRefNamesAsOneWalk checks that the names kept at load by two
// walks over halves of .debug_info are those one walk of every unit
// finds: every subprogram DIE that other DIEs can refer to (inline or
// declaration), with its name, in a program of many units.
func TestKeepAllRefNamesAsOneWalk(t *testing.T) {
	p := buildGoProg(t)
	_, x := openDropping(t, p, Options{})
	_, rx := openDropping(t, p, Options{})
	rx.mu.Lock()
	defer rx.mu.Unlock()
	rx.keepWhole()
	want := map[dwarf.Offset]string{}
	var e die
	for u := range rx.units {
		w, err := rx.walker(rx.units[u].entry)
		if err != nil {
			t.Fatal(err)
		}
		for {
			ok, err := w.next(&e)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			switch {
			case e.tag == dwarf.TagSubprogram:
				if e.has&(hasInline|hasDecl) != 0 {
					name, _, _ := rx.nameOf(&e, 0)
					want[e.off] = name
				}
			case skipsChildren(e.tag):
				if err := w.skipChildren(&e); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if len(x.units) < 4 || len(want) < 100 {
		t.Fatalf("%d units, %d referable subprograms: the test would check little", len(x.units), len(want))
	}
	got := x.drop.refNames
	if len(got) != len(want) {
		t.Errorf("%d names kept, one walk finds %d", len(got), len(want))
	}
	for off, name := range want {
		if dn, ok := got[off]; !ok || dn.name != name {
			t.Fatalf("DIE %#x: kept %q (%v), one walk finds %q", off, dn.name, ok, name)
		}
	}
}
