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
func uuidField(ev *perfdata.TraceEvent, arg traceExpr) (*perfdata.TraceField, error) {
	name, ok := arg.(traceField)
	if !ok {
		return nil, fmt.Errorf("print fmt: conversion %%pU of an expression: %w", errTraceUnsupported)
	}
	for i := range ev.Fields {
		if f := &ev.Fields[i]; f.Name == string(name) && !isDataLoc(f) {
			return f, nil
		}
	}
	return nil, fmt.Errorf("print fmt: conversion %%pU of %s, no such field: %w", name, errTraceUnsupported)
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
	for _, f := range ev.Fields {
		if f.Name == string(name) && (strings.Contains(f.Type, "[") || isDataLoc(&f)) {
			switch f.Size {
			case 1, 2, 4, 8:
				return arg
			}
			return traceConst{}
		}
	}
	return arg
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
