package symbolize

import (
	"debug/dwarf"
	"debug/elf"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"testing"
)

// TestLineTable checks the packed line table against a plain search of the
// rows it was built from: random rows with repeated addresses, repeated
// positions (which the table leaves out), end rows, large and negative
// line steps, columns and file changes, looked up at every row address,
// one byte either side and random addresses. A lookup's answer is the
// row's file, line and column (and whether it ends a sequence), not its
// address: a row left out answers through the one before it.
func TestLineTable(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewSource(1))
	for _, n := range []int{0, 1, lineBlock - 1, lineBlock, lineBlock + 1, 1000} {
		rows := make([]lineRow, n)
		addr := uint64(0x400000)
		for i := range rows {
			switch r.Intn(4) {
			case 0: // same address as the previous row
			case 1:
				addr += uint64(r.Intn(1 << 20))
			default:
				addr += uint64(r.Intn(16))
			}
			rows[i] = lineRow{addr: addr, file: uint32(r.Intn(3)), line: uint32(r.Intn(5000)), col: uint32(r.Intn(3) * 40)}
			if r.Intn(10) == 0 {
				rows[i].file = rowEnd
			}
			if r.Intn(50) == 0 {
				rows[i].line = 1<<32 - 1
			}
			if i > 0 && r.Intn(3) == 0 { // the position again (is_stmt changes)
				rows[i].file, rows[i].line, rows[i].col = rows[i-1].file, rows[i-1].line, rows[i-1].col
			}
		}
		distinct := 0
		for i, row := range rows {
			if i == 0 || row.file != rows[i-1].file || row.line != rows[i-1].line || row.col != rows[i-1].col {
				distinct++
			}
		}
		var enc lineEncoder
		for _, row := range rows {
			if err := enc.add(row); err != nil {
				t.Fatal(err)
			}
		}
		tab := enc.table()
		if got := len(tab.all()); got != distinct {
			t.Fatalf("%d rows, %d of them repeating the one before: table has %d rows, want %d", n, n-distinct, got, distinct)
		}
		want := func(a uint64) (lineRow, bool) {
			i := sort.Search(len(rows), func(i int) bool { return rows[i].addr > a }) - 1
			if i < 0 {
				return lineRow{}, false
			}
			return rows[i], true
		}
		check := func(a uint64) {
			got, gok := tab.lookup(a)
			w, wok := want(a)
			got.addr, w.addr = 0, 0
			if got != w || gok != wok {
				t.Fatalf("%d rows: lookup(%#x) = %+v, %v; want %+v, %v", n, a, got, gok, w, wok)
			}
		}
		check(0)
		check(^uint64(0))
		for _, row := range rows {
			check(row.addr - 1)
			check(row.addr)
			check(row.addr + 1)
		}
		for range 1000 {
			check(0x400000 + uint64(r.Int63n(int64(addr-0x400000+2))))
		}
	}
}

// TestLineTableOrder checks that a row below the previous one is refused,
// so that decodeLines falls back to sorting.
func TestLineTableOrder(t *testing.T) {
	t.Parallel()
	var enc lineEncoder
	if err := enc.add(lineRow{addr: 10}); err != nil {
		t.Fatal(err)
	}
	if err := enc.add(lineRow{addr: 9}); err != errLineOrder {
		t.Fatalf("add of a lower address: %v, want errLineOrder", err)
	}
	// A row left out (the position of the row before) still counts:
	// 15 after it is out of order, though above the last row kept.
	enc.reset()
	for _, a := range []uint64{10, 20} {
		if err := enc.add(lineRow{addr: a, line: 7}); err != nil {
			t.Fatal(err)
		}
	}
	if err := enc.add(lineRow{addr: 15, line: 8}); err != errLineOrder {
		t.Fatalf("add of an address below a left-out row: %v, want errLineOrder", err)
	}
}

// TestDecodeLinesOrder decodes every unit of real binaries twice, once
// placing sequences in address order straight into the table and once
// through the fallback that collects and sorts every row (the previous,
// simpler method), and demands the same rows. The gcc -O2 program has
// sequences out of address order (its cold function and main sit in
// .text.unlikely and .text.startup, before .text), which the test checks,
// so the reordering is exercised.
func TestDecodeLinesOrder(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var bins []string
	if ef, err := elf.Open(self); err == nil {
		if ef.Section(".debug_info") != nil {
			bins = append(bins, self) // go test -c keeps DWARF; go test run links with -w
		}
		ef.Close()
	}
	if _, err := exec.LookPath("gcc"); err == nil {
		p := compile(t, t.TempDir(), "prog", "gcc", testdataPath(t, "prog.c"), "-O2", "-g")
		if !hasUnorderedSequences(t, p) {
			t.Fatalf("%s: every unit's sequences are in address order; the test would not exercise reordering", p)
		}
		bins = append(bins, p)
	}
	if len(bins) == 0 {
		t.Skip("no gcc, and this test binary has no DWARF")
	}
	for _, p := range bins {
		dx, sx := mustOpen(t, p).loadDWARF(), mustOpen(t, p).loadDWARF()
		if dx == nil || sx == nil || len(dx.units) == 0 {
			t.Fatalf("%s: no DWARF units", p)
		}
		sx.sortLines = true
		rows := 0
		for u := range dx.units {
			if dx.units[u].base == ^uint64(0) {
				continue // no code: lookups never decode it
			}
			du, err1 := dx.unit(int32(u))
			su, err2 := sx.unit(int32(u))
			if err1 != nil || err2 != nil {
				t.Fatalf("%s: unit %d: %v, %v", p, u, err1, err2)
			}
			// Files are numbered in the order the rows meet them,
			// which differs between the two orders: compare names.
			a, b := du.namedRows(), su.namedRows()
			if !slices.Equal(a, b) {
				for i := range min(len(a), len(b)) {
					if a[i] != b[i] {
						t.Errorf("row %d: %+v in sequence order, %+v sorted", i, a[i], b[i])
					}
				}
				t.Fatalf("%s: unit %d: %d rows decoded in sequence order, %d sorted; they differ", p, u, len(a), len(b))
			}
			fa, fb := du.fileNames(), su.fileNames()
			slices.Sort(fa)
			slices.Sort(fb)
			if !slices.Equal(fa, fb) {
				t.Fatalf("%s: unit %d: file tables differ", p, u)
			}
			rows += len(a)
		}
		if rows == 0 {
			t.Fatalf("%s: no line rows", p)
		}
		t.Logf("%s: %d units, %d rows", filepath.Base(p), len(dx.units), rows)
	}
}

func mustOpen(t *testing.T, p string) *Binary {
	t.Helper()
	b, err := Open(p, Options{NoDebugFile: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// hasUnorderedSequences reports whether a unit of p has a line sequence
// that starts below the one before it, read with debug/dwarf.
func hasUnorderedSequences(t *testing.T, p string) bool {
	ef, err := elf.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	d, err := ef.DWARF()
	if err != nil {
		t.Fatal(err)
	}
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if e == nil {
			return false
		}
		if e.Tag != dwarf.TagCompileUnit {
			r.SkipChildren()
			continue
		}
		lr, err := d.LineReader(e)
		if err != nil {
			t.Fatal(err)
		}
		r.SkipChildren()
		if lr == nil {
			continue
		}
		var le dwarf.LineEntry
		var last uint64
		start := true
		for lr.Next(&le) == nil {
			if start && le.Address < last {
				return true
			}
			start = le.EndSequence
			if start {
				last = le.Address
			}
		}
	}
}

// TestRel checks the clipping of unit-relative scope addresses: below the
// base is 0, beyond 32 bits is the largest offset, which no lookup offset
// reaches (lookupFrames treats such addresses as outside every scope).
func TestRel(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		addr, base uint64
		want       uint32
	}{
		{0x1000, 0x1000, 0},
		{0x1fff, 0x1000, 0xfff},
		{0x0fff, 0x1000, 0},
		{0x1000 + 1<<32 - 2, 0x1000, 1<<32 - 2},
		{0x1000 + 1<<32 - 1, 0x1000, 1<<32 - 1},
		{0x1000 + 1<<33, 0x1000, 1<<32 - 1},
		{^uint64(0), 0, 1<<32 - 1},
	} {
		if got := rel(c.addr, c.base); got != c.want {
			t.Errorf("rel(%#x, %#x) = %#x, want %#x", c.addr, c.base, got, c.want)
		}
	}
}

// TestLineRollback checks that rolling back forgets the rows added since
// the mark, for what the encoder leaves out and refuses too: a row that
// repeats the last one kept before the mark is left out, and one below a
// forgotten row's address is in order.
func TestLineRollback(t *testing.T) {
	t.Parallel()
	var enc lineEncoder
	must := func(r lineRow) {
		t.Helper()
		if err := enc.add(r); err != nil {
			t.Fatal(err)
		}
	}
	must(lineRow{addr: 10, line: 1})
	m := enc.mark()
	must(lineRow{addr: 30, line: 2})
	must(lineRow{addr: 40, line: 3})
	enc.rollback(m)
	must(lineRow{addr: 20, line: 1}) // the position of the row at 10
	must(lineRow{addr: 25, line: 4})
	tab := enc.table()
	got := tab.all()
	want := []lineRow{{addr: 10, line: 1}, {addr: 25, line: 4}}
	if !slices.Equal(got, want) {
		t.Fatalf("rows after rollback: %+v, want %+v", got, want)
	}
}

// all decodes every row, in order.
func (t *lineTable) all() []lineRow {
	var rows []lineRow
	for b := range t.blockAddr {
		p := t.block(b)
		cur := lineRow{addr: t.blockAddr[b]}
		for len(p) > 0 {
			cur, p = decodeRow(p, cur)
			rows = append(rows, cur)
		}
	}
	return rows
}
