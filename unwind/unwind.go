package unwind

import (
	"encoding/binary"
	"math/bits"
)

// perf's x86-64 register indexes (arch/x86/include/uapi/asm/perf_regs.h)
// for each DWARF register number 0..16 (rax, rdx, rcx, rbx, rsi, rdi, rbp,
// rsp, r8..r15, rip).
var perfRegOfDwarf = [dwNum]int{0, 3, 2, 1, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23, 8}

// MaxFrames bounds the frames recovered from one stack copy (perf's
// default --call-graph dwarf stack is 8 kB; PERF_MAX_STACK_DEPTH is 127).
const MaxFrames = 127

// UserStack is a sample's copy of the user registers and stack
// (PERF_SAMPLE_REGS_USER and PERF_SAMPLE_STACK_USER, perf record
// --call-graph dwarf): perfdata.Sample's RegsUser, and StackUser cut to
// StackUserDynSize.
type UserStack struct {
	Mask  uint64   // attr.sample_regs_user
	Regs  []uint64 // one per bit of Mask, in bit order
	Stack []byte   // the valid part of the copy (dyn_size bytes), from the user SP up
}

// TableFunc returns the unwind table of the binary that holds the code at
// pc in the sampled process, and the offset of pc in that file; a nil
// Table ends the walk (no mapping at pc, or no table that may be used).
type TableFunc func(pc uint64) (t *Table, off uint64)

// Walk recovers the user frames of a stack copy, as perf's
// unwind__get_entries does, and appends their addresses to out, leaf
// first: the sample's IP, then for each caller the address of its call
// instruction's last byte (return address - 1, the address perf's DWARF
// unwinders report for a caller). tables gives the unwind table of each
// address, the one appended last included; the walk ends when it has none,
// when the tables have no rule this unwinder follows, when a value would
// be read outside the copy, or after MaxFrames frames.
func Walk(u *UserStack, tables TableFunc, out []uint64) []uint64 {
	var regs [dwNum]uint64
	var valid [dwNum]bool
	for dw, pr := range perfRegOfDwarf {
		if u.Mask&(1<<pr) == 0 {
			continue
		}
		i := bits.OnesCount64(u.Mask & (1<<pr - 1))
		if i < len(u.Regs) {
			regs[dw], valid[dw] = u.Regs[i], true
		}
	}
	if !valid[dwRA] || !valid[dwRSP] {
		return out
	}
	sp0 := regs[dwRSP]
	read := func(a uint64) (uint64, bool) {
		if a < sp0 || a-sp0 > uint64(len(u.Stack)) || uint64(len(u.Stack))-(a-sp0) < 8 {
			return 0, false
		}
		return binary.LittleEndian.Uint64(u.Stack[a-sp0:]), true
	}
	var st state
	for depth := 0; depth < MaxFrames; depth++ {
		pc := regs[dwRA]
		look := pc
		if depth > 0 {
			// A return address: the call is the instruction before, and
			// that is the address perf's DWARF unwinders report for a
			// caller (unwind-libdw.c: not an activation frame, pc - 1).
			look--
		}
		out = append(out, look)
		t, off := tables(look)
		if t == nil {
			return out
		}
		var ok bool
		if regs, valid, ok = t.step(regs, valid, off, depth, read, &st); !ok {
			return out
		}
	}
	return out
}

// step computes the caller's registers from regs, the registers of a
// frame whose code is at file offset off, with the rule set t has there;
// false when it cannot. The caller's pc is the value of the CIE's return
// address column.
func (t *Table) step(regs [dwNum]uint64, valid [dwNum]bool, off uint64, depth int, read func(uint64) (uint64, bool), st *state) ([dwNum]uint64, [dwNum]bool, bool) {
	va, ok := t.addr(off)
	if !ok {
		return regs, valid, false
	}
	f := t.find(va)
	if f == nil {
		return regs, valid, false
	}
	ra := f.cie.raReg
	if ra >= dwNum {
		return regs, valid, false
	}
	rw, err := f.rowAt(va, st)
	if err != nil {
		return regs, valid, false
	}
	var cfa uint64
	switch {
	case rw.isExpr:
		if cfa, ok = evalCFA(rw.cfaExpr, &regs, &valid, read); !ok {
			return regs, valid, false
		}
	case rw.cfaReg < dwNum && valid[rw.cfaReg]:
		cfa = regs[rw.cfaReg] + uint64(rw.cfaOff)
	default:
		return regs, valid, false
	}
	if cfa <= regs[dwRSP] && depth > 0 {
		return regs, valid, false // the stack must grow towards the caller
	}
	var next [dwNum]uint64
	var nvalid [dwNum]bool
	for i := range dwNum {
		switch r := rw.regs[i]; r.kind {
		case ruleSame:
			next[i], nvalid[i] = regs[i], valid[i]
		case ruleOffset:
			next[i], nvalid[i] = read(cfa + uint64(r.off))
		case ruleValOffset:
			next[i], nvalid[i] = cfa+uint64(r.off), true
		}
	}
	if rw.regs[ra].kind != ruleOffset || !nvalid[ra] || next[ra] == 0 {
		return regs, valid, false
	}
	next[dwRA], nvalid[dwRA] = next[ra], true
	next[dwRSP], nvalid[dwRSP] = cfa, true
	return next, nvalid, true
}
