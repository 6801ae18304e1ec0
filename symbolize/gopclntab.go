package symbolize

import (
	"debug/elf"
	"debug/gosym"
	"fmt"
	"math"
	"sync"
)

// goTable answers from a Go binary's .gopclntab, which the runtime itself
// uses for tracebacks and which survives -ldflags=-s -w.
//
// debug/gosym does not expose the inline tree (FUNCDATA_InlTree); goInline
// decodes it, with the function, file and line, where go:func.* can be
// located (a symbol table, or the moduledata of a non-PIE binary).
// Elsewhere debug/gosym answers with one frame per address: the function
// holding the code, with the file and line of the innermost inlined code,
// which is what pclntab's pcfile/pcln tables record. When DWARF is present
// it answers first.
type goTable struct {
	sec       *elf.Section
	data      []byte // the section, when held (see pclnTab)
	textStart uint64
	inline    *goInline // nil when the inline tree cannot be located

	// The gosym table is built only when goInline cannot answer: it
	// allocates a record per function, which the inline decoder avoids.
	symOnce sync.Once
	sym     *gosym.Table
	symErr  error
}

func (b *Binary) loadGo() *goTable {
	b.goOnce.Do(func() {
		if b.ef == nil {
			return
		}
		s := b.ef.Section(".gopclntab")
		if s == nil || s.Type == elf.SHT_NOBITS {
			return
		}
		err := safely(func() error { return b.readGo(s) })
		if err != nil {
			b.goErr = fmt.Errorf("%s: .gopclntab: %w", b.path, err)
			b.warn("%v (Go functions without DWARF fall back to symbol names)", b.goErr)
		}
	})
	return b.gotab
}

// readGo sets b.gotab from s, .gopclntab: held in memory when DWARF does
// not answer for the binary, else read from the file as lookups need it
// (see pclnTab).
func (b *Binary) readGo(s *elf.Section) error {
	cache := cachePCTables(b.loadDWARF())
	g := &goTable{sec: s}
	var pcln pclnTab
	if cache || s.Flags&elf.SHF_COMPRESSED != 0 || s.FileSize != s.Size {
		data, err := sectionData(s)
		if err != nil {
			return fmt.Errorf("section at offset %#x: %w", s.Offset, err)
		}
		g.data, pcln = data, memTab(data)
	} else {
		pcln = pclnTab{f: b.f, off: int64(s.Offset), size: int(s.Size)}
	}
	// The magic of every pclntab version debug/gosym reads (Go 1.2,
	// 1.16, 1.18, 1.20: src/debug/gosym/pclntab.go); anything else is
	// damage, reported now rather than at the first lookup that needs
	// the table.
	var hdr [8]byte
	if h := pcln.window(0, hdr[:]); len(h) < 8 {
		return fmt.Errorf("section at offset %#x: %w: %d bytes, too short for a header", s.Offset, ErrMalformed, len(h))
	}
	switch m := b.ef.ByteOrder.Uint32(pcln.window(0, hdr[:])); m {
	case 0xfffffffb, 0xfffffffa, 0xfffffff0, 0xfffffff1:
	default:
		return fmt.Errorf("section at offset %#x: %w: unknown magic %#x", s.Offset, ErrMalformed, m)
	}
	if t := b.ef.Section(".text"); t != nil {
		g.textStart = t.Addr
	}
	g.inline = newGoInline(b.ef, pcln, cache)
	b.gotab = g
	return nil
}

// gosym returns the debug/gosym table of the binary's .gopclntab, built
// on first need. What gosym allocates for it (gosymCost) is reserved
// from the run's budget first, until b is closed: gosym makes a record
// per function the header counts, at once.
func (g *goTable) gosym(b *Binary) (*gosym.Table, error) {
	name := b.path + ": .gopclntab"
	g.symOnce.Do(func() {
		g.symErr = safely(func() error {
			data := g.data
			if data == nil {
				var err error
				if data, err = sectionData(g.sec); err != nil {
					return err
				}
			}
			limit := b.bud.Limit()
			if limit < 0 {
				limit = math.MaxInt64
			}
			cost, err := gosymCost(data, limit)
			if err != nil {
				return err
			}
			if err := b.bud.Reserve(cost, b.path, "section .gopclntab (debug/gosym's table of it)"); err != nil {
				return err
			}
			b.held.Add(cost)
			t, err := gosym.NewTable(nil, gosym.NewLineTable(data, g.textStart))
			g.sym = t
			return err
		})
		if g.symErr != nil {
			g.symErr = named(name, malformed(g.symErr))
			b.warn("%v (answers fall back to symbol names, without file:line)", g.symErr)
		}
	})
	return g.sym, g.symErr
}

func (g *goTable) frames(b *Binary, addr uint64, buf []Frame) (out []Frame, ok bool, err error) {
	if g.inline != nil {
		if out, ok := g.inline.frames(b, addr, buf); ok {
			return out, true, nil
		}
	}
	t, err := g.gosym(b)
	if err != nil {
		return buf, false, err
	}
	out = buf
	err = safely(func() error {
		file, line, fn := t.PCToLine(addr)
		if fn == nil {
			return nil
		}
		// gosym gives line -1 (and no file) past the function's tables.
		out = append(buf, Frame{Function: b.demangle(fn.Name), RawName: fn.Name, File: file, Line: max(line, 0)})
		ok = true
		return nil
	})
	if err != nil {
		return buf, false, fmt.Errorf("%s: .gopclntab: %w", b.path, err)
	}
	return out, ok, nil
}

// cachePCTables reports whether .gopclntab's decoded tables are worth
// caching beside dw, the binary's DWARF index: only where DWARF does not
// answer (none, or an index without DWARF: a separate debug file of
// symbols only, or DWARF that failed to load). Where it does, the table
// only fills its gaps, too rarely to cache for.
func cachePCTables(dw *dwarfIndex) bool {
	return dw == nil || !dw.hasData
}
