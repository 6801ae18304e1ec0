package unwind

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
)

// pltExpr is the CFA expression GNU ld writes in the FDE of an x86-64
// .plt (elf_x86_64_eh_frame_plt in bfd/elf64-x86-64.c): rsp + 8, and 8
// more from offset 11 of each 16-byte entry on, once the entry has pushed
// its relocation index.
var pltExpr = []byte{
	0x77, 8, // breg7 (rsp) 8
	0x80, 0, // breg16 (rip) 0
	0x3f, // lit15
	0x1a, // and
	0x3b, // lit11
	0x2a, // ge
	0x33, // lit3
	0x24, // shl
	0x22, // plus
}

// A sample in a PLT entry unwinds through the CFA expression, before and
// after the entry's push.
func TestWalkPLTExpression(t *testing.T) {
	t.Parallel()
	c := cieSpec{ra: dwRA, init: entryRules(dwRA)}
	insns := append([]byte{0x0e, 16, 0x46, 0x0e, 24, 0x4a, 0x0f, byte(len(pltExpr))}, pltExpr...)
	tb := parsed(t, ehFrame(c, fdeSpec{start: 0x1000, size: 0x100, insns: insns}))
	in := func(pc uint64) (*Table, uint64) {
		if pc >= 0x1000 && pc < 0x1100 {
			return tb, pc
		}
		return nil, 0
	}
	const ip, sp = 1 << 8, 1 << 7
	var stack []byte
	stack = binary.LittleEndian.AppendUint64(stack, 0x2001)
	stack = binary.LittleEndian.AppendUint64(stack, 0x2002)
	for _, tc := range []struct{ pc, caller uint64 }{
		{0x1026, 0x2000}, // offset 6 of an entry: CFA = rsp + 8
		{0x102b, 0x2001}, // offset 11: CFA = rsp + 16
	} {
		got := Walk(&UserStack{Mask: ip | sp, Regs: []uint64{0x7000, tc.pc}, Stack: stack}, in, nil)
		assert.Equal(t, []uint64{tc.pc, tc.caller}, got, "pc %#x", tc.pc)
	}
}

// Hostile expressions end the walk instead of running long, growing the
// stack or reading outside the copy.
func TestEvalCFAHostile(t *testing.T) {
	t.Parallel()
	var regs [dwNum]uint64
	var valid [dwNum]bool
	regs[dwRSP], valid[dwRSP] = 0x7000, true
	regs[dwRA], valid[dwRA] = 0x1026, true
	mem := binary.LittleEndian.AppendUint64(nil, 0x1234)
	read := func(a uint64) (uint64, bool) {
		if a != 0x7000 {
			return 0, false
		}
		return binary.LittleEndian.Uint64(mem), true
	}
	for name, tc := range map[string]struct {
		expr []byte
		want uint64
		ok   bool
	}{
		"plt":            {pltExpr, 0x7008, true},
		"deref":          {[]byte{0x77, 0, 0x06}, 0x1234, true},
		"deref outside":  {[]byte{0x77, 8, 0x06}, 0, false},
		"constants":      {[]byte{0x09, 0xff, 0x10, 3, 0x22, 0x1f}, ^uint64(1), true}, // -(-1 + 3)
		"empty":          {nil, 0, false},
		"stack overflow": {bytes.Repeat([]byte{0x30}, maxExprStack+1), 0, false},
		"too many ops":   {append(bytes.Repeat([]byte{0x30, 0x13}, maxExprOps/2), 0x30), 0, false},
		"underflow":      {[]byte{0x30, 0x22}, 0, false},
		"drop empty":     {[]byte{0x13, 0x30}, 0, false},
		"branch":         {[]byte{0x30, 0x28, 0xfd, 0xff}, 0, false}, // bra back to itself
		"register":       {[]byte{0x70, 0}, 0, false},                // rax: not in the copy
		"truncated":      {[]byte{0x77}, 0, false},
		"huge shift":     {[]byte{0x31, 0x10, 0xc8, 0x01, 0x24}, 0, true}, // 1 << 200
	} {
		got, ok := evalCFA(tc.expr, &regs, &valid, read)
		assert.Equal(t, tc.ok, ok, name)
		assert.Equal(t, tc.want, got, name)
	}
}
