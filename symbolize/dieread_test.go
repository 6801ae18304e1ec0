package symbolize

import (
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"os/exec"
	"path/filepath"
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
	sec := dieTestSections(f)
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
