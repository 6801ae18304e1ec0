package symbolize

import (
	"debug/elf"
	"debug/gosym"
	"fmt"
)

// goTable answers from a Go binary's .gopclntab, which the runtime itself
// uses for tracebacks and which survives -ldflags=-s -w.
//
// debug/gosym does not expose the inline tree (FUNCDATA_InlTree); goInline
// decodes it where go:func.* can be located (a symbol table, or the
// moduledata of a non-PIE binary). Elsewhere a stripped Go binary yields
// one frame per address: the function holding the code, with the file and
// line of the innermost inlined code, which is what pclntab's pcfile/pcln
// tables record. When DWARF is present it answers first.
type goTable struct {
	t      *gosym.Table
	inline *goInline // nil when the inline tree cannot be located
}

func (b *Binary) loadGo() *goTable {
	b.goOnce.Do(func() {
		s := b.ef.Section(".gopclntab")
		if s == nil || s.Type == elf.SHT_NOBITS {
			return
		}
		err := safely(b.path, func() error {
			data, err := s.Data()
			if err != nil {
				return err
			}
			var textStart uint64
			if t := b.ef.Section(".text"); t != nil {
				textStart = t.Addr
			}
			t, err := gosym.NewTable(nil, gosym.NewLineTable(data, textStart))
			if err != nil {
				return err
			}
			b.gotab = &goTable{t: t, inline: newGoInline(b.ef, data)}
			return nil
		})
		if err != nil {
			b.goErr = fmt.Errorf("%s: .gopclntab: %w", b.path, err)
		}
	})
	return b.gotab
}

func (g *goTable) frames(b *Binary, addr uint64, buf []Frame) (out []Frame, ok bool, err error) {
	out = buf
	if g.inline != nil {
		if out, ok := g.inline.frames(b, addr, buf); ok {
			return out, true, nil
		}
	}
	err = safely(b.path, func() error {
		file, line, fn := g.t.PCToLine(addr)
		if fn == nil {
			return nil
		}
		out = append(buf, Frame{Function: b.demangle(fn.Name), RawName: fn.Name, File: file, Line: line})
		ok = true
		return nil
	})
	return out, ok, err
}
