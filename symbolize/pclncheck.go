package symbolize

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// What debug/gosym allocates per function of a table (a Func, its Sym and
// the name cache's entry) and per file name cached, besides the names.
const (
	gosymFuncBytes = 224
	gosymFileBytes = 96
)

// gosymCost returns what debug/gosym allocates to build the table of
// data, a .gopclntab, with gosym.NewTable: a Func and a Sym per function
// of the header's count, made at once before a function is read, then
// each function's name and each file's name, copied from wherever the
// records point (records may point far into a table, or all at one long
// name). It reads the header and records as src/debug/gosym/pclntab.go
// does and stops where gosym would stop on a panic (which it recovers,
// keeping the count it read). A header gosym could not read fully is an
// error: gosym would keep the counts it read before failing. limit stops
// the walk early; the cost returned is then above it.
func gosymCost(data []byte, limit int64) (int64, error) {
	p, ok, err := parsePcln(data)
	if err != nil || !ok {
		return 0, err
	}
	cost := int64(p.nfunc) * gosymFuncBytes
	for i := uint64(0); i < p.nfunc && cost <= limit; i++ {
		off := p.word(p.functab[(2*i+1)*uint64(p.fieldSize):])
		// go12Funcs reads the frame size (field 3) before the name
		// offset (field 1).
		if off > uint64(len(p.funcdata)) || uint64(len(p.funcdata))-off < uint64(p.field0)+12 {
			break
		}
		name := uint64(p.order.Uint32(p.funcdata[off+uint64(p.field0):]))
		n := stringLenAt(p.funcnametab, name)
		if n < 0 {
			break
		}
		cost += int64(n)
	}
	return cost + p.fileCost(limit-cost), nil
}

// stringLenAt returns the length of the NUL-terminated string at off of
// b, -1 when there is none (debug/gosym panics there).
func stringLenAt(b []byte, off uint64) int {
	if off > uint64(len(b)) {
		return -1
	}
	return bytes.IndexByte(b[off:], 0)
}

// pclnHeader is a .gopclntab header as debug/gosym reads it.
type pclnHeader struct {
	ver       int // 12, 116, 118 or 120
	order     binary.ByteOrder
	ptr       int
	fieldSize int // of a functab entry
	field0    int // _func's first field (entry), before nameOff
	nfunc     uint64
	nfile     uint64

	functab, funcdata, funcnametab, filetab []byte
}

func (p *pclnHeader) word(b []byte) uint64 {
	if p.fieldSize == 4 {
		return uint64(p.order.Uint32(b))
	}
	return p.order.Uint64(b)
}

// parsePcln reads the header of data as debug/gosym's parsePclnTab does;
// ok is false for data gosym reads as a Go 1.1 table (no counts), err
// non-nil for a header it would fail to read after taking its counts.
func parsePcln(data []byte) (p pclnHeader, ok bool, err error) {
	if len(data) < 16 || data[4] != 0 || data[5] != 0 ||
		data[6] != 1 && data[6] != 2 && data[6] != 4 || data[7] != 4 && data[7] != 8 {
		return p, false, nil
	}
	p.ptr = int(data[7])
	le, be := binary.LittleEndian.Uint32(data), binary.BigEndian.Uint32(data)
magics:
	for _, m := range []struct {
		magic uint32
		ver   int
	}{{0xfffffffb, 12}, {0xfffffffa, 116}, {0xfffffff0, 118}, {0xfffffff1, 120}} {
		switch m.magic {
		case le:
			p.order, p.ver = binary.LittleEndian, m.ver
			break magics
		case be:
			p.order, p.ver = binary.BigEndian, m.ver
			break magics
		}
	}
	if p.order == nil {
		return p, false, nil
	}
	bad := func(what string) (pclnHeader, bool, error) {
		return p, false, fmt.Errorf("%w: pclntab header: %s", ErrMalformed, what)
	}
	word := func(i int) (uint64, bool) {
		at := 8 + i*p.ptr
		if at+p.ptr > len(data) {
			return 0, false
		}
		if p.ptr == 4 {
			return uint64(p.order.Uint32(data[at:])), true
		}
		return p.order.Uint64(data[at:]), true
	}
	from := func(i int) ([]byte, bool) {
		o, ok := word(i)
		if !ok || o > uint64(len(data)) {
			return nil, false
		}
		return data[o:], true
	}
	p.fieldSize, p.field0 = p.ptr, p.ptr
	if p.ver >= 118 {
		p.fieldSize, p.field0 = 4, 4
	}
	if p.ver == 12 {
		return p.parse12(data, bad)
	}
	n, _ := word(0)
	nf, ok1 := word(1)
	p.nfunc, p.nfile = uint64(uint32(n)), uint64(uint32(nf))
	first := 2 // funcnametab's word
	if p.ver >= 118 {
		first = 3
	}
	var tabs [5][]byte // funcnametab, cutab, filetab, pctab, funcdata
	for i := range tabs {
		var ok bool
		if tabs[i], ok = from(first + i); !ok {
			return bad(fmt.Sprintf("word %d out of range", first+i))
		}
	}
	if !ok1 {
		return bad("short")
	}
	p.funcnametab, p.filetab, p.funcdata = tabs[0], tabs[2], tabs[4]
	size := (2*p.nfunc + 1) * uint64(p.fieldSize)
	if size > uint64(len(p.funcdata)) {
		return bad(fmt.Sprintf("%d functions, more than the table holds", p.nfunc))
	}
	p.functab = p.funcdata[:size]
	return p, true, nil
}

// parse12 reads the rest of a Go 1.2 header: the function table right
// after it, then the file table at the offset that follows.
func (p pclnHeader) parse12(data []byte, bad func(string) (pclnHeader, bool, error)) (pclnHeader, bool, error) {
	p.nfunc = uint64(uint32(p.word(data[8:])))
	p.funcdata, p.funcnametab = data, data
	tab := data[8+p.ptr:]
	size := (2*p.nfunc + 1) * uint64(p.fieldSize)
	if size > uint64(len(tab)) || uint64(len(tab))-size < 4 {
		return bad(fmt.Sprintf("%d functions, more than the table holds", p.nfunc))
	}
	p.functab = tab[:size]
	fileoff := uint64(p.order.Uint32(tab[size:]))
	if fileoff > uint64(len(data)) || uint64(len(data))-fileoff < 4 {
		return bad("file table out of range")
	}
	p.nfile = uint64(p.order.Uint32(data[fileoff:]))
	if p.nfile*4 > uint64(len(data))-fileoff {
		return bad(fmt.Sprintf("%d files, more than the table holds", p.nfile))
	}
	p.filetab = data[fileoff : fileoff+p.nfile*4]
	return p, true, nil
}

// fileCost returns what debug/gosym's file map (initFileMap) allocates:
// each file's name, copied and cached. It stops past limit.
func (p *pclnHeader) fileCost(limit int64) int64 {
	var cost int64
	if p.ver == 12 {
		// A file is an offset of its name in the table.
		for i := uint64(1); i < p.nfile && cost <= limit; i++ {
			n := stringLenAt(p.funcdata, uint64(p.order.Uint32(p.filetab[4*i:])))
			if n < 0 {
				break
			}
			cost += int64(n) + gosymFileBytes
		}
		return cost
	}
	// The names follow one another.
	var pos uint64
	for i := uint64(0); i < p.nfile && cost <= limit; i++ {
		n := stringLenAt(p.filetab, pos)
		if n < 0 {
			break
		}
		cost += int64(n) + gosymFileBytes
		pos += uint64(n) + 1
	}
	return cost
}
