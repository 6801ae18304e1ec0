package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/perfcheck/perfcheck/perfdata"
)

// traceFormat prints a tracepoint's payload as perf script's trace field
// does (event_format__fprintf, through libtraceevent's
// tep_print_event_data): the format's "print fmt:" evaluated on the
// sample's raw record. It knows the part of the format language the
// kernel's tracepoints use most: REC->field, __get_str, __get_bitmask,
// __print_flags, __print_symbolic, casts, C's integer operators and ?:,
// printf's
// integer, character and string conversions (a %s of a kernel string
// pointer from the recording's printk strings), and the kernel's %pS,
// %ps, IP and socket address (%pI4, %pI6c, %pISpc, ...), MAC address
// (%pM), UUID (%pU) and hex dump (%*ph) conversions, and %p extensions
// libtraceevent does not know as it prints them (a bare %p).
type traceFormat struct {
	ev     *perfdata.TraceEvent
	pieces []tracePiece
	// kernelSym names the addresses %pS and %ps print; without it they
	// print as perf prints an address it has no symbol for.
	kernelSym kernelSymbol
	functions bool // a piece is %pS or %ps
	// printk are the recording's printk strings by address, which a
	// %s of a kernel string pointer prints; printkPieces says a piece
	// is one.
	printk       map[uint64]string
	printkPieces bool
}

// tracePiece is literal text, or a conversion of the next argument,
// after the arguments that give its "*" width or precision.
type tracePiece struct {
	text  string
	conv  *traceConv
	stars []traceExpr
	arg   traceExpr
	// printk: the conversion is a %s of a kernel string pointer
	// (pointerField), printed from the printk strings.
	printk bool
	// field is the field an IP address, MAC address, UUID or hex dump
	// conversion prints.
	field *perfdata.TraceField
}

// traceConv is a printf conversion: flags, width and precision as C has
// them, the length modifier (l, ll, h, hh, z) and the conversion letter;
// for the kernel's printk extensions (%pS, %pI4, ...), the letter after
// the p, and in ptr all the letters the extension takes ("I6c", "MR").
type traceConv struct {
	flags, width, prec, length string
	verb, ext                  byte
	ptr                        string
	// ip is "4", "6" or "S" (a socket address) for an IP address (ext
	// 'I' or 'i'), "" for a %pI without one, which prints nothing. An
	// IPv6 address, or a socket address's, prints compressed with
	// ipCompress; a socket address with its port with ipPort; an IPv4
	// address, or a socket address's, byte-reversed with ipReverse.
	ip                            string
	ipPort, ipCompress, ipReverse bool
	// uuid is the letter after %pU: 0, 'b', 'B', 'l' or 'L'.
	uuid byte
	// macSep separates a MAC address's bytes (":", "-" or none);
	// macReverse prints them last first.
	macSep     string
	macReverse bool
	// hexDelim separates a hex dump's bytes.
	hexDelim string
	// bare is a %p whose extension libtraceevent does not know: printed
	// as a plain %p, without width, its letters left as text.
	bare bool
}

// kernelSymbol names the kernel function an address lies in: its name
// and the address's offset from its start.
type kernelSymbol func(addr uint64) (name string, off uint64, ok bool)

// errTraceUnsupported marks a format beyond what traceFormat evaluates.
var errTraceUnsupported = errors.New("not supported")

// newTraceFormat parses ev's print fmt.
func newTraceFormat(ev *perfdata.TraceEvent) (*traceFormat, error) {
	p := &traceParser{src: strings.TrimSpace(ev.PrintFmt), ev: ev}
	hexDumps := 0 // %ph pieces of a __get_dynamic_array
	format, ok := p.stringLit()
	if !ok {
		return nil, fmt.Errorf("print fmt %q: no format string", ev.PrintFmt)
	}
	var args []traceExpr
	for p.skipSpace(); p.peek() == ','; p.skipSpace() {
		p.pos++
		e, err := p.expr()
		if err != nil {
			return nil, err
		}
		args = append(args, e)
	}
	if p.pos != len(p.src) {
		return nil, fmt.Errorf("print fmt: %w: %q", errTraceUnsupported, p.src[p.pos:])
	}
	tf := &traceFormat{ev: ev}
	for len(format) > 0 {
		i := strings.IndexByte(format, '%')
		if i < 0 {
			tf.pieces = append(tf.pieces, tracePiece{text: format})
			break
		}
		if i > 0 {
			tf.pieces = append(tf.pieces, tracePiece{text: format[:i]})
		}
		c, n, err := parseConv(format[i:])
		if err != nil {
			return nil, err
		}
		format = format[i+n:]
		if c == nil {
			tf.pieces = append(tf.pieces, tracePiece{text: "%"})
			continue
		}
		stars := strings.Count(c.width+c.prec, "*")
		if len(args) <= stars {
			return nil, fmt.Errorf("print fmt: more conversions than arguments")
		}
		piece := tracePiece{conv: c, stars: args[:stars], arg: args[stars]}
		if err := piece.extField(ev); err != nil {
			return nil, err
		}
		if _, ok := piece.arg.(traceDynArray); ok && c.ext == 'h' {
			hexDumps++
		}
		if f, ok := piece.arg.(traceField); ok && c.verb == 's' && pointerField(ev, string(f)) {
			piece.printk = true
			tf.printkPieces = true
		}
		tf.pieces = append(tf.pieces, piece)
		tf.functions = tf.functions || c.ext != 0 && strings.IndexByte("SsFf", c.ext) >= 0
		args = args[stars+1:]
	}
	if p.dynArrays != hexDumps {
		// libtraceevent evaluates it elsewhere to an address in its
		// own memory.
		return nil, fmt.Errorf("print fmt: __get_dynamic_array where no %%ph prints it: %w", errTraceUnsupported)
	}
	return tf, nil
}

// extField finds the field the pointer extension of p's conversion
// prints, and refuses what perfcheck does not print as libtraceevent
// does. A %pI without a version prints nothing, as in libtraceevent's
// print_ip_arg; the piece is then empty text.
func (p *tracePiece) extField(ev *perfdata.TraceEvent) error {
	c := p.conv
	var err error
	switch c.ext {
	case 'I', 'i':
		if c.ip == "" {
			*p = tracePiece{}
			return nil
		}
		p.field, err = ipField(ev, c, p.arg)
	case 'U':
		p.field, err = uuidField(ev, c, p.arg)
	case 'M', 'm':
		p.field, err = namedField(ev, c, p.arg)
	case 'h':
		p.field, err = hexDumpField(ev, c, p.stars, p.arg)
	case 0:
		if c.bare {
			p.arg = barePointerArg(ev, p.arg)
		}
	}
	return err
}

// pointerField reports whether ev's field name holds a kernel address
// that a %s prints from the printk strings: as libtraceevent's
// print_str_arg decides, a field that is no array and has the size of a
// long (64 bits, as on the machines perfcheck reads), or a pointer
// ("const char * s").
func pointerField(ev *perfdata.TraceEvent, name string) bool {
	f := fieldNamed(ev, name)
	if f == nil || strings.Contains(f.Type, "[") || isDataLoc(f) {
		return false
	}
	return f.Size == 8 || strings.Contains(f.Type, "*")
}

// parseConv reads the conversion at the start of s ("%08lx"); nil for
// "%%". n is its length.
func parseConv(s string) (c *traceConv, n int, err error) {
	i := 1
	take := func(set string) string {
		j := i
		for i < len(s) && strings.IndexByte(set, s[i]) >= 0 {
			i++
		}
		return s[j:i]
	}
	if strings.HasPrefix(s, "%%") {
		return nil, 2, nil
	}
	c = &traceConv{flags: take("-+ #0"), width: take("*")}
	if c.width == "" {
		c.width = take("0123456789")
	}
	if i < len(s) && s[i] == '.' {
		i++
		c.prec = "." + take("*")
		if c.prec == "." {
			c.prec += take("0123456789")
		}
	}
	if len(c.width) > 1 && c.width[0] == '*' || len(c.prec) > 2 && c.prec[1] == '*' {
		return nil, 0, fmt.Errorf("print fmt: conversion %q: %w", s[:i], errTraceUnsupported)
	}
	c.length = take("hlLzjt")
	if i >= len(s) || strings.IndexByte("diuxXocsp", s[i]) < 0 {
		return nil, 0, fmt.Errorf("print fmt: conversion %q: %w", s[:min(i+1, len(s))], errTraceUnsupported)
	}
	c.verb = s[i]
	if c.verb == 'p' && i+1 < len(s) && isAlnum(s[i+1]) {
		end, err := c.parsePointerExt(s, i+1)
		if err != nil {
			return nil, 0, err
		}
		return c, end, nil
	}
	return c, i + 1, nil
}

// parsePointerExt reads the kernel's printk extension of a %p that
// starts at s[j] and returns where the conversion ends. It takes the
// letters libtraceevent's parse_arg_format_pointer takes: a letter after
// them is text, as perf 6.1 prints it ("%pI4c" prints "127.0.0.1c").
// How they print follows libtraceevent's print functions, which heed
// fewer of them (parseIP). Extensions perfcheck prints: the symbol of an
// address (%pS, %ps; %pF, %pf before Linux 5.5), an IP or socket address
// (%pI4, %pI6c, %pISpc, ...: parseIP), a MAC address (%pM, %pm, with R
// or F), a UUID (%pU with b, B, l or L) and a hex dump (%ph with C, D or
// N). A letter libtraceevent knows no extension for (%pB, %pK, %*pbl's
// b) makes the conversion a bare %p, the letters left as text, as perf
// 6.1 prints them ("0x12B", "(nil)bl"). A letter after a symbol's
// (%pSR, %pfw: the kernel's fwnode name, which perf prints as a symbol
// and a "w") is refused.
func (c *traceConv) parsePointerExt(s string, j int) (int, error) {
	at := func(k int) byte { return byteAt(s, k) }
	end := j + 1
	switch c.ext = s[j]; c.ext {
	case 'S', 's', 'F', 'f':
		if isAlnum(at(end)) {
			return 0, fmt.Errorf("print fmt: conversion %q: %w", s[:end+1], errTraceUnsupported)
		}
	case 'I', 'i':
		end = c.parseIP(s, j)
	case 'M', 'm':
		// As print_mac_arg: %pm without separators, %pMF with
		// dashes (an F after an m is taken and ignored), R last
		// byte first.
		l := at(end)
		if l == 'R' || l == 'F' {
			end++
		}
		c.macReverse = l == 'R'
		switch {
		case c.ext == 'm':
			c.macSep = ""
		case l == 'F':
			c.macSep = "-"
		default:
			c.macSep = ":"
		}
	case 'U':
		if l := at(end); strings.IndexByte("bBlL", l) >= 0 {
			c.uuid = l
			end++
		}
	case 'h':
		// As print_raw_buff_arg: bytes apart, or joined by a colon
		// (C), a dash (D) or nothing (N).
		c.hexDelim = " "
		if d := strings.IndexByte("CDN", at(end)); d >= 0 {
			c.hexDelim = [...]string{":", "-", ""}[d]
			end++
		}
	default:
		c.ext, c.bare = 0, true
		return j, nil
	}
	c.ptr = s[j:end]
	return end, nil
}

// parseIP reads an IP address extension, whose letter (I or i) is at
// s[j], as parse_arg_format_pointer takes its letters: a version (4, 6
// or S, else the conversion is "%pI" alone), then after a 4 one of hnbl;
// after a 6 a c; after an S any of pfs, one of hnbl, then a c. Of those,
// libtraceevent's printers heed: after a 4, an h or l (the address
// byte-reversed; an h means that on a little-endian recording, and
// traceRecord reads every payload as one); after a 6, a c for %pI6 (compressed;
// taken and ignored for %pi6); after an S, for %pIS a p right after it
// (the port), a c after that (compressed), then an h or l (reversed, an
// IPv4 address only), and for %piS an h or l right after it
// (print_ipsa_arg). It returns where the conversion ends.
func (c *traceConv) parseIP(s string, j int) int {
	at := func(k int) byte { return byteAt(s, k) }
	in := func(set string, k int) bool { return strings.IndexByte(set, at(k)) >= 0 }
	k := j + 2
	switch at(j + 1) {
	case 'S':
		for in("pfs", k) {
			k++
		}
		fallthrough
	case '4':
		if in("hnbl", k) {
			k++
		}
		if at(j+1) == '4' {
			break
		}
		fallthrough
	case '6':
		if at(k) == 'c' {
			k++
		}
	default:
		return j + 1
	}
	c.ip = s[j+1 : j+2]
	letters := s[j+2 : k]
	switch c.ip {
	case "6":
		c.ipCompress = c.ext == 'I' && letters == "c"
		return k
	case "S":
		if c.ext == 'I' {
			letters, c.ipPort = strings.CutPrefix(letters, "p")
			letters, c.ipCompress = strings.CutPrefix(letters, "c")
		}
	}
	c.ipReverse = strings.HasPrefix(letters, "h") || strings.HasPrefix(letters, "l")
	return k
}

// byteAt is s[k], or 0 past its end as after a C string.
func byteAt(s string, k int) byte {
	if k < len(s) {
		return s[k]
	}
	return 0
}

// appendTrace appends the payload raw as tf prints it.
func (tf *traceFormat) appendTrace(b []byte, raw []byte) ([]byte, error) {
	rec := traceRecord{ev: tf.ev, raw: raw}
	for _, p := range tf.pieces {
		if p.conv == nil {
			b = append(b, p.text...)
			continue
		}
		if p.field != nil {
			var err error
			switch p.conv.ext {
			case 'U':
				b, err = appendUUID(b, p.conv.uuid, p.field, raw)
			case 'M', 'm':
				b, err = appendMAC(b, p.conv, p.field, raw)
			case 'h':
				b, err = appendHexDump(b, &p, &rec)
			default:
				b, err = appendIP(b, p.conv, p.field, raw)
			}
			if err != nil {
				return b, err
			}
			continue
		}
		stars := make([]any, len(p.stars))
		for i, x := range p.stars {
			n, err := num(x, &rec)
			if err != nil {
				return b, err
			}
			stars[i] = int(int32(n)) // printf's int
		}
		v, err := p.arg.eval(&rec)
		if err != nil {
			return b, err
		}
		switch {
		case p.printk:
			b = tf.appendPrintk(b, v)
		case p.conv.bare:
			b, err = appendBarePointer(b, v)
		case p.conv.ext != 0:
			b, err = tf.appendFunction(b, p.conv.ext, v)
		default:
			b, err = p.conv.appendValue(b, stars, v)
		}
		if err != nil {
			return b, err
		}
	}
	return b, nil
}

// readsPrintk reports whether tf prints a kernel string pointer.
func (tf *traceFormat) readsPrintk() bool { return tf.printkPieces }

// appendPrintk prints the kernel string pointer v as libtraceevent's
// print_str_arg does: the printk string at that address, or without one
// the address in hex without "0x"; the conversion's width and precision
// are not applied to either.
func (tf *traceFormat) appendPrintk(b []byte, v traceValue) []byte {
	if s, ok := tf.printk[v.n]; ok {
		return append(b, s...)
	}
	return strconv.AppendUint(b, v.n, 16)
}

// printsFunctions reports whether tf prints the symbol of an address.
func (tf *traceFormat) printsFunctions() bool { return tf.functions }

// appendFunction prints the address v as libtraceevent's print_function
// does for %pS (ext 'S' or 'F': symbol+0xoffset) and %ps (the symbol):
// an address without a symbol in hex.
func (tf *traceFormat) appendFunction(b []byte, ext byte, v traceValue) ([]byte, error) {
	if v.isStr {
		return b, fmt.Errorf("%%p%c of a string", ext)
	}
	if tf.kernelSym != nil {
		if name, off, ok := tf.kernelSym(v.n); ok {
			b = append(b, name...)
			if ext == 'S' || ext == 'F' {
				b = append(b, "+0x"...)
				b = strconv.AppendUint(b, off, 16)
			}
			return b, nil
		}
	}
	b = append(b, "0x"...)
	return strconv.AppendUint(b, v.n, 16), nil
}

// appendValue formats v as C's printf formats it with c, whose "*"
// width or precision is stars. Go's fmt takes "*" as C does, a negative
// width left-justifying.
func (c *traceConv) appendValue(b []byte, stars []any, v traceValue) ([]byte, error) {
	spec := "%" + c.flags + c.width + c.prec
	if c.verb == 's' {
		if !v.isStr {
			return b, fmt.Errorf("%%s of a number")
		}
		return fmt.Appendf(b, spec+"s", append(stars, v.s)...), nil
	}
	if v.isStr {
		return b, fmt.Errorf("%%%c of a string", c.verb)
	}
	n := v.n
	switch c.verb {
	case 'c':
		return fmt.Appendf(b, spec+"c", append(stars, rune(byte(n)))...), nil
	case 'd', 'i':
		return fmt.Appendf(b, spec+"d", append(stars, signedAs(n, c.length))...), nil
	case 'u':
		return fmt.Appendf(b, spec+"d", append(stars, unsignedAs(n, c.length))...), nil
	case 'p':
		// glibc's %p, which libtraceevent prints a plain %p with.
		p := "(nil)"
		if n != 0 {
			p = "0x" + strconv.FormatUint(n, 16)
		}
		return fmt.Appendf(b, spec+"s", append(stars, p)...), nil
	}
	u := unsignedAs(n, c.length)
	if u == 0 && c.prec == "" && strings.Contains(c.flags, "#") {
		// C's "#" adds no 0x (nor a second 0 for %o) to zero:
		// tcp:tcp_probe's mark=%#x prints mark=0.
		spec = "%" + strings.ReplaceAll(c.flags, "#", "") + c.width
	}
	return fmt.Appendf(b, spec+string(c.verb), append(stars, u)...), nil
}

// signedAs and unsignedAs convert a value to the C type a length
// modifier names (int without one; long is 64 bits, as on the 64-bit
// machines perfcheck reads).
func signedAs(n uint64, length string) int64 {
	switch length {
	case "hh":
		return int64(int8(n))
	case "h":
		return int64(int16(n))
	case "":
		return int64(int32(n))
	}
	return int64(n)
}

func unsignedAs(n uint64, length string) uint64 {
	switch length {
	case "hh":
		return uint64(uint8(n))
	case "h":
		return uint64(uint16(n))
	case "":
		return uint64(uint32(n))
	}
	return n
}

// traceRecord is one sample's raw payload with its format.
type traceRecord struct {
	ev  *perfdata.TraceEvent
	raw []byte
}

// field returns the value of the named field: a number (sign-extended
// when signed), or, for a char array or a __data_loc string, the text up
// to its NUL.
func (r *traceRecord) field(name string) (traceValue, error) { return r.element(name, -1) }

// element returns element i of the named array field ("unsigned long
// args[6]"), or with i < 0 the field itself.
func (r *traceRecord) element(name string, i int) (traceValue, error) {
	if r.ev == nil {
		return traceValue{}, fmt.Errorf("field %s where a constant belongs", name)
	}
	for _, f := range r.ev.Fields {
		if f.Name != name {
			continue
		}
		if f.Offset < 0 || f.Size < 0 || f.Offset+f.Size > len(r.raw) {
			return traceValue{}, fmt.Errorf("field %s lies past the %d bytes of the record", name, len(r.raw))
		}
		b := r.raw[f.Offset : f.Offset+f.Size]
		if i >= 0 {
			var err error
			if b, err = arrayElement(f, b, i); err != nil {
				return traceValue{}, err
			}
		} else if isDataLoc(&f) {
			if len(b) != 4 {
				return traceValue{}, fmt.Errorf("field %s: __data_loc of %d bytes", name, len(b))
			}
			d, err := dataLocBytes(name, b, r.raw)
			if err != nil {
				return traceValue{}, err
			}
			return traceValue{isStr: true, s: cString(d)}, nil
		}
		if i < 0 && (strings.HasPrefix(f.Type, "char[") || strings.HasPrefix(f.Type, "const char[")) {
			return traceValue{isStr: true, s: cString(b)}, nil
		}
		var n uint64
		switch len(b) {
		case 1:
			n = uint64(b[0])
			if f.Signed {
				n = uint64(int64(int8(b[0])))
			}
		case 2:
			n = uint64(binary.LittleEndian.Uint16(b))
			if f.Signed {
				n = uint64(int64(int16(n)))
			}
		case 4:
			n = uint64(binary.LittleEndian.Uint32(b))
			if f.Signed {
				n = uint64(int64(int32(n)))
			}
		case 8:
			n = binary.LittleEndian.Uint64(b)
		default:
			return traceValue{}, fmt.Errorf("field %s of %d bytes: %w", name, len(b), errTraceUnsupported)
		}
		return traceValue{n: n}, nil
	}
	return traceValue{}, fmt.Errorf("no field %s in %s:%s", name, r.ev.System, r.ev.Name)
}

// arrayElement returns the bytes of element i of array field f, whose
// bytes are b.
func arrayElement(f perfdata.TraceField, b []byte, i int) ([]byte, error) {
	open := strings.LastIndexByte(f.Type, '[')
	n, err := strconv.Atoi(strings.TrimSuffix(f.Type[open+1:], "]"))
	if open < 0 || err != nil || n <= 0 || f.Size%n != 0 {
		return nil, fmt.Errorf("field %s (%s) is no array: %w", f.Name, f.Type, errTraceUnsupported)
	}
	size := f.Size / n
	if i >= n {
		return nil, fmt.Errorf("field %s has no element %d", f.Name, i)
	}
	return b[i*size : (i+1)*size], nil
}

// cString is b up to its first NUL.
func cString(b []byte) string {
	if i := strings.IndexByte(string(b), 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// traceValue is a number (as C's unsigned long long) or a string.
type traceValue struct {
	n     uint64
	s     string
	isStr bool
}

// truth is C's: a non-zero number, a string (a non-null pointer).
func (v traceValue) truth() bool { return v.isStr || v.n != 0 }
