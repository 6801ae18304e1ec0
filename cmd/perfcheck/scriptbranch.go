package main

import (
	"strconv"

	"github.com/perfcheck/perfcheck/check"
	"github.com/perfcheck/perfcheck/perfdata"
)

// appendBranches is perf script's brstack, brstacksym or brstackoff
// field (perf_sample__fprintf_brstack, _brstacksym and _brstackoff in
// tools/perf/builtin-script.c; of several, perf prints the first of
// those): each entry of the sample's branch stack, most recent first, as
// " 0xFROM/0xTO/FLAGS " with brstack, "SYM+0xOFF/SYM+0xOFF/FLAGS " with
// brstacksym, " 0xOFF/0xOFF/FLAGS " with brstackoff, each address
// followed by "(DSO)" when dso is printed. A name follows the rules a
// frame's does (appendScriptSymbol): a DSO whose verdict refuses its
// names prints "[verdict] base+0xOFFSET". An offset is the one
// perfcheck locates the address at (check.Location's Offset): in the
// DSO's file, the address itself in the kernel and in memory without a
// file.
func appendBranches(b []byte, f scriptField, s *check.Sample, rec *perfdata.Sample) []byte {
	show := f & fieldsBranch
	show &= -show // the first of them
	dso := f&fieldDSO != 0
	for i, e := range rec.Branches {
		var from, to *check.Location
		if i < len(s.Branches) {
			from, to = s.Branches[i].From, s.Branches[i].To
		}
		if show != fieldBrstackSym {
			b = append(b, ' ')
		}
		b = appendBranchAddr(b, show, e.From, from)
		if dso {
			b = appendBranchDSO(b, from)
		}
		b = append(b, '/')
		b = appendBranchAddr(b, show, e.To, to)
		if dso {
			b = appendBranchDSO(b, to)
		}
		b = appendBranchFlags(b, e)
	}
	return b
}

// appendBranchAddr appends one address of an entry as field shows it:
// as recorded, its symbol, or its offset.
func appendBranchAddr(b []byte, field scriptField, addr uint64, l *check.Location) []byte {
	switch {
	case field == fieldBrstackSym:
		return appendBranchSymbol(b, l)
	case field == fieldBrstackOff && l != nil:
		addr = l.Offset
	}
	b = append(b, "0x"...)
	return strconv.AppendUint(b, addr, 16)
}

// appendBranchSymbol appends the symbol of a branch address and the
// offset into it, which perf prints whenever it has a symbol
// (symbol__fprintf_symname_offs in tools/perf/util/symbol_fprintf.c).
func appendBranchSymbol(b []byte, l *check.Location) []byte {
	if l == nil {
		return append(b, "[unknown]"...)
	}
	b, off, hasOff := appendScriptSymbol(b, l, len(l.Frames)-1)
	if hasOff {
		b = append(b, "+0x"...)
		b = strconv.AppendUint(b, off, 16)
	}
	return b
}

// appendBranchDSO appends "(DSO)", perf's "[unknown]" where no mapping
// covers the address.
func appendBranchDSO(b []byte, l *check.Location) []byte {
	b = append(b, '(')
	if l == nil {
		b = append(b, "[unknown]"...)
	} else {
		b = append(b, l.DSO.Path...)
	}
	return append(b, ')')
}

// appendBranchFlags appends an entry's flags as perf 6.1's
// print_bstack_flags does: "/M" mispredicted, "/P" predicted, "/-" when
// the hardware says neither; "/X" in a transaction; "/A" an abort; the
// cycles; the branch type's name (nothing when unknown); then a space.
func appendBranchFlags(b []byte, e perfdata.BranchEntry) []byte {
	switch {
	case e.Predicted():
		b = append(b, "/P"...)
	case e.Mispred():
		b = append(b, "/M"...)
	default:
		b = append(b, "/-"...)
	}
	b = appendFlag(b, e.InTx(), 'X')
	b = appendFlag(b, e.Abort(), 'A')
	b = append(b, '/')
	b = strconv.AppendUint(b, uint64(e.Cycles()), 10)
	b = append(b, '/')
	b = append(b, branchTypeName(e)...)
	return append(b, ' ')
}

func appendFlag(b []byte, set bool, c byte) []byte {
	if set {
		return append(b, '/', c)
	}
	return append(b, "/-"...)
}

// The names perf gives the PERF_BR_* branch types and, for
// PERF_BR_EXTEND_ABI, the PERF_BR_NEW_* ones (branch_type_name and
// branch_new_type_name in tools/perf/util/branch.c), by number.
var (
	branchTypes = [...]string{"N/A", "COND", "UNCOND", "IND", "CALL", "IND_CALL", "RET",
		"SYSCALL", "SYSRET", "COND_CALL", "COND_RET", "ERET", "IRQ", "SERROR", "NO_TX", ""}
	branchNewTypes = [...]string{"FAULT_ALGN", "FAULT_DATA", "FAULT_INST",
		"ARCH_1", "ARCH_2", "ARCH_3", "ARCH_4", "ARCH_5"}
)

// branchExtendABI is PERF_BR_EXTEND_ABI: the type is in new_type.
const branchExtendABI = 15

// branchTypeName is perf's get_branch_type: nothing for an unknown
// type, else its name.
func branchTypeName(e perfdata.BranchEntry) string {
	t := e.BranchType()
	switch {
	case t == 0:
		return ""
	case t == branchExtendABI && int(e.NewType()) < len(branchNewTypes):
		return branchNewTypes[e.NewType()]
	case t == branchExtendABI:
		return "(null)"
	}
	return branchTypes[t]
}
