package main

import (
	"strconv"
	"strings"
)

// appendDataSrc is perf script's data_src field (data_src__fprintf in
// tools/perf/builtin-script.c): the raw perf_mem_data_src in hex, "%16x",
// and its decoding, left-aligned to the widest one printed so far.
func (sf *scriptFormat) appendDataSrc(b []byte, v uint64) []byte {
	// perf formats into buffers of 100 bytes, so both texts are cut at
	// 99.
	var tmp [128]byte
	out := appendUintPadLeft(tmp[:0], v, 16, 16)
	out = append(out, ' ')
	out = append(out, truncate(decodeDataSrc(v), 99)...)
	out = out[:min(len(out), 99)]
	sf.dataSrcWidth = max(sf.dataSrcWidth, len(out))
	b = append(b, out...)
	for i := len(out); i < sf.dataSrcWidth; i++ {
		b = append(b, ' ')
	}
	return b
}

func truncate(s string, n int) string { return s[:min(len(s), n)] }

// The names perf gives the parts of perf_mem_data_src
// (tools/perf/util/mem-events.c), by bit or number.
var (
	memLevels = []string{"N/A", "HIT", "MISS", "L1", "LFB/MAB", "L2", "L3", "Local RAM",
		"Remote RAM (1 hop)", "Remote RAM (2 hops)", "Remote Cache (1 hop)", "Remote Cache (2 hops)", "I/O", "Uncached"}
	memLevelNums = map[uint64]string{0x09: "CXL", 0x0a: "I/O", 0x0b: "Any cache", 0x0c: "LFB/MAB", 0x0d: "RAM", 0x0e: "PMEM", 0x0f: "N/A"}
	memHops      = []string{"N/A", "core, same node", "node, same socket", "socket, same board", "board"}
	memSnoops    = []string{"N/A", "None", "Hit", "Miss", "HitM"}
	memSnoopsX   = []string{"Fwd", "Peer"}
	memTLB       = []string{"N/A", "HIT", "MISS", "L1", "L2", "Walker", "Fault"}
)

// decodeDataSrc is perf_script__meminfo_scnprintf: "|OP ...|LVL ...|SNP
// ...|TLB ...|LCK ...|BLK ...", from the fields of union
// perf_mem_data_src (include/uapi/linux/perf_event.h).
func decodeDataSrc(v uint64) string {
	field := func(shift, width uint) uint64 { return v >> shift & (1<<width - 1) }
	op, lvl, snoop, lock := field(0, 5), field(5, 14), field(19, 5), field(24, 2)
	dtlb, lvlNum, remote, snoopX := field(26, 7), field(33, 4), field(37, 1), field(38, 2)
	blk, hops := field(40, 3), field(43, 3)

	var s strings.Builder
	s.WriteString("|OP ")
	switch {
	case op&1 != 0:
		s.WriteString("N/A")
	case op&2 != 0:
		s.WriteString("LOAD")
	case op&4 != 0:
		s.WriteString("STORE")
	case op&8 != 0:
		s.WriteString("PFETCH")
	case op&16 != 0:
		s.WriteString("EXEC")
	default:
		s.WriteString("No")
	}
	s.WriteString("|LVL ")
	s.WriteString(decodeMemLevel(lvl, lvlNum, remote, hops))
	s.WriteString("|SNP ")
	snp := orList(snoop, memSnoops)
	snp = append(snp, orList(snoopX, memSnoopsX)...)
	s.WriteString(orNA(snp, ""))
	s.WriteString("|TLB ")
	s.WriteString(orNA(orList(dtlb&^6, memTLB), hitMiss(dtlb)))
	s.WriteString("|LCK ")
	switch {
	case lock&1 != 0:
		s.WriteString("N/A")
	case lock&2 != 0:
		s.WriteString("Yes")
	default:
		s.WriteString("No")
	}
	s.WriteString("|BLK ")
	switch {
	case blk == 0 || blk&1 != 0:
		s.WriteString(" N/A")
	default:
		if blk&2 != 0 {
			s.WriteString(" Data")
		}
		if blk&4 != 0 {
			s.WriteString(" Addr")
		}
	}
	return s.String()
}

// decodeMemLevel is perf_mem__lvl_scnprintf: "Remote " for a remote
// access, the hops (or else the level bits), the level number, each
// alternative joined by " or ", then " hit" or " miss".
func decodeMemLevel(lvl, lvlNum, remote, hops uint64) string {
	var s strings.Builder
	if remote != 0 {
		s.WriteString("Remote ")
	}
	var alts []string
	if hops != 0 {
		// perf indexes its table with any value of the field; past
		// its end it prints glibc's "(null)".
		name := "(null)"
		if int(hops) < len(memHops) {
			name = memHops[hops]
		}
		s.WriteString(name + " ")
	} else {
		alts = orList(lvl&^6, memLevels)
	}
	if lvlNum != 0 {
		name, ok := memLevelNums[lvlNum]
		if !ok {
			name = "L" + strconv.FormatUint(lvlNum, 10)
		}
		alts = append(alts, name)
	}
	s.WriteString(strings.Join(alts, " or "))
	if s.Len() == 0 {
		s.WriteString("N/A")
	}
	s.WriteString(hitMiss(lvl))
	return s.String()
}

// orList names the set bits of m, lowest first.
func orList(m uint64, names []string) []string {
	var out []string
	for i := 0; m != 0 && i < len(names); i, m = i+1, m>>1 {
		if m&1 != 0 {
			out = append(out, names[i])
		}
	}
	return out
}

// orNA joins alternatives with " or ", "N/A" for none, then the suffix.
func orNA(alts []string, suffix string) string {
	if len(alts) == 0 {
		return "N/A" + suffix
	}
	return strings.Join(alts, " or ") + suffix
}

// hitMiss is the " hit" and " miss" perf adds for the HIT (bit 1) and
// MISS (bit 2) flags of a level or TLB field.
func hitMiss(m uint64) string {
	s := ""
	if m&2 != 0 {
		s += " hit"
	}
	if m&4 != 0 {
		s += " miss"
	}
	return s
}
