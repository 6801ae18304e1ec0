package symbolize

import (
	"bytes"
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// dieTestSections returns the DWARF sections of a small gcc DWARF 5
// binary (uncompressed, as debug/elf gives them).
func dieTestSections(tb testing.TB) map[string][]byte {
	tb.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		tb.Skip("gcc not installed")
	}
	p := filepath.Join(tb.TempDir(), "prog")
	if out, err := exec.Command(gcc, "-O2", "-g", "-gdwarf-5", "-o", p, filepath.Join("..", "testdata", "symbolize", "prog.c")).CombinedOutput(); err != nil {
		tb.Fatalf("gcc: %v\n%s", err, out)
	}
	ef, err := elf.Open(p)
	if err != nil {
		tb.Fatal(err)
	}
	defer ef.Close()
	sec := map[string][]byte{}
	for _, n := range []string{"abbrev", "info", "str", "line_str", "str_offsets", "addr", "rnglists"} {
		if s := ef.Section(".debug_" + n); s != nil {
			b, err := s.Data()
			if err != nil {
				tb.Fatal(err)
			}
			sec[n] = b
		}
	}
	return sec
}

// walkDIEs reads every DIE of every unit of s, skipping the children of
// every third DIE that has some, and returns the number read and the
// first error.
func walkDIEs(s *dieSections) (int, error) {
	n := 0
	for _, h := range s.units {
		var r dieReader
		if err := s.unitReader(&dwarf.Entry{Offset: dwarf.Offset(h.die)}, &r); err != nil {
			return n, err
		}
		var d die
		for {
			ok, err := r.next(&d)
			if err != nil {
				return n, err
			}
			if !ok {
				break
			}
			n++
			if d.children && n%3 == 0 {
				if err := r.skipChildren(&d); err != nil {
					return n, err
				}
			}
		}
	}
	return n, nil
}

// TestDIEReaderMalformed checks that broken DWARF gives an error naming
// the section and offset, for a unit cut short, an abbreviation code the
// table lacks, a string offset outside .debug_str and an unknown form.
func TestDIEReaderMalformed(t *testing.T) {
	t.Parallel()
	sec := dieTestSections(t)
	good := newDIESections(sec, binary.LittleEndian)
	if n, err := walkDIEs(good); err != nil || n < 100 {
		t.Fatalf("intact sections: %d DIEs, %v", n, err)
	}
	h := good.units[len(good.units)-1]
	clone := func() map[string][]byte {
		m := map[string][]byte{}
		for k, v := range sec {
			m[k] = append([]byte(nil), v...)
		}
		return m
	}
	for _, c := range []struct {
		what   string
		change func(m map[string][]byte)
		want   string
	}{
		{"unit cut short", func(m map[string][]byte) {
			// The unit's length ends it 3 bytes into its first
			// DIE (a 32-bit DWARF unit: 4-byte length).
			binary.LittleEndian.PutUint32(m["info"][h.off:], uint32(h.die+3-h.off-4))
		}, "left"},
		{"values past the unit's end", func(m map[string][]byte) {
			// LEB128 continuation bytes from the first DIE's
			// code to the unit's end.
			info := m["info"]
			for i := h.die; i < h.end; i++ {
				info[i] = 0xff
			}
		}, "LEB128 value runs past the end"},
		{"unknown abbreviation code", func(m map[string][]byte) {
			m["info"][h.die] = 0x7f
		}, "abbreviation code 127 not in the unit's table"},
		{"string offset outside .debug_str", func(m map[string][]byte) {
			for _, n := range []string{"str", "line_str", "str_offsets"} {
				m[n] = m[n][:0]
			}
		}, "outside the section"},
		{"unknown form", func(m map[string][]byte) {
			// Rewrite the first attribute form of the unit entry's
			// abbreviation to an undefined form (0x7e).
			ab := m["abbrev"]
			c := cursor{b: ab, pos: int(h.abbrevOff), end: len(ab)}
			for {
				code := c.uleb()
				c.uleb() // tag
				c.u8()
				if code == uint64(m["info"][h.die]) {
					c.uleb() // attribute
					if ab[c.pos] >= 0x80 {
						t.Skip("first form is not one byte")
					}
					ab[c.pos] = 0x7e
					return
				}
				for {
					a, f := c.uleb(), c.uleb()
					if f == formImplicitConst {
						c.sleb()
					}
					if a == 0 && f == 0 {
						break
					}
				}
			}
		}, "unknown attribute form 0x7e"},
	} {
		m := clone()
		c.change(m)
		s := newDIESections(m, binary.LittleEndian)
		_, err := walkDIEs(s)
		t.Logf("%s: %v", c.what, err)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "offset 0x") {
			t.Errorf("%s: error %v, want one with %q and an offset", c.what, err, c.want)
		}
	}
}

// FuzzDIEReader reads every DIE of arbitrary .debug_info and .debug_abbrev
// bytes (with a real binary's string, address and range list sections):
// an error or a walk to the end, never a panic, a hang or an allocation
// beyond the input's size.
func FuzzDIEReader(f *testing.F) {
	// A small binary's sections (tinyBinaries): the fuzzer minimizes
	// every new input it finds, and the time that takes grows with
	// the input.
	bin := tinyBinaries(f)["dwarf5"]
	if bin == nil {
		f.Skip("gcc not installed")
	}
	ef, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		f.Fatal(err)
	}
	sec := map[string][]byte{}
	for _, n := range []string{"abbrev", "info", "str", "line_str", "str_offsets", "addr", "rnglists"} {
		if s := ef.Section(".debug_" + n); s != nil {
			sec[n], _ = s.Data()
		}
	}
	f.Add(sec["info"], sec["abbrev"])
	f.Fuzz(func(t *testing.T, info, abbrev []byte) {
		m := map[string][]byte{}
		for k, v := range sec {
			m[k] = v
		}
		m["info"], m["abbrev"] = info, abbrev
		s := newDIESections(m, binary.LittleEndian)
		if _, err := walkDIEs(s); err != nil && !strings.Contains(err.Error(), "offset") {
			t.Fatalf("error without an offset: %v", err)
		}
	})
}

// TestDIEReaderForms reads a hand-built DWARF 4 unit whose DIEs use the
// forms compilers here do not emit (indirect, data16, the block forms,
// ref1/ref2/ref8/ref_udata, ref_sig8, flag, negative sdata) and repeat
// attributes (Entry.Val returns the first), and checks that every DIE,
// and the children skipped through DW_AT_sibling, equal what debug/dwarf
// reads from the same bytes.
func TestDIEReaderForms(t *testing.T) {
	t.Parallel()
	uleb := func(b []byte, v uint64) []byte {
		for {
			c := byte(v & 0x7f)
			v >>= 7
			if v == 0 {
				return append(b, c)
			}
			b = append(b, c|0x80)
		}
	}
	type spec struct{ attr, form uint64 }
	abbrevs := []struct {
		tag      uint64
		children byte
		attrs    []spec
	}{
		{0x11, 1, []spec{{0x03, formString}, {0x11, formAddr}, {0x12, formData4}}}, // compile_unit
		{0x2e, 1, []spec{ // subprogram
			{0x03, formString}, {0x03, formStrp}, {0x6e, formStrp}, {0x11, formAddr}, {0x12, formAddr},
			{0x59, formSdata}, {0x58, formUdata}, {0x57, formData2}, {0x20, formData1},
			{0x02, formBlock1}, {0x1c, formData16}, {0x3a, formIndirect}, {0x3f, formFlag},
			{0x49, formRefUdata}, {0x31, formRef1}, {0x47, formRef2}, {0x01, formRef8},
			{0x69, formRefSig8}, {0x40, formBlock2}, {0x4a, formBlock4}, {0x2a, formBlock},
			{0x59, formData1}, {0x3c, formFlagPresent}, {0x55, formSecOffset},
		}},
		{0x1d, 0, []spec{ // inlined_subroutine: constant high_pc, negative values
			{0x31, formRef4}, {0x11, formAddr}, {0x12, formData8}, {0x59, formSdata},
			{0x57, formSdata}, {0x58, formData4}, {0x20, formUdata},
		}},
	}
	var ab []byte
	for i, a := range abbrevs {
		ab = append(uleb(uleb(ab, uint64(i+1)), a.tag), a.children)
		for _, s := range a.attrs {
			ab = uleb(uleb(ab, s.attr), s.form)
		}
		ab = append(ab, 0, 0)
	}
	ab = append(ab, 0)
	str := []byte("\x00first\x00linkage_name\x00")
	le := binary.LittleEndian
	d := uleb(nil, 1) // the unit entry, at offset 11 (after the header)
	d = append(d, "cu\x00"...)
	d = le.AppendUint64(d, 0x1000)
	d = le.AppendUint32(d, 0x100)
	d = uleb(d, 2) // the subprogram
	d = append(d, "local\x00"...)
	d = le.AppendUint32(d, 1) // strp "first": a second DW_AT_name, ignored
	d = le.AppendUint32(d, 7) // strp "linkage_name"
	d = le.AppendUint64(d, 0x1010)
	d = le.AppendUint64(d, 0x1020)
	d = append(d, 0x7f)                            // sdata -1
	d = uleb(d, 300)                               // udata
	d = le.AppendUint16(d, 9)                      // data2
	d = append(d, 3)                               // data1
	d = append(d, 2, 0xaa, 0xbb)                   // block1
	d = append(d, make([]byte, 16)...)             // data16
	d = le.AppendUint32(uleb(d, formGNURefAlt), 9) // indirect, with a two-byte form code
	d = append(d, 1)                               // flag
	d = uleb(d, 0)                                 // ref_udata: the unit's header
	d = append(d, 11)                              // ref1: the unit entry
	d = le.AppendUint16(d, 11)                     // ref2
	sib := len(d)                                  //
	d = le.AppendUint64(d, 0)                      // ref8 DW_AT_sibling, set below
	d = le.AppendUint64(d, 0x1234567890)           // ref_sig8
	d = append(le.AppendUint16(d, 1), 0xcc)        // block2
	d = append(le.AppendUint32(d, 2), 1, 2)        // block4
	d = append(uleb(d, 3), 1, 2, 3)                // block
	d = append(d, 5)                               // data1: a second DW_AT_call_line, ignored
	d = le.AppendUint32(d, 0x40)                   // sec_offset DW_AT_ranges
	d = uleb(d, 3)                                 // its child
	d = le.AppendUint32(d, 11)                     // ref4
	d = le.AppendUint64(d, 0x1011)                 //
	d = le.AppendUint64(d, 4)                      // data8: high_pc = low_pc + 4
	d = append(d, 0x80, 0x7f)                      // sdata -128
	d = append(d, 0x40)                            // sdata -64
	d = le.AppendUint32(d, 0xffffffff)             // data4
	d = uleb(d, 1<<40)                             // udata
	d = append(d, 0)                               // end of the subprogram's children
	le.PutUint64(d[sib:], uint64(11+len(d)))       // its sibling: what follows
	d = uleb(d, 3)                                 // an inlined call outside any function
	d = le.AppendUint32(d, 11)
	d = le.AppendUint64(d, 0x1030)
	d = le.AppendUint64(d, 8)
	d = append(d, 1, 2)
	d = le.AppendUint32(d, 1)
	d = uleb(d, 1)
	d = append(d, 0) // end of the unit's children
	info := le.AppendUint32(nil, uint32(7+len(d)))
	info = le.AppendUint16(info, 4)
	info = le.AppendUint32(info, 0) // abbrev offset
	info = append(info, 8)          // address size
	info = append(info, d...)

	dd, err := dwarf.New(ab, nil, nil, info, nil, nil, nil, str)
	if err != nil {
		t.Fatal(err)
	}
	s := newDIESections(map[string][]byte{"info": info, "abbrev": ab, "str": str}, le)
	for _, skip := range []bool{false, true} {
		var r dieReader
		if err := s.unitReader(&dwarf.Entry{Offset: 11}, &r); err != nil {
			t.Fatal(err)
		}
		dr := dd.Reader()
		n := 0
		for {
			e, err := dr.Next()
			if err != nil {
				t.Fatal(err)
			}
			var got, want die
			ok, err := r.next(&got)
			if e == nil {
				if ok || err != nil {
					t.Fatalf("dieReader goes on past the unit (%v)", err)
				}
				break
			}
			if !ok || err != nil {
				t.Fatalf("entry at %#x: dieReader ended (%v)", e.Offset, err)
			}
			n++
			dieFromEntry(e, &want)
			want.own = false
			if e.Tag == 0 {
				want.off = got.off
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("entry at %#x (%v):\n dieReader   %+v\n debug/dwarf %+v", e.Offset, e.Tag, got, want)
			}
			if skip && e.Tag == dwarf.TagSubprogram {
				if got.has&hasSibling == 0 {
					t.Fatal("the subprogram's DW_AT_sibling was not read")
				}
				dr.SkipChildren()
				if err := r.skipChildren(&got); err != nil {
					t.Fatal(err)
				}
			}
		}
		if want := map[bool]int{false: 6, true: 4}[skip]; n != want {
			t.Fatalf("skip %v: %d entries, want %d", skip, n, want)
		}
	}
	// The checks above compare with debug/dwarf; these pin what both read.
	var r dieReader
	s.unitReader(&dwarf.Entry{Offset: 11}, &r)
	var cu, sp, in die
	r.next(&cu)
	r.next(&sp)
	r.next(&in)
	if sp.name != "local" || sp.linkage != "linkage_name" || sp.callLine != -1 || sp.callFile != 300 || sp.callCol != 9 ||
		sp.origin != 11 || sp.spec != 11 || sp.has&(hasInline|hasDecl|hasRanges) != hasInline|hasDecl|hasRanges {
		t.Errorf("subprogram: %+v", sp)
	}
	if !in.highConst || in.highOff != 4 || in.callLine != -128 || in.callCol != -64 || in.callFile != 0xffffffff {
		t.Errorf("inlined call: %+v", in)
	}
}
