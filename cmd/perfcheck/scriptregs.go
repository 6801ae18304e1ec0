package main

import (
	"math/bits"
	"strconv"
)

// registerNames returns the names perf gives the sampled registers of a
// recording made on arch (perf_reg_name in tools/perf/util/perf_regs.c and
// arch/*/include/uapi/asm/perf_regs.h), by register number; nil for an
// architecture perfcheck does not name registers of.
func registerNames(arch string) []string {
	switch arch {
	case "x86_64", "i386", "i486", "i586", "i686":
		names := []string{"AX", "BX", "CX", "DX", "SI", "DI", "BP", "SP", "IP", "FLAGS",
			"CS", "SS", "DS", "ES", "FS", "GS", "R8", "R9", "R10", "R11", "R12", "R13", "R14", "R15"}
		names = append(names, make([]string, 8)...) // 24..31 are no registers
		for i := range 16 {
			// XMM registers take two numbers each; perf names the
			// first only.
			names = append(names, "XMM"+strconv.Itoa(i), "")
		}
		return names
	case "aarch64", "arm64":
		var names []string
		for i := range 30 {
			names = append(names, "x"+strconv.Itoa(i))
		}
		return append(names, "lr", "sp", "pc", "vg")
	}
	return nil
}

// appendRegs is perf_sample__fprintf_regs: " ABI:N " then "%5s:0x%x " for
// each register of mask, in number order; nothing for a sample without
// registers (ABI 0). A number perf has no name for prints as C's printf
// prints a null string.
func (sf *scriptFormat) appendRegs(b []byte, abi uint64, regs []uint64, mask uint64) []byte {
	if abi == 0 || len(regs) == 0 {
		return b
	}
	b = append(b, " ABI:"...)
	b = strconv.AppendUint(b, abi, 10)
	b = append(b, ' ')
	for i := 0; mask != 0 && i < len(regs); i++ {
		r := bits.TrailingZeros64(mask)
		mask &= mask - 1
		name := "(null)"
		if r < len(sf.regNames) && sf.regNames[r] != "" {
			name = sf.regNames[r]
		}
		b = appendPadLeft(b, name, 5)
		b = append(b, ":0x"...)
		b = strconv.AppendUint(b, regs[i], 16)
		b = append(b, ' ')
	}
	return b
}

// regMask is the register mask event i samples: its attr's
// sample_regs_user when user is set, else its sample_regs_intr.
func (a *analysis) regMask(i int, user bool) uint64 {
	if i < 0 || i >= len(a.res.EventInfo) {
		return 0
	}
	at := &a.res.EventInfo[i].Attr
	if user {
		return at.SampleRegsUser
	}
	return at.SampleRegsIntr
}
