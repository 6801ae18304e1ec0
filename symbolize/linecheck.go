package symbolize

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// maxLineTables bounds what debug/dwarf's LineReader may allocate for one
// line program's directory and file tables, with the files
// DW_LNE_define_file adds, as checkLineTables estimates it. The reader
// makes a slice as long as the count a DWARF 5 header declares before it
// reads an entry (an entry whose format is empty takes no bytes, so no
// size check can catch the count), and joins each file name with its
// directory, so that a small header could make it allocate without bound
// ("fatal error: out of memory", which no recover catches). Real tables,
// even of whole-program LTO units, take a few MB.
const maxLineTables = 64 << 20

// Estimated costs of one table entry besides its strings: a directory's
// string header, a file's LineFile and pointer, each twice for the growth
// of the slice that holds it.
const (
	lineDirCost  = 32
	lineFileCost = 96
)

// lineSections are the sections a line program's header reads, as
// debug/dwarf reads them.
type lineSections struct {
	line, str, lineStr []byte
	order              binary.ByteOrder
}

// checkLineTables estimates what debug/dwarf's LineReader would allocate
// for the tables of the line program at off, whose unit's compilation
// directory is compDir, and returns an error when that is more than
// maxLineTables, or when a table's count is more than the bytes after it
// could hold. A program debug/dwarf refuses by itself before allocating
// (a bad version, a header past the section) is left to it.
func (s *lineSections) checkLineTables(off int64, compDir string) error {
	_, err := s.lineTablesCost(off, compDir)
	return err
}

// lineTablesCost is checkLineTables, with the estimate.
func (s *lineSections) lineTablesCost(off int64, compDir string) (int64, error) {
	if off < 0 || off >= int64(len(s.line)) {
		return 0, nil
	}
	k := &lineCheck{s: s, off: off, c: cursor{b: s.line, pos: int(off), end: len(s.line), order: s.order, sec: ".debug_line"}}
	if !k.header() {
		return 0, nil
	}
	var err error
	if k.version < 5 {
		err = k.tablesV4(compDir)
	} else {
		err = k.tablesV5()
	}
	if err == nil {
		err = k.defineFiles()
	}
	return k.cost, err
}

// lineCheck walks a line program as debug/dwarf's LineReader reads it
// (src/debug/dwarf/line.go), adding up what the reader would allocate.
type lineCheck struct {
	s          *lineSections
	off        int64 // the program's offset in .debug_line
	c          cursor
	version    int
	dwarf64    bool
	prog, end  int    // the program's start and end
	opcodeBase int    //
	opLens     []byte // standard opcodes' operand counts, from opcode 1
	cost       int64
	maxDir     int // longest directory name, joined
}

// header reads the fixed fields of the header; false means a program
// debug/dwarf refuses by itself.
func (k *lineCheck) header() bool {
	c := &k.c
	n := c.fixed(4)
	if n == 0xffffffff {
		k.dwarf64 = true
		n = c.fixed(8)
	}
	if c.err != nil || n > uint64(c.end-c.pos) {
		return false
	}
	k.end = c.pos + int(n)
	k.version = int(c.fixed(2))
	if k.version < 2 || k.version > 5 {
		return false
	}
	if k.version >= 5 {
		c.take(2) // address and segment selector sizes
	}
	hl := c.fixed(4)
	if k.dwarf64 {
		hl = c.fixed(8)
	}
	if c.err != nil || hl > uint64(k.end-c.pos) {
		return false
	}
	k.prog = c.pos + int(hl)
	c.take(1) // minimum_instruction_length
	if k.version >= 4 {
		c.take(1) // maximum_operations_per_instruction
	}
	c.take(3) // default_is_stmt, line_base, line_range
	k.opcodeBase = int(c.u8())
	k.opLens = c.take(uint64(max(k.opcodeBase-1, 0)))
	return c.err == nil
}

// add counts n bytes and fails past maxLineTables.
func (k *lineCheck) add(n int64) error {
	k.cost += n
	if k.cost > maxLineTables {
		return fmt.Errorf(".debug_line offset %#x: line table header: its directory and file tables would take more than %d bytes", k.off, maxLineTables)
	}
	return nil
}

// joined returns the length of a name joined with a directory of dirLen
// bytes, and what the join allocates (its result and path.Clean's).
func joined(dirLen, nameLen int) (n int, cost int64) {
	if dirLen == 0 || nameLen == 0 {
		return nameLen, 0
	}
	n = dirLen + 1 + nameLen
	return n, 2 * int64(n)
}

// tablesV4 walks the directory and file tables of DWARF 2 to 4: strings
// until an empty one, each relative directory joined with compDir, each
// relative file name with its directory.
func (k *lineCheck) tablesV4(compDir string) error {
	c := &k.c
	k.maxDir = len(compDir)
	for {
		d := c.cstring()
		if c.err != nil || d == "" {
			break
		}
		n, cost := len(d), int64(0)
		if d[0] != '/' {
			n, cost = joined(len(compDir), len(d))
		}
		k.maxDir = max(k.maxDir, n)
		if err := k.add(lineDirCost + int64(len(d)) + cost); err != nil {
			return err
		}
	}
	for c.err == nil {
		if done, err := k.fileEntry(); done || err != nil {
			return err
		}
	}
	return nil
}

// fileEntry walks a DWARF 2-4 file entry, of the header or of
// DW_LNE_define_file; done reports the empty name that ends the table.
func (k *lineCheck) fileEntry() (done bool, err error) {
	c := &k.c
	name := c.cstring()
	if c.err != nil || name == "" {
		return true, nil
	}
	c.uleb() // directory index
	c.uleb() // modification time
	c.uleb() // length
	_, cost := joined(k.maxDir, len(name))
	if name[0] == '/' {
		cost = 0
	}
	return false, k.add(lineFileCost + int64(len(name)) + cost)
}

// lnctForm is one (content type, form) pair of a DWARF 5 entry format.
type lnctForm struct{ lnct, form uint64 }

const (
	lnctPath           = 1
	lnctDirectoryIndex = 2
)

// tablesV5 walks the directory and file tables of DWARF 5, each a format
// and a count of entries in it. debug/dwarf makes a slice of count
// entries at once, and reads count entries even past the end of the
// section (as zeros): the count is checked against the bytes that follow
// before anything is read.
func (k *lineCheck) tablesV5() error {
	for _, dirs := range []bool{true, false} {
		perEntry, what := int64(lineFileCost), "files"
		if dirs {
			perEntry, what = lineDirCost, "directories"
		}
		format := k.format()
		count := k.c.uleb()
		if k.c.err != nil {
			return nil
		}
		least := k.minSize(format)
		if least == 0 {
			// Every entry is empty and costs perEntry.
			if count > maxLineTables/uint64(perEntry) {
				return fmt.Errorf(".debug_line offset %#x: line table header declares %d %s of no bytes each", k.off, count, what)
			}
			if err := k.add(int64(count) * perEntry); err != nil {
				return err
			}
			continue
		}
		if left := uint64(k.c.end - k.c.pos); count > left/uint64(least) {
			return fmt.Errorf(".debug_line offset %#x: line table header declares %d %s of at least %d bytes each, %d bytes left", k.off, count, what, least, left)
		}
		for range count {
			if err := k.entryV5(format, dirs, perEntry); err != nil {
				return err
			}
		}
	}
	return nil
}

// format reads a DWARF 5 entry format.
func (k *lineCheck) format() []lnctForm {
	n := k.c.u8()
	f := make([]lnctForm, 0, n)
	for range n {
		f = append(f, lnctForm{k.c.uleb(), k.c.uleb()})
	}
	return f
}

// minSize returns the fewest bytes an entry of format f takes as
// debug/dwarf reads it: forms it does not know take none.
func (k *lineCheck) minSize(f []lnctForm) int {
	n := 0
	for _, p := range f {
		n += k.formSize(p.form)
	}
	return n
}

// formSize returns the size of form, or the fewest bytes it takes.
func (k *lineCheck) formSize(form uint64) int {
	switch form {
	case formString, formStrx, formStrx1, formData1, formBlock, formUdata:
		return 1
	case formStrx2, formData2:
		return 2
	case formStrx3:
		return 3
	case formStrx4, formData4:
		return 4
	case formData8:
		return 8
	case formData16:
		return 16
	case formStrp, formLineStrp, formStrpSup:
		if k.dwarf64 {
			return 8
		}
		return 4
	}
	return 0
}

// entryV5 walks one DWARF 5 directory or file entry: its strings are
// copied, and a path with a directory index is joined with a directory.
func (k *lineCheck) entryV5(format []lnctForm, dir bool, perEntry int64) error {
	c := &k.c
	var pathLen, strBytes int
	var hasDir bool
	for _, p := range format {
		n := 0
		switch p.form {
		case formString:
			n = len(c.cstring())
		case formStrp, formLineStrp:
			off := c.fixed(k.formSize(p.form))
			n = k.s.stringLen(p.form == formLineStrp, off)
		case formBlock:
			c.take(c.uleb())
		case formStrx, formUdata:
			c.uleb()
		default:
			c.take(uint64(k.formSize(p.form)))
		}
		strBytes += n
		switch p.lnct {
		case lnctPath:
			pathLen = n
		case lnctDirectoryIndex:
			hasDir = true
		}
	}
	n, cost := pathLen, int64(0)
	if hasDir {
		n, cost = joined(k.maxDir, pathLen)
	}
	if dir {
		k.maxDir = max(k.maxDir, n)
	}
	return k.add(perEntry + int64(strBytes) + cost)
}

// stringLen returns the length of the string at off of .debug_line_str
// (lineStr) or .debug_str.
func (s *lineSections) stringLen(lineStr bool, off uint64) int {
	sec := s.str
	if lineStr {
		sec = s.lineStr
	}
	if off >= uint64(len(sec)) {
		return 0
	}
	i := bytes.IndexByte(sec[off:], 0)
	if i < 0 {
		return 0
	}
	return i
}

// defineFiles walks the line program for DW_LNE_define_file operations,
// each of which adds a file entry as the header's do.
func (k *lineCheck) defineFiles() error {
	c := &k.c
	c.pos, c.end, c.err = k.prog, k.end, nil
	for c.pos < c.end && c.err == nil {
		op := int(c.u8())
		switch {
		case op >= k.opcodeBase:
			// A special opcode: no operands.
		case op == 0:
			n := c.uleb()
			start := c.pos
			if c.u8() == lneDefineFile {
				if done, err := k.fileEntry(); done || err != nil {
					return err
				}
			}
			if n > uint64(c.end-start) {
				return nil
			}
			c.pos = start + int(n)
		case op == lnsFixedAdvancePC:
			c.take(2)
		default:
			for range k.opLens[op-1] {
				c.uleb()
			}
		}
	}
	return nil
}

const (
	lneDefineFile     = 3
	lnsFixedAdvancePC = 9
)
