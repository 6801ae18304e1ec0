package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/perfcheck/perfcheck/perfdata"
)

// uuidField returns the field %pU prints: as libtraceevent's
// print_uuid_arg reads it, a field of the record, whose 16 bytes are the
// UUID (a field of another size prints "INVALIDUUID", as perf 6.1
// prints it). An expression, which libtraceevent prints as an
// argument-type note, and a __data_loc word are refused.
func uuidField(ev *perfdata.TraceEvent, c *traceConv, arg traceExpr) (*perfdata.TraceField, error) {
	f, err := namedField(ev, c, arg)
	if err == nil && isDataLoc(f) {
		return nil, fmt.Errorf("print fmt: conversion %%pU of the __data_loc word %s: %w", f.Name, errTraceUnsupported)
	}
	return f, err
}

// namedField returns the field of ev that arg, the argument of the
// pointer extension c, names, as libtraceevent's tep_find_any_field finds
// it (common fields too). An expression, which libtraceevent prints as an
// argument-type note, is refused, and so is a name that is no field.
func namedField(ev *perfdata.TraceEvent, c *traceConv, arg traceExpr) (*perfdata.TraceField, error) {
	name, ok := arg.(traceField)
	if !ok {
		return nil, fmt.Errorf("print fmt: conversion %q of an expression: %w", "%p"+c.ptr, errTraceUnsupported)
	}
	if f := fieldNamed(ev, string(name)); f != nil {
		return f, nil
	}
	return nil, fmt.Errorf("print fmt: conversion %q of %s, no such field: %w", "%p"+c.ptr, name, errTraceUnsupported)
}

// appendMAC prints the 6 bytes of field f of the payload raw as
// libtraceevent's print_mac_arg does for the conversion c: in hex, two
// digits a byte, joined by c.macSep, last first with c.macReverse
// (%pMR, %pmR). A field of another size (a __data_loc word too) prints
// "INVALIDMAC", as perf 6.1 prints it.
func appendMAC(b []byte, c *traceConv, f *perfdata.TraceField, raw []byte) ([]byte, error) {
	if f.Offset < 0 || f.Offset+f.Size > len(raw) {
		return b, fmt.Errorf("field %s lies past the %d bytes of the record", f.Name, len(raw))
	}
	if f.Size != 6 {
		return append(b, "INVALIDMAC"...), nil
	}
	a := raw[f.Offset : f.Offset+6]
	for i := range a {
		if i > 0 {
			b = append(b, c.macSep...)
		}
		x := a[i]
		if c.macReverse {
			x = a[5-i]
		}
		b = append(b, hexDigits[x>>4], hexDigits[x&0xf])
	}
	return b, nil
}

const hexDigits = "0123456789abcdef"

// hexDumpField checks the argument of %ph, whose length is the value of
// its one "*" (1 without one), and returns the field it dumps: the
// __data_loc field of a __get_dynamic_array, whose bytes print, or a
// field named as REC->field, for which libtraceevent's
// print_raw_buff_arg prints an argument-type note (appendHexDump). Any
// other expression, whose note would name libtraceevent's own argument
// type, and two "*" (on which libtraceevent fails the format) are
// refused.
func hexDumpField(ev *perfdata.TraceEvent, c *traceConv, stars []traceExpr, arg traceExpr) (*perfdata.TraceField, error) {
	if len(stars) > 1 {
		return nil, fmt.Errorf("print fmt: conversion %q with two \"*\": %w", "%p"+c.ptr, errTraceUnsupported)
	}
	if d, ok := arg.(traceDynArray); ok {
		arg = traceField(d) // a __data_loc field (traceParser)
	}
	return namedField(ev, c, arg)
}

// appendHexDump prints the hex dump piece p of the record r as
// libtraceevent's print_raw_buff_arg does: the first bytes of the
// __get_dynamic_array, as many as p's "*" says (1 without one; all when
// it says more; none when it says less than 1), two hex digits each,
// joined by the conversion's delimiter; for a REC->field, "ARG TYPE NOT
// FIELD BUT 2" (libtraceevent's TEP_PRINT_FIELD), as perf 6.1 prints it.
func appendHexDump(b []byte, p *tracePiece, r *traceRecord) ([]byte, error) {
	if _, ok := p.arg.(traceDynArray); !ok {
		return append(b, "ARG TYPE NOT FIELD BUT 2"...), nil
	}
	n := 1
	if len(p.stars) == 1 {
		v, err := num(p.stars[0], r)
		if err != nil {
			return b, err
		}
		n = int(int32(v)) // print_event_cache's int len_arg
	}
	a, err := r.dataLoc(p.field)
	if err != nil {
		return b, err
	}
	for i := range min(max(n, 0), len(a)) {
		if i > 0 {
			b = append(b, p.conv.hexDelim...)
		}
		b = append(b, hexDigits[a[i]>>4], hexDigits[a[i]&0xf])
	}
	return b, nil
}

// appendUUID prints the 16 bytes of field f of the payload raw as the
// kernel's %pU (libtraceevent's print_uuid_arg): groups of 4, 2, 2, 2 and
// 6 bytes in hex joined by dashes, in the bytes' order (%pU, %pUb, %pUB)
// or with the first three groups byte-reversed (%pUl, %pUL), in
// uppercase for B and L.
func appendUUID(b []byte, letter byte, f *perfdata.TraceField, raw []byte) ([]byte, error) {
	if f.Offset < 0 || f.Offset+f.Size > len(raw) {
		return b, fmt.Errorf("field %s lies past the %d bytes of the record", f.Name, len(raw))
	}
	if f.Size != 16 {
		return append(b, "INVALIDUUID"...), nil
	}
	a := raw[f.Offset : f.Offset+16]
	order := [16]int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	if letter == 'l' || letter == 'L' {
		order = [16]int{3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15}
	}
	digits := "0123456789abcdef"
	if letter == 'B' || letter == 'L' {
		digits = "0123456789ABCDEF"
	}
	for i, j := range order {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b = append(b, '-')
		}
		b = append(b, digits[a[j]>>4], digits[a[j]&0xf])
	}
	return b, nil
}

// barePointerArg returns the argument a bare %p (parsePointerExt) prints:
// as libtraceevent's eval_num_arg reads a field with tep_read_number,
// an array field that is no number of 1, 2, 4 or 8 bytes reads as 0
// (sched_skip_cpuset_numa's "%*pbl" of its unsigned long[16]
// mem_allowed prints "(nil)bl").
func barePointerArg(ev *perfdata.TraceEvent, arg traceExpr) traceExpr {
	name, ok := arg.(traceField)
	if !ok {
		return arg
	}
	if f := fieldNamed(ev, string(name)); f != nil && (strings.Contains(f.Type, "[") || isDataLoc(f)) {
		switch f.Size {
		case 1, 2, 4, 8:
			return arg
		}
		return traceConst{}
	}
	return arg
}

// fieldNamed returns the field of ev called name, or nil.
func fieldNamed(ev *perfdata.TraceEvent, name string) *perfdata.TraceField {
	for i := range ev.Fields {
		if f := &ev.Fields[i]; f.Name == name {
			return f
		}
	}
	return nil
}

// appendBarePointer prints v as libtraceevent's print_arg_pointer prints a
// %p whose extension it does not know: glibc's %p, no width applied.
func appendBarePointer(b []byte, v traceValue) ([]byte, error) {
	if v.isStr {
		return b, fmt.Errorf("%%p of a string")
	}
	if v.n == 0 {
		return append(b, "(nil)"...), nil
	}
	return strconv.AppendUint(append(b, "0x"...), v.n, 16), nil
}
