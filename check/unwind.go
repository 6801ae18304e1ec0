package check

import (
	"encoding/binary"
	"math/bits"

	"github.com/perfcheck/perfcheck/perfdata"
)

// perf's x86-64 register indexes (arch/x86/include/uapi/asm/perf_regs.h)
// for each DWARF register number 0..16 (rax, rdx, rcx, rbx, rsi, rdi, rbp,
// rsp, r8..r15, rip).
var perfRegOfDwarf = [dwNum]int{0, 3, 2, 1, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23, 8}

// maxUnwind bounds the frames recovered from one stack copy (perf's
// default --call-graph dwarf stack is 8 kB; PERF_MAX_STACK_DEPTH is 127).
const maxUnwind = 127

// UserStack is a sample's copy of the user registers and stack
// (PERF_SAMPLE_REGS_USER and PERF_SAMPLE_STACK_USER, perf record
// --call-graph dwarf). It aliases the reader's buffers: valid only during
// Session.Sample.
type UserStack struct {
	Mask  uint64   // attr.sample_regs_user
	Regs  []uint64 // one per bit of Mask, in bit order
	Stack []byte   // the valid part of the copy (dyn_size bytes), from the user SP up
}

// unwindUser recovers the user frames of a stack copy with the CFI of the
// binaries it runs through, as perf's unwind__get_entries does, and
// appends their addresses to out (leaf first). It stops at the first frame
// whose binary is not proven to be the one that ran (cfiFor): unwinding
// with a replaced file's CFI would invent callers.
//
// unproven reports that the walk stopped at a binary that could not be
// proven, rather than at the end of the stack, of the copy or of the CFI.
func (s *Session) unwindUser(pid int32, u *UserStack, out []uint64) (_ []uint64, unproven bool) {
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
		return out, false
	}
	sp0 := regs[dwRSP]
	read := func(a uint64) (uint64, bool) {
		if a < sp0 || a-sp0 > uint64(len(u.Stack)) || uint64(len(u.Stack))-(a-sp0) < 8 {
			return 0, false
		}
		return binary.LittleEndian.Uint64(u.Stack[a-sp0:]), true
	}
	for depth := 0; depth < maxUnwind; depth++ {
		pc := regs[dwRA]
		look := pc
		if depth > 0 {
			// A return address: the call is the instruction before, and
			// that is the address perf's DWARF unwinders report for a
			// caller (unwind-libdw.c: not an activation frame, pc - 1).
			look--
		}
		out = append(out, look)
		m := s.tracker.Lookup(pid, perfdata.CPUModeUser, look)
		if m == nil || m.Kind != KindFile || m.DSO == nil {
			return out, false
		}
		t := s.cfiFor(m.DSO)
		if t == nil {
			return out, true
		}
		off := m.Offset(look)
		var va uint64
		found := false
		for _, l := range t.loads {
			if off >= l.off && off < l.off+l.filesz {
				va, found = off-l.off+l.vaddr, true
				break
			}
		}
		if !found {
			return out, false
		}
		f := t.find(va)
		if f == nil {
			return out, false
		}
		rw, err := f.rowAt(va)
		if err != nil || rw.cfaReg >= dwNum || !valid[rw.cfaReg] {
			return out, false
		}
		cfa := regs[rw.cfaReg] + uint64(rw.cfaOff)
		if cfa <= regs[dwRSP] && depth > 0 {
			return out, false // the stack must grow towards the caller
		}
		var next [dwNum]uint64
		var nvalid [dwNum]bool
		for i := range dwNum {
			switch r := rw.regs[i]; r.kind {
			case 0:
				next[i], nvalid[i] = regs[i], valid[i]
			case 1:
				next[i], nvalid[i] = read(cfa + uint64(r.off))
			case 3:
				next[i], nvalid[i] = cfa+uint64(r.off), true
			}
		}
		if rw.regs[dwRA].kind != 1 || !nvalid[dwRA] || next[dwRA] == 0 {
			return out, false
		}
		next[dwRSP], nvalid[dwRSP] = cfa, true
		regs, valid = next, nvalid
	}
	return out, false
}

// cfiFor returns the CFI to unwind through d, or nil. Only a file proven to
// be the one that ran is used: its build-id equals the MMAP2 one; or it is
// the same device and inode as MMAP2 recorded, not modified after the
// recording ended, and (when the header's table names one build-id for the
// path) carries that build-id.
func (s *Session) cfiFor(d *DSO) *cfiTable {
	if t, ok := s.cfi[d]; ok {
		return t
	}
	s.cfi[d] = nil
	o := &s.opts
	if o.SymFS != "" && len(d.BuildID) == 0 {
		return nil
	}
	p := o.diskPath(d.Path)
	st := statFile(p)
	if !st.Exists || !st.IsELF {
		return nil
	}
	switch {
	case len(d.BuildID) > 0: // MMAP2
		if !sameBuildID(st.BuildID, d.BuildID) {
			return nil
		}
	case d.Dev != nil && o.SymFS == "":
		if d.Dev.Maj != st.Maj || d.Dev.Min != st.Min || d.Dev.Ino != st.Ino {
			return nil
		}
		if !o.RecordingEnd.IsZero() && st.MTime.After(o.RecordingEnd) {
			return nil
		}
		var ids []perfdata.BuildID
		for _, e := range s.buildIDs {
			if e.Filename == d.Path && e.CPUMode == perfdata.CPUModeUser && !e.BuildID.IsZero() {
				dup := false
				for _, b := range ids {
					dup = dup || sameBuildID(b, e.BuildID)
				}
				if !dup {
					ids = append(ids, e.BuildID)
				}
			}
		}
		if len(ids) > 1 || len(ids) == 1 && !sameBuildID(st.BuildID, ids[0]) {
			return nil
		}
	default:
		return nil
	}
	t, err := readCFI(p)
	if err != nil {
		return nil
	}
	s.cfi[d] = t
	return t
}
