package symbolize

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"path/filepath"
	"testing"

	"github.com/perfcheck/perfcheck/internal/fixtures"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lineTables returns where, in data (an ELF file with an uncompressed
// DWARF 5 .debug_line, 32-bit DWARF), the first line program's directory
// and file tables start (at directory_entry_format_count) and end (where
// the program starts).
func lineTables(t *testing.T, data []byte) (start, end int) {
	t.Helper()
	ef, err := elf.NewFile(bytes.NewReader(data))
	require.NoError(t, err)
	s := ef.Section(".debug_line")
	require.NotNil(t, s)
	require.Zero(t, s.Flags&elf.SHF_COMPRESSED)
	off := int(s.Offset)
	h := data[off:]
	require.Equal(t, uint16(5), binary.LittleEndian.Uint16(h[4:]), "DWARF 5 line table")
	opcodeBase := int(h[17])
	start = off + 18 + opcodeBase - 1
	end = off + 12 + int(binary.LittleEndian.Uint32(h[8:]))
	return start, end
}

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
			data := fixtureBin(t, "libhot.so")
			start, end := lineTables(t, data)
			tab := uleb([]byte{0}, c.dirs)
			tab = append(tab, 0)
			tab = uleb(tab, c.files)
			require.LessOrEqual(t, len(tab), end-start)
			copy(data[start:], tab)
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
	data := fixtureBin(t, "goprog")
	ef, err := elf.NewFile(bytes.NewReader(data))
	require.NoError(t, err)
	strs := ef.Sections[binary.LittleEndian.Uint16(data[0x3e:])] // e_shstrndx
	names := data[strs.Offset : strs.Offset+strs.Size]
	copy(names, bytes.ReplaceAll(names, []byte(".debug_"), []byte(".xebug_")))
	pcln := ef.Section(".gopclntab")
	require.NotNil(t, pcln)
	binary.LittleEndian.PutUint64(data[pcln.Offset+8:], 0xffffffff)

	r := runHostile(t, "goprog", data)
	requireBounded(t, r)
	assert.Contains(t, r.out, "goprog")
	assert.Contains(t, r.out, ".gopclntab")
}

// TestHostileCompressedSections symbolizes libhot.so (testdata/perf/bin)
// whose DWARF sections are replaced by zlib streams of zeros declaring
// their true size, about a thousand times what they take (deflate's best
// ratio): one 1 GB section in a 1 MB file, then four in a 4 MB one. Each
// must be refused before it is decompressed, with an error naming the
// file and the section.
func TestHostileCompressedSections(t *testing.T) {
	t.Parallel()
	for _, secs := range [][]string{
		{".debug_info"},
		{".debug_info", ".debug_abbrev", ".debug_line", ".debug_str"},
	} {
		t.Run(filepath.Join(secs...), func(t *testing.T) {
			t.Parallel()
			data := fixtureBin(t, "libhot.so")
			stream, size := zlibZeros(t, 1<<30)
			for _, s := range secs {
				data = elfWithSection(t, data, s, elf.SHT_PROGBITS, elf.SHF_COMPRESSED, compressedSection(size, stream))
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
	data := elfWithSection(t, fixtureBin(t, "libhot.so"), ".gnu_debugdata", elf.SHT_PROGBITS, 0, bomb)
	r := runHostile(t, "libhot.so", data)
	requireBounded(t, r)
}

// TestHostileStuckReader symbolizes libhot.so (testdata/perf/bin) whose
// last .debug_info byte, the null entry that ends its unit's children, is
// set to 0x80: a ULEB128 cut short, which debug/dwarf's Reader reads as
// a null entry without moving on, forever.
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
	assert.Contains(t, r.out, "no progress")
}

// TestHostileUnitCount symbolizes libhot.so (testdata/perf/bin) whose
// .debug_info is replaced by a zlib stream of 180 MB of empty DWARF 4
// unit headers (11 bytes each), within the decompression budget:
// debug/dwarf makes a record of some 70 bytes per unit, at once.
func TestHostileUnitCount(t *testing.T) {
	t.Parallel()
	unit := []byte{7, 0, 0, 0, 4, 0, 0, 0, 0, 0, 8} // length 7, version 4, abbrev 0, address size 8
	stream, size := zlibRepeat(t, unit, 180<<20)
	data := elfWithSection(t, fixtureBin(t, "libhot.so"), ".debug_info", elf.SHT_PROGBITS, elf.SHF_COMPRESSED, compressedSection(size, stream))
	r := runHostile(t, "libhot.so", data)
	requireBounded(t, r)
	assert.Contains(t, r.out, "libhot.so")
}
