package symbolize

import (
	"debug/dwarf"
	"errors"
	"io"
	"sort"
)

// lineSeq is one sequence of a unit's line program: where it starts in the
// program and the addresses it covers.
type lineSeq struct {
	pos    dwarf.LineReaderPos
	lo, hi uint64
	rows   int
}

// lineRows reads a unit's line program as lineRows.
type lineRows struct {
	lr       *dwarf.LineReader
	e        dwarf.LineEntry
	fileOf   func(*dwarf.LineFile) uint32
	lastFile *dwarf.LineFile
	lastIdx  uint32
}

// row converts the entry just read.
func (r *lineRows) row() lineRow {
	if r.e.File != r.lastFile || r.lastFile == nil {
		r.lastFile, r.lastIdx = r.e.File, r.fileOf(r.e.File)
	}
	row := lineRow{addr: r.e.Address, file: r.lastIdx, line: clampU32(r.e.Line), col: clampU32(r.e.Column)}
	if r.e.EndSequence {
		row.file = rowEnd
	}
	return row
}

// decodeLines reads a unit's line program into enc. Rows must go in by
// address, and sequences need not come in address order (GCC puts
// .text.unlikely and .text.startup code in sequences of their own). Most
// units' sequences do (every Go unit's), so a first pass encodes rows as
// they come, and gives up at the first sequence that starts below the end
// of the one before it; then a pass finds each sequence's position and
// extent, and another decodes the sequences in address order straight
// into the table. Neither needs an intermediate slice of rows, and the
// first needs no record per sequence either (a Go unit has one per
// function). Sequences that overlap, or rows that go backwards inside a
// sequence, make it fall back to collecting and sorting all rows (the
// same result when neither happens, as TestDecodeLinesOrder checks).
// Sequences of discarded code (see inExec) are dropped, and so is an
// unterminated last sequence, which has no extent.
func (x *dwarfIndex) decodeLines(lr *dwarf.LineReader, fileOf func(*dwarf.LineFile) uint32, enc *lineEncoder) error {
	r := &lineRows{lr: lr, fileOf: fileOf}
	if !x.sortLines {
		ok, err := x.linesInOrder(r, enc)
		if err != nil || ok {
			return err
		}
		enc.reset()
		lr.Reset()
	}
	seqs, nrows, err := x.lineSeqs(r)
	if err != nil {
		return err
	}
	if seqsOrdered(seqs) && !x.sortLines {
		enc.reserve(nrows)
		err := r.each(seqs, enc.add)
		if !errors.Is(err, errLineOrder) {
			return err
		}
		enc.reset()
	}
	return r.sorted(seqs, nrows, enc)
}

// linesInOrder is decodeLines' first pass: it encodes the rows of the
// kept sequences as they come, and reports false (enc then holds a part
// of the table) at the first sequence that starts below the end of the
// previous kept one, or row below the previous row. When it reports
// true, the table is what the pass that sorts sequences by (start, end)
// would build: each kept sequence starts at or after the end of the one
// before, so that order is the program's.
func (x *dwarfIndex) linesInOrder(r *lineRows, enc *lineEncoder) (bool, error) {
	var prevHi uint64
	var mark lineMark
	start, keep := true, false
	for {
		if err := r.lr.Next(&r.e); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return false, err
		}
		if start {
			start = false
			keep = x.inExec(r.e.Address)
			if keep && r.e.Address < prevHi {
				return false, nil
			}
			mark = enc.mark()
		}
		if keep {
			if err := enc.add(r.row()); err != nil {
				if errors.Is(err, errLineOrder) {
					return false, nil
				}
				return false, err
			}
		}
		if r.e.EndSequence {
			if keep {
				prevHi = r.e.Address
			}
			start = true
		}
	}
	if !start && keep {
		enc.rollback(mark) // the unterminated last sequence
	}
	return true, nil
}

// lineSeqs finds the kept sequences of the program, sorted by start then
// end, and their number of rows.
func (x *dwarfIndex) lineSeqs(r *lineRows) ([]lineSeq, int, error) {
	var seqs []lineSeq
	nrows := 0
	start := true
	var cur lineSeq
	for {
		pos := r.lr.Tell()
		if err := r.lr.Next(&r.e); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, 0, err
		}
		if start {
			cur, start = lineSeq{pos: pos, lo: r.e.Address}, false
		}
		cur.rows++
		if r.e.EndSequence {
			cur.hi = r.e.Address
			if x.inExec(cur.lo) {
				seqs = append(seqs, cur)
				nrows += cur.rows
			}
			start = true
		}
	}
	sort.SliceStable(seqs, func(i, j int) bool {
		if seqs[i].lo != seqs[j].lo {
			return seqs[i].lo < seqs[j].lo
		}
		return seqs[i].hi < seqs[j].hi
	})
	return seqs, nrows, nil
}

// seqsOrdered reports whether no sequence starts below the end of the one
// before it.
func seqsOrdered(seqs []lineSeq) bool {
	for i := 1; i < len(seqs); i++ {
		if seqs[i].lo < seqs[i-1].hi {
			return false
		}
	}
	return true
}

// each calls fn on every row of every sequence of seqs, in order.
func (r *lineRows) each(seqs []lineSeq, fn func(lineRow) error) error {
	for _, s := range seqs {
		r.lr.Seek(s.pos)
		for {
			if err := r.lr.Next(&r.e); err != nil {
				return err // EOF cannot happen: the sequence ended in lineSeqs
			}
			if err := fn(r.row()); err != nil {
				return err
			}
			if r.e.EndSequence {
				break
			}
		}
	}
	return nil
}

// sorted is decodeLines' fallback: it collects every row of seqs and
// sorts them by address into enc.
func (r *lineRows) sorted(seqs []lineSeq, nrows int, enc *lineEncoder) error {
	rows := make([]lineRow, 0, nrows)
	if err := r.each(seqs, func(row lineRow) error { rows = append(rows, row); return nil }); err != nil {
		return err
	}
	// The rows came in sequence order (by start, then end), so a stable
	// sort by address keeps a sequence's own rows in program order and
	// puts the end of a sequence before the start of one that begins
	// where it ends. A row at a sequence's end address has no extent
	// (DWARF 5 section 6.2.5.3: the end_sequence row's address is one
	// past the last byte), so it must not win over the end row.
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].addr < rows[j].addr })
	enc.reserve(len(rows))
	for _, row := range rows {
		if err := enc.add(row); err != nil {
			return err
		}
	}
	return nil
}
