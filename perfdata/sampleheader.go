package perfdata

import (
	"encoding/binary"
	"math/bits"
)

// sampleWalk steps over the fields of a SAMPLE payload without decoding
// them: the bytes after the record header.
type sampleWalk struct {
	b   []byte
	off int
	big bool // big-endian input
}

// u64 reads the next u64; ok is false when fewer than 8 bytes remain.
func (w *sampleWalk) u64() (v uint64, ok bool) {
	if len(w.b)-w.off < 8 {
		return 0, false
	}
	v = u64At(w.b[w.off:], w.big)
	w.off += 8
	return v, true
}

// u64At, u32At and u16At read b's first bytes in either byte order with
// no call through binary.ByteOrder, so that they inline.
func u64At(b []byte, big bool) uint64 {
	if big {
		return binary.BigEndian.Uint64(b)
	}
	return binary.LittleEndian.Uint64(b)
}

func u32At(b []byte, big bool) uint32 {
	if big {
		return binary.BigEndian.Uint32(b)
	}
	return binary.LittleEndian.Uint32(b)
}

func u16At(b []byte, big bool) uint16 {
	if big {
		return binary.BigEndian.Uint16(b)
	}
	return binary.LittleEndian.Uint16(b)
}

// skip steps over n entries of size bytes each, reporting whether they
// fit in what remains. n is bounded before it is multiplied.
func (w *sampleWalk) skip(n, size uint64) bool {
	if n > uint64(len(w.b)-w.off)/size {
		return false
	}
	w.off += int(n * size)
	return true
}

// skipU64 steps over n u64 fields that must all be there.
func (w *sampleWalk) skipU64(n int) bool {
	return w.skip(uint64(n), 8)
}

// sampleFits reports whether b, a SAMPLE payload, holds every field of a's
// sample_type: it walks the layout decodeSample reads (the order of
// evsel__parse_sample in tools/perf/util/evsel.c) checking each length
// and storing nothing. It accepts exactly the payloads decodeSample
// decodes without an error (TestSampleHeadersOnlySame), so that where it
// refuses, decodeSample can run to give the error.
func sampleFits(b []byte, big bool, a *Attr) bool {
	st := a.SampleType
	fixed := 8 * bits.OnesCount64(uint64(st&sampleFixed))
	if st&^(sampleFixed|SampleCallchain) == 0 {
		// The common layout, fixed fields then a callchain, at once.
		if fixed > len(b) || st&SampleCallchain == 0 {
			return fixed <= len(b)
		}
		rest := uint64(len(b) - fixed)
		return rest >= 8 && u64At(b[fixed:], big) <= (rest-8)/8
	}
	if st >= sampleTypeMax || fixed > len(b) {
		return false
	}
	w := sampleWalk{b: b, off: fixed, big: big}
	if st&SampleRead != 0 && !w.readValues(a.ReadFormat) {
		return false
	}
	if st&SampleCallchain != 0 {
		if nr, ok := w.u64(); !ok || !w.skip(nr, 8) {
			return false
		}
	}
	if st&SampleRaw != 0 {
		if len(w.b)-w.off < 4 {
			return false
		}
		n := u32At(w.b[w.off:], w.big)
		w.off += 4
		if !w.skip(uint64(n), 1) {
			return false
		}
	}
	if st&SampleBranchStack != 0 && !w.branchStack(a.BranchSampleType) {
		return false
	}
	if st&SampleRegsUser != 0 && !w.regs(a.SampleRegsUser) {
		return false
	}
	if st&SampleStackUser != 0 {
		n, ok := w.u64()
		if !ok || n != 0 && (!w.skip(n, 1) || !w.skipU64(1)) {
			return false
		}
	}
	if st&(SampleWeight|SampleWeightStruct) != 0 && !w.skipU64(1) { // one u64 for either
		return false
	}
	if !w.skipU64(bits.OnesCount64(uint64(st & (SampleDataSrc | SampleTransaction)))) {
		return false
	}
	if st&SampleRegsIntr != 0 && !w.regs(a.SampleRegsIntr) {
		return false
	}
	if !w.skipU64(bits.OnesCount64(uint64(st & (SamplePhysAddr | SampleCgroup | SampleDataPageSize | SampleCodePageSize)))) {
		return false
	}
	if st&SampleAux != 0 {
		if n, ok := w.u64(); !ok || !w.skip(n, 1) {
			return false
		}
	}
	return true
}

// readValues steps over a read_format block as decodeReadValues reads it.
func (w *sampleWalk) readValues(rf ReadFormat) bool {
	times := 0
	if rf&FormatTotalTimeEnabled != 0 {
		times++
	}
	if rf&FormatTotalTimeRunning != 0 {
		times++
	}
	per := uint64(1)
	if rf&FormatID != 0 {
		per++
	}
	if rf&FormatLost != 0 {
		per++
	}
	if rf&FormatGroup == 0 {
		return w.skipU64(times + int(per))
	}
	nr, ok := w.u64()
	return ok && w.skipU64(times) && w.skip(nr, 8*per)
}

// branchStack steps over a branch stack as decodeSample reads it: its
// entries and, with BranchCounters, a counter per entry.
func (w *sampleWalk) branchStack(bt uint64) bool {
	nr, ok := w.u64()
	if !ok {
		return false
	}
	if bt&BranchHWIndex != 0 && !w.skipU64(1) {
		return false
	}
	per := uint64(24)
	if bt&BranchCounters != 0 {
		per += 8
	}
	return w.skip(nr, per)
}

// regs steps over a register block: its ABI, then, unless the ABI is 0
// (none), one u64 per bit of mask.
func (w *sampleWalk) regs(mask uint64) bool {
	abi, ok := w.u64()
	return ok && (abi == 0 || w.skipU64(bits.OnesCount64(mask)))
}

// decodeSampleHeader sets, for RecordsOptions.SampleHeadersOnly, what p's
// sample holds of the SAMPLE record b (header included) of event i once
// sampleFits has accepted it: its RecordHeader, SampleID included, and
// Fields. The fields are written one by one, not as a literal: a literal
// RecordHeader is built on the stack and copied, a stall that weighs on a
// reading that does nothing else per sample.
func (p *parser) decodeSampleHeader(b []byte, off int64, compressed bool, part, i int) {
	s := &p.sample
	st := p.events.events[i].Attr.SampleType
	if !p.sampleBare {
		resetSample(s, st)
		p.sampleBare = true
	}
	s.Fields = st
	h := &s.RecordHeader
	h.RecType = RecordSample
	big := !p.little
	h.Misc = u16At(b[4:], big)
	h.Size = u16At(b[6:], big)
	h.Offset, h.Compressed, h.Part, h.EventIndex = off, compressed, part, i
	id := &h.SampleID
	id.Fields = st & (SampleTID | SampleTime | SampleID | SampleStreamID | SampleCPU | SampleIdentifier)
	id.PID, id.TID, id.Time, id.ID, id.StreamID, id.CPU = 0, 0, 0, 0, 0, 0
	// The sampleFixed fields, which sampleFits has found present, in
	// their order (decodeSampleFixedLE).
	at := 8
	next := func() uint64 {
		v := u64At(b[at:], big)
		at += 8
		return v
	}
	if st&SampleIdentifier != 0 {
		id.ID = next()
	}
	if st&SampleIP != 0 {
		at += 8
	}
	if st&SampleTID != 0 {
		id.PID = u32At(b[at:], big)
		id.TID = u32At(b[at+4:], big)
		at += 8
	}
	if st&SampleTime != 0 {
		id.Time = next()
	}
	if st&SampleAddr != 0 {
		at += 8
	}
	if st&SampleID != 0 {
		id.ID = next()
	}
	if st&SampleStreamID != 0 {
		id.StreamID = next()
	}
	if st&SampleCPU != 0 {
		id.CPU = u32At(b[at:], big)
	}
}
