package symbolize

import (
	"bytes"
	"debug/elf"
	"path/filepath"
	"testing"

	"github.com/perfcheck/perfcheck/internal/fixtures"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// uleb appends v as an unsigned LEB128.
func uleb(b []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// TestHostileLineTableCounts symbolizes libhot.so (testdata/perf/bin,
// gcc DWARF 5) whose first line program's header is rewritten in place:
// empty directory and file entry formats, with directory and file counts
// no bytes back (an entry with an empty format takes no bytes). The
// process must neither die nor blow up, and the error must name the
// file.
func TestHostileLineTableCounts(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name        string
		dirs, files uint64
	}{
		{"2^44 directories", 1 << 44, 0},
		{"2^24 directories and files", 1 << 24, 1 << 24},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			data := fixtures.LineTableCounts(t, fixtureBin(t, "libhot.so"), c.dirs, c.files)
			r := runHostile(t, "libhot.so", data)
			requireBounded(t, r)
			assert.Contains(t, r.out, "libhot.so")
			assert.Contains(t, r.out, "line table")
		})
	}
}

// TestHostilePclntabCount symbolizes goprog (testdata/perf/bin) as if
// built with -ldflags=-w: its DWARF sections renamed away (".debug_" to
// ".xebug_" in the section name table), so that .gopclntab answers, and
// the pclntab header's function count (nfunctab, the word after the
// 8-byte header) set to 0xffffffff.
func TestHostilePclntabCount(t *testing.T) {
	t.Parallel()
	data := fixtures.PclntabCount(t, fixtureBin(t, "goprog"))
	r := runHostile(t, "goprog", data)
	requireBounded(t, r)
	assert.Contains(t, r.out, "goprog")
	assert.Contains(t, r.out, ".gopclntab")
}

// TestHostileCompressedSections symbolizes libhot.so (testdata/perf/bin)
// whose DWARF sections are replaced by zlib streams of zeros declaring
// their true size, about a thousand times what they take (deflate's best
// ratio): one 1 GB section in a 1 MB file, then four in a 4 MB one; and
// by a zstd frame of 1 MiB declaring 1 GiB (fixtures.ZstdSection). Each
// must be refused before it is decompressed, with an error naming the
// file and the section.
func TestHostileCompressedSections(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		zstd bool
		secs []string
	}{
		{false, []string{".debug_info"}},
		{false, []string{".debug_info", ".debug_abbrev", ".debug_line", ".debug_str"}},
		{true, []string{".debug_info"}},
	} {
		name := filepath.Join(c.secs...)
		if c.zstd {
			name = "zstd/" + name
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			data := fixtureBin(t, "libhot.so")
			stream, size := fixtures.ZlibZeros(t, 1<<30)
			contents := fixtures.CompressedSection(size, stream)
			if c.zstd {
				contents = fixtures.ZstdSection(t, 1<<30)
			}
			for _, s := range c.secs {
				data = fixtures.ELFWithSection(t, data, s, elf.SHT_PROGBITS, elf.SHF_COMPRESSED, contents)
			}
			r := runHostile(t, "libhot.so", data)
			requireBounded(t, r)
			assert.Contains(t, r.out, "libhot.so")
			assert.Contains(t, r.out, "decompression budget exceeded")
		})
	}
}

// TestHostileMiniDebugInfo symbolizes libhot.so (testdata/perf/bin) with
// a .gnu_debugdata section added that holds a 120-byte xz stream of four
// empty blocks, each declaring a 4 GiB dictionary.
func TestHostileMiniDebugInfo(t *testing.T) {
	t.Parallel()
	bomb := fixtures.XZDictBomb(t, 4)
	require.Len(t, bomb, 120)
	data := fixtures.ELFWithSection(t, fixtureBin(t, "libhot.so"), ".gnu_debugdata", elf.SHT_PROGBITS, 0, bomb)
	r := runHostile(t, "libhot.so", data)
	requireBounded(t, r)
}

// TestHostileStuckReader symbolizes libhot.so (testdata/perf/bin) whose
// last .debug_info byte, the null entry that ends its unit's children, is
// set to 0x80: a ULEB128 cut short, which debug/dwarf's Reader reads as
// a null entry without moving on, forever. The units are listed from
// their headers, without that Reader walking their entries, and the DIE
// reader refuses the unit at the byte.
func TestHostileStuckReader(t *testing.T) {
	t.Parallel()
	data := fixtureBin(t, "libhot.so")
	ef, err := elf.NewFile(bytes.NewReader(data))
	require.NoError(t, err)
	s := ef.Section(".debug_info")
	require.NotNil(t, s)
	require.Zero(t, data[s.Offset+s.Size-1])
	data[s.Offset+s.Size-1] = 0x80
	r := runHostile(t, "libhot.so", data)
	requireBounded(t, r)
	assert.Contains(t, r.out, "DWARF unit at offset 0xc: malformed input: .debug_info offset 0x1c1: LEB128 value runs past the end")
}

// TestHostileUnitCount symbolizes libhot.so (testdata/perf/bin) whose
// .debug_info is replaced by a zlib stream of 180 MB of empty DWARF 4
// unit headers (11 bytes each), within the decompression budget:
// debug/dwarf makes a record of some 70 bytes per unit, at once.
func TestHostileUnitCount(t *testing.T) {
	t.Parallel()
	unit := []byte{7, 0, 0, 0, 4, 0, 0, 0, 0, 0, 8} // length 7, version 4, abbrev 0, address size 8
	stream, size := fixtures.ZlibRepeat(t, unit, 180<<20)
	data := fixtures.ELFWithSection(t, fixtureBin(t, "libhot.so"), ".debug_info", elf.SHT_PROGBITS, elf.SHF_COMPRESSED, fixtures.CompressedSection(size, stream))
	r := runHostile(t, "libhot.so", data)
	requireBounded(t, r)
	assert.Contains(t, r.out, "libhot.so")
}

// TestHostileSymbolNames symbolizes libhot.so (testdata/perf/bin) whose
// .symtab, or .dynsym, holds 40,000 functions that all name one string of
// 512 KiB (fixtures.SymbolNames): debug/elf, which copies every name,
// would make 20 GB of them, and a copy of each name kept would too. Names
// are views of the string table, and what is kept of them is copied up to
// the table's size, then left as views. Then the .dynsym variant whose
// .plt holds 65,536 stubs through the one GOT slot .rela.plt names
// (fixtures.PLTStubs): each stub would be named with a copy of that
// 512 KiB name plus "@plt"; the names stop at twice the string tables,
// with a warning.
func TestHostileSymbolNames(t *testing.T) {
	t.Parallel()
	hot := fixtureBin(t, "libhot.so")
	for name, c := range map[string]struct {
		data []byte
		want string
	}{
		"symtab": {fixtures.SymbolNames(t, hot, ".symtab", 40000, 512<<10), ""},
		"dynsym": {fixtures.SymbolNames(t, hot, ".dynsym", 40000, 512<<10), ""},
		"plt": {fixtures.PLTStubs(t, fixtures.SymbolNames(t, hot, ".dynsym", 8, 512<<10), 65536),
			"the names of its stubs take more than twice the string tables"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := runHostile(t, "libhot.so", c.data)
			requireBounded(t, r)
			assert.Contains(t, r.out, c.want)
		})
	}
}

// TestHostileDWARFNames symbolizes libhot.so (testdata/perf/bin) whose
// DWARF is one unit of 100,000 subprograms (fixtures.DWARFNames) named by
// a .debug_str of one 512 KiB string: all the same string, or each a
// different suffix of it. Copying each name would take 50 GB, and finding
// each name's end or hashing it, for each entry, minutes. The unit list
// is read without decoding the entries (debug/dwarf's SkipChildren
// decodes them all, names copied); a name is found by its offset, its end
// found in time that does not grow with how often it is named; the
// suffixes' copies stop at twice the sections, and the unit is refused
// with a warning.
func TestHostileDWARFNames(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		suffixes bool
		want     string
	}{
		"one-name": {false, ""},
		"suffixes": {true, "function names take more than twice the DWARF sections they come from"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			data := fixtures.DWARFNames(t, fixtureBin(t, "libhot.so"), 100000, 512<<10, c.suffixes)
			r := runHostile(t, "libhot.so", data)
			requireBounded(t, r)
			assert.Contains(t, r.out, c.want)
		})
	}
}
