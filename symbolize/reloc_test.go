package symbolize

import (
	"bytes"
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/internal/budget"
)

// relocatedDWARF reads the DWARF of the relocatable file p as the
// symbolizer does: loadSections, then relocate.
func relocatedDWARF(t *testing.T, ef *elf.File, ra io.ReaderAt) (*dwarf.Data, map[string][]byte) {
	t.Helper()
	sec, _, err := loadSections(ef, ra, dwarfSections, account{budget.New(-1), "obj"})
	require.NoError(t, err)
	require.NoError(t, relocate(ef, sec))
	d, err := dwarf.New(sec["abbrev"], nil, nil, sec["info"], sec["line"], nil, sec["ranges"], sec["str"])
	require.NoError(t, err)
	for _, n := range []string{"addr", "line_str", "rnglists", "str_offsets"} {
		if b := sec[n]; b != nil {
			require.NoError(t, d.AddSection(".debug_"+n, b))
		}
	}
	return d, sec
}

// TestRelocateAsDebugElf: for objects gcc writes (testdata/prog.c with
// -c: DWARF 5 and 4, sections compressed or not), relocate gives the
// DWARF that elf.File.DWARF gives, entry for entry and line row for line
// row: what checkLineTables checks is what debug/dwarf reads.
func TestRelocateAsDebugElf(t *testing.T) {
	t.Parallel()
	needTool(t, "gcc")
	for _, flags := range [][]string{{"-gdwarf-5"}, {"-gdwarf-4"}, {"-gdwarf-5", "-gz=zlib"}} {
		t.Run(flags[len(flags)-1], func(t *testing.T) {
			t.Parallel()
			p := compile(t, t.TempDir(), "prog.o", "gcc", testdataPath(t, "prog.c"), append([]string{"-c", "-O2"}, flags...)...)
			ef, err := elf.Open(p)
			require.NoError(t, err)
			defer ef.Close()
			require.Equal(t, elf.ET_REL, ef.Type)
			want, err := ef.DWARF()
			require.NoError(t, err)
			f, err := os.Open(p)
			require.NoError(t, err)
			defer f.Close()
			got, _ := relocatedDWARF(t, ef, f)
			wr, gr := want.Reader(), got.Reader()
			units := 0
			for {
				we, err := wr.Next()
				require.NoError(t, err)
				ge, err := gr.Next()
				require.NoError(t, err)
				require.Equal(t, we, ge)
				if we == nil {
					break
				}
				if we.Tag != dwarf.TagCompileUnit {
					continue
				}
				units++
				wl, err := want.LineReader(we)
				require.NoError(t, err)
				gl, err := got.LineReader(ge)
				require.NoError(t, err)
				var wle, gle dwarf.LineEntry
				for {
					werr, gerr := wl.Next(&wle), gl.Next(&gle)
					require.Equal(t, werr, gerr)
					if werr != nil {
						break
					}
					assert.Equal(t, wle.Address, gle.Address)
					assert.Equal(t, wle.File.Name, gle.File.Name)
					assert.Equal(t, wle.Line, gle.Line)
				}
			}
			assert.Positive(t, units)
		})
	}
}

// TestRelocatedLineCount: a relocation can write any bytes of a line
// program's header, so the header is checked after relocation. testdata's
// prog.c compiled with -c -gdwarf-5 gets a relocation of its own: the
// first R_X86_64_32 of .rela.debug_line is moved to the header's
// directory count (a ULEB128 byte 0x80 put before it so that the four
// bytes written decode as a count of some 2^28), and the relocated
// program is refused before debug/dwarf's LineReader sees it.
func TestRelocatedLineCount(t *testing.T) {
	t.Parallel()
	needTool(t, "gcc")
	p := compile(t, t.TempDir(), "prog.o", "gcc", testdataPath(t, "prog.c"), "-c", "-O2", "-gdwarf-5")
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	ef, err := elf.NewFile(bytes.NewReader(data))
	require.NoError(t, err)
	if ef.Machine != elf.EM_X86_64 {
		t.Skipf("built for %v", ef.Machine)
	}
	line := ef.Section(".debug_line")
	rela := ef.Section(".rela.debug_line")
	require.NotNil(t, line)
	require.NotNil(t, rela)
	// The header up to the directory count: unit_length (4), version
	// (2), address_size, seg_sel_size, header_length (4), min_inst,
	// max_ops, default_is_stmt, line_base, line_range, opcode_base,
	// standard_opcode_lengths (opcode_base-1), then the directory
	// entry format count and its (form, content) ULEB pairs.
	h := data[line.Offset:]
	at := 18 + int(h[17]) - 1
	nfmt := int(h[at])
	at++
	for range nfmt {
		at += 2 // both ULEB128s fit a byte in what gcc writes
	}
	// at is the directories count; overwrite it and the next bytes with
	// the four a relocation writes, a ULEB128 of some 2^28.
	le := binary.LittleEndian
	relaData := data[rela.Offset : rela.Offset+rela.Size]
	var moved bool
	for e := relaData; len(e) >= 24; e = e[24:] {
		if elf.R_X86_64(le.Uint64(e[8:])&0xffff) == elf.R_X86_64_32 {
			le.PutUint64(e, uint64(at))
			le.PutUint64(e[16:], 0x7fffff80) // S (0, a section symbol) + A: bytes 80 ff ff 7f
			moved = true
			break
		}
	}
	require.True(t, moved, "no R_X86_64_32 in .rela.debug_line")
	ef, err = elf.NewFile(bytes.NewReader(data))
	require.NoError(t, err)
	raw, _, err := loadSections(ef, bytes.NewReader(data), dwarfSections, account{budget.New(-1), "obj"})
	require.NoError(t, err)
	rawLines := &lineSections{line: raw["line"], str: raw["str"], lineStr: raw["line_str"], order: ef.ByteOrder}
	require.NoError(t, rawLines.checkLineTables(0, ""), "the bytes before relocation are sound")
	_, sec := relocatedDWARF(t, ef, bytes.NewReader(data))
	ls := &lineSections{line: sec["line"], str: sec["str"], lineStr: sec["line_str"], order: ef.ByteOrder}
	err = ls.checkLineTables(0, "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "declares 268435328 directories")
}
