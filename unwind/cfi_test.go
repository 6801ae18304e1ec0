package unwind

import (
	"bytes"
	"encoding/binary"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/internal/elfload"
)

// The tests below build .eh_frame sections byte by byte: the cases they
// need (another return address column, a CIE after its FDE in the 64-bit
// form, deep remember_state nesting, malformed augmentations) are not in
// any binary a compiler here makes.

// cieSpec is a version 1 CIE: code alignment 1, data alignment -8.
type cieSpec struct {
	aug     string // "" or "z..."
	augData []byte
	ra      byte   // return address column
	init    []byte // initial instructions
	long    bool   // the 64-bit length form
}

// fdeSpec is an FDE with 8-byte absolute pointers (the CIE has no 'R').
type fdeSpec struct {
	start, size uint64
	insns       []byte
}

// entry returns body with its length in front, in the 32- or 64-bit form.
func entry(body []byte, long bool) []byte {
	if long {
		b := binary.LittleEndian.AppendUint32(nil, 0xffffffff)
		return append(binary.LittleEndian.AppendUint64(b, uint64(len(body))), body...)
	}
	return append(binary.LittleEndian.AppendUint32(nil, uint32(len(body))), body...)
}

func (c cieSpec) bytes() []byte {
	b := []byte{0, 0, 0, 0, 1} // CIE id, version
	b = append(append(b, c.aug...), 0, 1, 0x78, c.ra)
	if c.aug != "" {
		b = append(append(b, byte(len(c.augData))), c.augData...)
	}
	return entry(append(b, c.init...), c.long)
}

// bytes returns the FDE placed at section offset at, its CIE at cieOff.
func (f fdeSpec) bytes(at, cieOff int, zAug bool) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(at+4-cieOff))
	b = binary.LittleEndian.AppendUint64(b, f.start)
	b = binary.LittleEndian.AppendUint64(b, f.size)
	if zAug {
		b = append(b, 0)
	}
	return entry(append(b, f.insns...), false)
}

// ehFrame lays out c, then fdes.
func ehFrame(c cieSpec, fdes ...fdeSpec) []byte {
	b := c.bytes()
	for _, f := range fdes {
		b = append(b, f.bytes(len(b), 0, c.aug != "")...)
	}
	return b
}

// x86-64 CIE rules at a function's entry: CFA = rsp + 8, the return
// address at CFA - 8 (in column ra).
func entryRules(ra byte) []byte { return []byte{0x80 | ra, 1, 0x0c, dwRSP, 8} }

const secOff = 0x4000 // the file offset the tests give the section

func parsed(t *testing.T, data []byte) *Table {
	t.Helper()
	tb := &Table{loads: []elfload.Segment{{Off: 0, Filesz: 1 << 20, Vaddr: 0, Exec: true}}}
	require.NoError(t, tb.parse(data, 0x100000, secOff))
	return tb
}

func formatError(t *testing.T, err error) *FormatError {
	t.Helper()
	require.ErrorIs(t, err, ErrNoCFI)
	var fe *FormatError
	require.ErrorAs(t, err, &fe)
	return fe
}

// The return address is where the CIE's return address column says, not
// always rip's column: the walk follows a CIE that names rbx (3).
func TestWalkFollowsReturnAddressColumn(t *testing.T) {
	t.Parallel()
	const rbx = 3
	tb := parsed(t, ehFrame(cieSpec{ra: rbx, init: entryRules(rbx)}, fdeSpec{start: 0x1000, size: 0x100}))
	const ip, sp = 1 << 8, 1 << 7 // perf's register bits of IP and SP; SP's value first
	stack := binary.LittleEndian.AppendUint64(nil, 0x2000)
	got := Walk(&UserStack{Mask: ip | sp, Regs: []uint64{0x7000, 0x1010}, Stack: stack}, func(pc uint64) (*Table, uint64) {
		if pc >= 0x1000 && pc < 0x1100 {
			return tb, pc
		}
		return nil, 0
	}, nil)
	assert.Equal(t, []uint64{0x1010, 0x1fff}, got)
}

// A CIE in the 64-bit length form: its id is still 4 bytes in .eh_frame.
func TestParseLongCIE(t *testing.T) {
	t.Parallel()
	c := cieSpec{ra: dwRA, init: entryRules(dwRA), long: true}
	tb := parsed(t, ehFrame(c, fdeSpec{start: 0x1000, size: 0x100}))
	require.Len(t, tb.fdes, 1)
	rw, err := tb.fdes[0].rowAt(0x1000, &state{})
	require.NoError(t, err)
	assert.Equal(t, rule{kind: ruleOffset, off: -8}, rw.regs[dwRA])
}

// An FDE whose range runs past the top of the address space is refused:
// find relies on the FDEs' ends being ordered as their starts. One that
// ends exactly at the top is kept.
func TestParseWrappingFDE(t *testing.T) {
	t.Parallel()
	c := cieSpec{ra: dwRA, init: entryRules(dwRA)}
	tb := parsed(t, ehFrame(c, fdeSpec{start: 0xffff_ffff_ffff_e000, size: 0x1000}, fdeSpec{start: ^uint64(0) - 0x10, size: 0x10}))
	assert.Len(t, tb.fdes, 2)

	data := ehFrame(c, fdeSpec{start: 0x1000, size: 0x100}, fdeSpec{start: 0xffff_ffff_ffff_f000, size: 0x2000})
	err := (&Table{}).parse(data, 0, secOff)
	fe := formatError(t, err)
	second := len(c.bytes()) + len(fdeSpec{}.bytes(0, 0, false))
	assert.Equal(t, int64(secOff+second+8), fe.Offset, "the FDE's start address, in the file")
	assert.Contains(t, err.Error(), "wraps")
}

// Errors name the file offset: the section's plus the entry's.
func TestParseErrorOffsets(t *testing.T) {
	t.Parallel()
	c := cieSpec{ra: dwRA, init: entryRules(dwRA)}
	cb := c.bytes()
	long := binary.LittleEndian.AppendUint32(append([]byte(nil), cb...), 1000) // a length past the end
	long = append(long, 0, 0, 0, 0)
	fe := formatError(t, (&Table{}).parse(long, 0, secOff))
	assert.Equal(t, int64(secOff+len(cb)), fe.Offset)
	assert.ErrorIs(t, fe, io.ErrUnexpectedEOF)

	v := cieSpec{ra: dwRA, init: entryRules(dwRA)}.bytes()
	v[8] = 2 // the version
	fe = formatError(t, (&Table{}).parse(v, 0, secOff))
	assert.Equal(t, int64(secOff), fe.Offset)
	assert.Contains(t, fe.Msg, "CIE at 0x4000: version 2")
}

// An unknown augmentation letter ends the reading of the augmentation: the
// letters after it are not read from its data, nor from what follows it.
func TestCIEUnknownAugmentation(t *testing.T) {
	t.Parallel()
	// Were 'R' read after 'X', it would take 0x1b (pc-relative 4-byte
	// pointers) from X's data, or 0x90 (offset r16: an indirect
	// encoding) from the instructions.
	c := cieSpec{aug: "zXR", augData: []byte{0x1b}, ra: dwRA, init: entryRules(dwRA)}
	tb := parsed(t, ehFrame(c, fdeSpec{start: 0x1000, size: 0x100}))
	require.Len(t, tb.fdes, 1)
	assert.Equal(t, uint64(0x1000), tb.fdes[0].start)
	assert.Equal(t, uint64(0x1100), tb.fdes[0].end)
}

// The personality pointer is read within the augmentation data: one that
// runs past it is an error, not a read of the instructions after it.
func TestCIEPersonality(t *testing.T) {
	t.Parallel()
	// P: a 4-byte personality pointer, L: the LSDA encoding, R: absptr.
	ok := cieSpec{aug: "zPLR", augData: []byte{0x03, 1, 2, 3, 4, 0x1b, 0x00}, ra: dwRA, init: entryRules(dwRA)}
	tb := parsed(t, ehFrame(ok, fdeSpec{start: 0x1000, size: 0x100}))
	require.Len(t, tb.fdes, 1)
	assert.Equal(t, uint64(0x1100), tb.fdes[0].end)

	short := cieSpec{aug: "zPR", augData: []byte{0x03, 0, 0}, ra: dwRA, init: entryRules(dwRA)}
	err := (&Table{}).parse(ehFrame(short, fdeSpec{start: 0x1000, size: 0x100}), 0, secOff)
	fe := formatError(t, err)
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	const pointer = 4 + 4 + 1 + 4 + 3 + 1 + 1 // length, id, version, "zPR\0", alignments and ra, data length, P's encoding
	assert.Equal(t, int64(secOff+pointer), fe.Offset)
}

// remember_state and restore_state nest; the nesting is bounded, and the
// error names the FDE and the instruction's file offset.
func TestRememberState(t *testing.T) {
	t.Parallel()
	const remember, restore, cfaOffset = 0x0a, 0x0b, 0x0e
	insns := []byte{cfaOffset, 16, remember, cfaOffset, 32, remember, cfaOffset, 48, restore}
	c := cieSpec{ra: dwRA, init: entryRules(dwRA)}
	tb := parsed(t, ehFrame(c,
		fdeSpec{start: 0x1000, size: 0x100, insns: insns},
		fdeSpec{start: 0x2000, size: 0x100, insns: append(insns, restore)},
		fdeSpec{start: 0x3000, size: 0x100, insns: append(insns, restore, restore)},
		fdeSpec{start: 0x4000, size: 0x100, insns: bytes.Repeat([]byte{remember}, maxRemember)},
	))
	var st state
	for i, want := range []int64{32, 16} {
		rw, err := tb.fdes[i].rowAt(tb.fdes[i].start, &st)
		require.NoError(t, err)
		assert.Equal(t, want, rw.cfaOff)
	}

	f := &tb.fdes[2]
	_, err := f.rowAt(f.start, &st)
	require.ErrorIs(t, err, errRestoreState)
	fe := formatError(t, f.errorf(err, &st))
	assert.Equal(t, f.insnsOff+int64(len(insns)+1), fe.Offset)
	assert.Contains(t, fe.Error(), "FDE at ")

	f = &tb.fdes[3]
	_, err = f.rowAt(0x4000, &st)
	assert.NoError(t, err, "as deep as maxRemember")
	f.insns = append(f.insns[:maxRemember:maxRemember], remember)
	_, err = f.rowAt(0x4000, &st)
	require.ErrorIs(t, err, errStateDepth)
	assert.Equal(t, f.insnsOff+maxRemember, st.at)
}
