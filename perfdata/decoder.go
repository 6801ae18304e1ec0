package perfdata

import (
	"encoding/binary"
	"fmt"
	"io"
)

// FormatError reports malformed input at an absolute byte offset of the
// file (or, in pipe mode, of the stream; inside a compressed record, of the
// compressed record that held it, see Msg).
type FormatError struct {
	File   string // input name when known, else ""
	Offset int64  // absolute byte offset where the problem was found
	Msg    string // what is wrong, without the offset
	Err    error  // underlying cause, e.g. io.ErrUnexpectedEOF for truncation
}

func (e *FormatError) Error() string {
	s := ""
	if e.File != "" {
		s = e.File + ": "
	}
	s += fmt.Sprintf("offset %d (0x%x): %s", e.Offset, e.Offset, e.Msg)
	if e.Err != nil && e.Err.Error() != e.Msg {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *FormatError) Unwrap() error { return e.Err }

// decoder reads fixed-width fields from a byte slice in one byte order with
// a sticky error, in the manner of debug/dwarf's buf: every read checks the
// length, the first failure is kept and later reads return zero values, so
// callers check d.err once at the end.
type decoder struct {
	b     []byte           // the bytes being decoded
	off   int              // next unread index into b
	base  int64            // absolute file offset of b[0], for errors
	order binary.ByteOrder // the file's byte order
	what  string           // what is being decoded, for errors ("MMAP2 record")
	err   error
	// little is order == binary.LittleEndian, so that the common case
	// decodes without a call through the ByteOrder interface.
	little bool
}

func newDecoder(b []byte, base int64, order binary.ByteOrder, what string) decoder {
	return decoder{b: b, base: base, order: order, what: what, little: order == binary.LittleEndian}
}

// fail records the first error at the current offset.
func (d *decoder) fail(cause error, format string, args ...any) {
	if d.err != nil {
		return
	}
	msg := fmt.Sprintf(format, args...)
	if d.what != "" {
		msg = d.what + ": " + msg
	}
	d.err = &FormatError{Offset: d.base + int64(d.off), Msg: msg, Err: cause}
}

// need reports whether n more bytes are available, failing if not.
func (d *decoder) need(n int) bool {
	if d.err != nil {
		return false
	}
	if n < 0 || n > len(d.b)-d.off {
		d.fail(io.ErrUnexpectedEOF, "need %d bytes, %d left", n, len(d.b)-d.off)
		return false
	}
	return true
}

func (d *decoder) remaining() int { return len(d.b) - d.off }

func (d *decoder) u8() uint8 {
	if !d.need(1) {
		return 0
	}
	v := d.b[d.off]
	d.off++
	return v
}

// u16, u32 and u64 read little-endian input without a call through the
// ByteOrder interface; big-endian input, the checks and the error go
// through one slower call.

func (d *decoder) u16() uint16 {
	if d.little && d.err == nil && len(d.b)-d.off >= 2 {
		v := binary.LittleEndian.Uint16(d.b[d.off:])
		d.off += 2
		return v
	}
	return uint16(d.slow(2))
}

func (d *decoder) u32() uint32 {
	if d.little && d.err == nil && len(d.b)-d.off >= 4 {
		v := binary.LittleEndian.Uint32(d.b[d.off:])
		d.off += 4
		return v
	}
	return uint32(d.slow(4))
}

func (d *decoder) u64() uint64 {
	if d.little && d.err == nil && len(d.b)-d.off >= 8 {
		v := binary.LittleEndian.Uint64(d.b[d.off:])
		d.off += 8
		return v
	}
	return d.slow(8)
}

// slow reads an n-byte integer (2, 4 or 8) in the decoder's byte order,
// checking the length.
func (d *decoder) slow(n int) uint64 {
	if !d.need(n) {
		return 0
	}
	b := d.b[d.off:]
	d.off += n
	switch n {
	case 2:
		return uint64(d.order.Uint16(b))
	case 4:
		return uint64(d.order.Uint32(b))
	}
	return d.order.Uint64(b)
}

// bytes returns the next n bytes without copying; the slice aliases d.b.
func (d *decoder) bytes(n int) []byte {
	if !d.need(n) {
		return nil
	}
	v := d.b[d.off : d.off+n : d.off+n]
	d.off += n
	return v
}

func (d *decoder) skip(n int) { d.bytes(n) }

// cstring returns the NUL-terminated string in the next n bytes (all n are
// consumed; the string ends at the first NUL or at n).
func (d *decoder) cstring(n int) string {
	b := d.bytes(n)
	return cstr(b)
}

// headerString reads a perf_header_string: u32 len, then len bytes holding a
// NUL-terminated, NUL-padded string (do_read_string in
// tools/perf/util/header.c).
func (d *decoder) headerString() string {
	n := d.u32()
	if d.err != nil {
		return ""
	}
	if int64(n) > int64(d.remaining()) {
		d.fail(io.ErrUnexpectedEOF, "string length %d exceeds the %d bytes left", n, d.remaining())
		return ""
	}
	return d.cstring(int(n))
}

// headerStringList reads a perf_header_string_list: u32 nr, then nr strings.
// The count is bounded by what remains (each string needs at least 4 bytes)
// before anything is allocated.
func (d *decoder) headerStringList() []string {
	n := d.u32()
	if d.err != nil {
		return nil
	}
	if int64(n) > int64(d.remaining()/4) {
		d.fail(io.ErrUnexpectedEOF, "string list of %d entries cannot fit in %d bytes", n, d.remaining())
		return nil
	}
	out := make([]string, 0, n)
	for i := uint32(0); i < n && d.err == nil; i++ {
		out = append(out, d.headerString())
	}
	return out
}

// cstr cuts b at its first NUL.
func cstr(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// fitCount checks, after a u32 count was read, that n entries of at least
// min bytes each fit in what remains, so that a hostile count fails before
// anything is allocated. It reports whether decoding can go on.
func (d *decoder) fitCount(n uint32, min int, what string) bool {
	if d.err != nil {
		return false
	}
	if int64(n) > int64(d.remaining()/min) {
		d.off -= 4
		d.fail(io.ErrUnexpectedEOF, "%d %s cannot fit in %d bytes", n, what, d.remaining()+4)
		return false
	}
	return true
}
