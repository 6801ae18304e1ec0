package main

import (
	"encoding/binary"
	"fmt"

	"github.com/perfcheck/perfcheck/perfdata"
)

// bitmask returns the __data_loc field name (a cpumask_t or unsigned
// long[] the kernel wrote with __assign_bitmask) as __get_bitmask prints
// it through libtraceevent's print_bitmask_to_seq: the bytes in hex from
// the last to the first (the array's little-endian words as one number),
// a comma before every fourth byte counted from the first, no leading
// zeros trimmed ("00000000,00000003" for a 64-bit mask of CPUs 0 and 1).
func (r *traceRecord) bitmask(name string) (traceValue, error) {
	b, err := r.dynamic(name)
	if err != nil {
		return traceValue{}, err
	}
	out := make([]byte, 0, len(b)*2+len(b)/4)
	for i := len(b) - 1; i >= 0; i-- {
		out = append(out, hexDigits[b[i]>>4], hexDigits[b[i]&0xf])
		if i > 0 && i%4 == 0 {
			out = append(out, ',')
		}
	}
	return traceValue{isStr: true, s: string(out)}, nil
}

// dynamic returns the bytes of the __data_loc field name: the u32 at the
// field's offset holds their offset (low 16 bits) and length (high 16
// bits) in the record.
func (r *traceRecord) dynamic(name string) ([]byte, error) {
	if r.ev == nil {
		return nil, fmt.Errorf("field %s where a constant belongs", name)
	}
	if f := fieldNamed(r.ev, name); f != nil {
		return r.dataLoc(f)
	}
	return nil, fmt.Errorf("no field %s in %s:%s", name, r.ev.System, r.ev.Name)
}

// dataLoc returns the bytes of the __data_loc field f, which a piece
// resolved when the format was parsed.
func (r *traceRecord) dataLoc(f *perfdata.TraceField) ([]byte, error) {
	if !isDataLoc(f) || f.Size != 4 {
		return nil, fmt.Errorf("field %s (%s) is no __data_loc: %w", f.Name, f.Type, errTraceUnsupported)
	}
	if f.Offset < 0 || f.Offset+4 > len(r.raw) {
		return nil, fmt.Errorf("field %s lies past the %d bytes of the record", f.Name, len(r.raw))
	}
	return dataLocBytes(f.Name, r.raw[f.Offset:f.Offset+4], r.raw)
}

// dataLocBytes returns the bytes of the record raw that the __data_loc
// word of field name locates: its low 16 bits are their offset, its high
// 16 bits their length.
func dataLocBytes(name string, word, raw []byte) ([]byte, error) {
	loc := binary.LittleEndian.Uint32(word)
	off, n := int(loc&0xffff), int(loc>>16)
	if off+n > len(raw) {
		return nil, fmt.Errorf("field %s: data past the record", name)
	}
	return raw[off : off+n], nil
}
