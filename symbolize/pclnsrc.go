package symbolize

import (
	"bytes"
	"encoding/binary"
	"os"
	"sync"
)

// pclnTab is a table of .gopclntab, or go:func.*, as goInline reads it:
// held in memory, or read from the file as needed. A binary whose DWARF
// answers asks .gopclntab only about what DWARF does not cover (the
// padding after Go functions, generated wrappers), a few percent of the
// addresses: reading those few records from the file spares holding the
// whole table (as large as the DWARF sections a decode needs) beside the
// DWARF. A binary without DWARF asks it every address and holds it.
//
// A table extends to the end of its section, as a slice of the section
// from the table's offset would.
type pclnTab struct {
	mem []byte // the table, when held

	f    *os.File // else the file, and where the table lies in it
	off  int64
	size int
}

// memTab is a table held in memory.
func memTab(b []byte) pclnTab { return pclnTab{mem: b, size: len(b)} }

// held reports whether the table is in memory.
func (t *pclnTab) held() bool { return t.mem != nil || t.f == nil }

// from returns the table from off on (an empty table when off is past
// its end).
func (t pclnTab) from(off uint64) pclnTab {
	if off > uint64(t.size) {
		off = uint64(t.size)
	}
	if t.held() {
		return memTab(t.mem[off:])
	}
	return pclnTab{f: t.f, off: t.off + int64(off), size: t.size - int(off)}
}

// window returns the table's bytes from off: all of them up to its end
// when it is held, else at most len(buf), read into buf. It returns nil
// when off is outside the table or the read fails.
func (t *pclnTab) window(off int, buf []byte) []byte {
	if off < 0 || off >= t.size {
		return nil
	}
	if t.held() {
		return t.mem[off:]
	}
	n, _ := t.f.ReadAt(buf[:min(len(buf), t.size-off)], t.off+int64(off))
	return buf[:n]
}

// load reads n bytes of the table from off into memory.
func (t *pclnTab) load(off, n int) ([]byte, bool) {
	if off < 0 || n < 0 || off > t.size || n > t.size-off {
		return nil, false
	}
	if t.held() {
		return t.mem[off : off+n], true
	}
	b := make([]byte, n)
	if _, err := t.f.ReadAt(b, t.off+int64(off)); err != nil {
		return nil, false
	}
	return b, true
}

// pcStream reads the varints of a pc-value table, a window at a time from
// a table read from the file.
type pcStream struct {
	t   *pclnTab
	off int    // table offset of p[0]
	p   []byte // the window
	buf []byte // room for a window read from the file
}

// uvarint reads the next value; ok is false at the end of the table or
// on a malformed value.
func (s *pcStream) uvarint() (uint64, bool) {
	if len(s.p) < binary.MaxVarintLen64 && !s.t.held() {
		s.p = s.t.window(s.off, s.buf)
	}
	v, n := uvarint(s.p)
	if n <= 0 {
		return 0, false
	}
	s.p, s.off = s.p[n:], s.off+n
	return v, true
}

// nameTab is funcnametab: names are views of it when it is held, else
// read once each and kept by offset.
type nameTab struct {
	pclnTab
	mu    sync.RWMutex
	names map[int32]string
}

// maxGoName bounds a function name read from the file.
const maxGoName = 64 << 10

// at returns the NUL-terminated name at off, "" when there is none.
func (t *nameTab) at(off int32) string {
	if t.held() {
		return cstring(t.mem, off)
	}
	t.mu.RLock()
	s, ok := t.names[off]
	t.mu.RUnlock()
	if ok {
		return s
	}
	var buf [256]byte
	var name []byte
	for {
		w := t.window(int(off)+len(name), buf[:])
		if len(w) == 0 || len(name) > maxGoName {
			return "" // unterminated
		}
		if i := bytes.IndexByte(w, 0); i >= 0 {
			name = append(name, w[:i]...)
			break
		}
		name = append(name, w...)
	}
	s = string(name)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.names == nil {
		t.names = map[int32]string{}
	}
	t.names[off] = s
	return s
}

// cstring returns the NUL-terminated string at off in b, as a view of b,
// without copying: section data is never modified once read, and a lookup
// must not allocate.
func cstring(b []byte, off int32) string {
	if off < 0 || int(off) >= len(b) {
		return ""
	}
	s := b[off:]
	i := bytes.IndexByte(s, 0)
	if i <= 0 {
		return ""
	}
	return view(s[:i])
}
