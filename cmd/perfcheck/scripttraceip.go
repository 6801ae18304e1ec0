package main

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"github.com/perfcheck/perfcheck/perfdata"
)

// ipField returns the field the IP address conversion c prints: as
// libtraceevent's print_ipv4_arg and print_ipv6_arg read it, the bytes of
// a field of the record (4 for IPv4, 16 for IPv6) in network order, and
// as print_ipsa_arg reads a socket address, a field that holds a struct
// sockaddr_in6 at least (whose size the IPv4 one does not exceed).
// Anything else (an expression, a field of another size, which
// libtraceevent prints as "INVALIDIPv4" or an argument-type note) is
// refused.
func ipField(ev *perfdata.TraceEvent, c *traceConv, arg traceExpr) (*perfdata.TraceField, error) {
	conv := "%p" + c.ptr
	if c.flags+c.width+c.prec+c.length != "" {
		return nil, fmt.Errorf("print fmt: conversion %q with flags, width or length: %w", conv, errTraceUnsupported)
	}
	name, ok := arg.(traceField)
	if !ok {
		return nil, fmt.Errorf("print fmt: conversion %q of an expression: %w", conv, errTraceUnsupported)
	}
	size := 4
	switch c.ip {
	case "6":
		size = 16
	case "S":
		size = sockaddrIn6Size
	}
	for i := range ev.Fields {
		f := &ev.Fields[i]
		if f.Name == string(name) && (f.Size == size || c.ip == "S" && f.Size > size) && !isDataLoc(f) {
			return f, nil
		}
	}
	return nil, fmt.Errorf("print fmt: conversion %q of %s, no field of %d bytes: %w", conv, name, size, errTraceUnsupported)
}

// isDataLoc reports whether f holds a __data_loc word rather than its data.
func isDataLoc(f *perfdata.TraceField) bool {
	return strings.HasPrefix(f.Type, "__data_loc")
}

// appendIP prints the address in field f of the payload raw as
// libtraceevent does for the conversion c: %pI4 dotted decimal, %pi4 each
// byte in three digits, dotted too (the kernel's printk drops the dots;
// libtraceevent's print_ip4_addr keeps them, and perf 6.1 prints them),
// both byte-reversed with c.ipReverse; %pI6 eight groups of four hex
// digits with colons, %pi6 the same without colons; %pI6c compressed
// (appendIP6c); %pIS... a socket address (appendSockaddr).
func appendIP(b []byte, c *traceConv, f *perfdata.TraceField, raw []byte) ([]byte, error) {
	if f.Offset < 0 || f.Offset+f.Size > len(raw) {
		return b, fmt.Errorf("field %s lies past the %d bytes of the record", f.Name, len(raw))
	}
	a := raw[f.Offset : f.Offset+f.Size]
	switch {
	case c.ip == "S":
		return appendSockaddr(b, c, a)
	case c.ip == "4":
		return appendIP4(b, c.ext, c.ipReverse, a), nil
	case c.ipCompress:
		return appendIP6c(b, a), nil
	}
	return appendIP6(b, c.ext, a), nil
}

// appendIP6 prints the 16 bytes a as %pI6 (ext 'I': eight groups of four
// hex digits with colons) or %pi6 (ext 'i': without colons).
func appendIP6(b []byte, ext byte, a []byte) []byte {
	for j := 0; j < 16; j += 2 {
		b = fmt.Appendf(b, "%02x%02x", a[j], a[j+1])
		if ext == 'I' && j < 14 {
			b = append(b, ':')
		}
	}
	return b
}

// appendIP4 prints the 4 bytes a as %pI4 (ext 'I') or %pi4 (ext 'i'),
// last byte first when reverse, as libtraceevent's print_ip4_addr does.
func appendIP4(b []byte, ext byte, reverse bool, a []byte) []byte {
	if reverse {
		r := [4]byte{a[3], a[2], a[1], a[0]}
		a = r[:]
	}
	if ext == 'i' {
		return fmt.Appendf(b, "%03d.%03d.%03d.%03d", a[0], a[1], a[2], a[3])
	}
	return fmt.Appendf(b, "%d.%d.%d.%d", a[0], a[1], a[2], a[3])
}

// appendIP6c prints the 16 bytes a as libtraceevent's print_ip6c_addr
// does: an IPv4-mapped or ISATAP address ends in dotted decimal; the
// first longest run of two or more zero groups is "::"; a group prints in
// hex without leading zeros.
func appendIP6c(b []byte, a []byte) []byte {
	group := func(i int) uint16 { return uint16(a[2*i])<<8 | uint16(a[2*i+1]) }
	v4mapped := group(0)|group(1)|group(2)|group(3) == 0 && group(4) == 0 && group(5) == 0xffff
	isatap := a[8]|0x02 == 0x02 && a[9] == 0 && a[10] == 0x5e && a[11] == 0xfe
	groups := 8
	if v4mapped || isatap {
		groups = 6
	}
	zeroRun, longest := -1, 1
	for i := 0; i < groups; i++ {
		n := 0
		for j := i; j < groups && group(j) == 0; j++ {
			n++
		}
		if n > longest {
			zeroRun, longest = i, n
		}
	}
	needColon := false
	for i := 0; i < groups; i++ {
		if i == zeroRun {
			if needColon || i == 0 {
				b = append(b, ':')
			}
			b = append(b, ':')
			needColon = false
			i += longest - 1
			continue
		}
		if needColon {
			b = append(b, ':')
		}
		b = strconv.AppendUint(b, uint64(group(i)), 16)
		needColon = true
	}
	if groups == 6 {
		if needColon {
			b = append(b, ':')
		}
		b = appendIP4(b, 'I', false, a[12:16])
	}
	return b
}

// The socket address layouts %pIS reads: the family (host order, here
// little-endian as every field perfcheck reads), the port (network
// order), then the IPv4 address at 4 or the IPv6 one at 8.
const (
	afInet          = 2
	afInet6         = 10
	sockaddrIn6Size = 28
)

// appendSockaddr prints the socket address a as libtraceevent's
// print_ipsa_arg does for the conversion c: the address as %pI4 or
// %pI6 (%pi4, %pi6 for %piS), compressed as %pI6c with c.ipCompress, an
// IPv4 one byte-reversed with c.ipReverse, and with c.ipPort its port:
// "127.0.0.1:80", "[::1]:80". Another
// family, which the kernel's tracepoints do not write, is an error
// rather than a guess.
func appendSockaddr(b []byte, c *traceConv, a []byte) ([]byte, error) {
	port := uint16(a[2])<<8 | uint16(a[3])
	switch family := binary.LittleEndian.Uint16(a); family {
	case afInet:
		b = appendIP4(b, c.ext, c.ipReverse, a[4:8])
		if c.ipPort {
			b = fmt.Appendf(b, ":%d", port)
		}
		return b, nil
	case afInet6:
		if c.ipPort {
			b = append(b, '[')
		}
		if c.ipCompress {
			b = appendIP6c(b, a[8:24])
		} else {
			b = appendIP6(b, c.ext, a[8:24])
		}
		if c.ipPort {
			b = fmt.Appendf(b, "]:%d", port)
		}
		return b, nil
	default:
		return b, fmt.Errorf("%%pIS of a socket address of family %d", family)
	}
}
