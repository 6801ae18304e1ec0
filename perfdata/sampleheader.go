package perfdata

import (
	"encoding/binary"
	"math/bits"
)

// sampleWalk steps over the fields of a little-endian SAMPLE payload
// without decoding them: the bytes after the record header.
type sampleWalk struct {
	b   []byte
	off int
}

// u64 reads the next u64; ok is false when fewer than 8 bytes remain.
func (w *sampleWalk) u64() (v uint64, ok bool) {
	if len(w.b)-w.off < 8 {
		return 0, false
	}
	v = binary.LittleEndian.Uint64(w.b[w.off:])
	w.off += 8
	return v, true
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

// sampleFits reports whether b, a little-endian SAMPLE payload, holds
// every field of a's sample_type: it walks the layout decodeSample reads
// (the order of evsel__parse_sample in tools/perf/util/evsel.c) checking
// each length and storing nothing. It accepts exactly the payloads
// decodeSample decodes without an error (TestSampleFitsAgrees), so that
// where it refuses, decodeSample can run to give the error.
func sampleFits(b []byte, a *Attr) bool {
	st := a.SampleType
	fixed := 8 * bits.OnesCount64(uint64(st&sampleFixed))
	if st >= sampleTypeMax || fixed > len(b) {
		return false
	}
	w := sampleWalk{b: b, off: fixed}
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
		n := binary.LittleEndian.Uint32(w.b[w.off:])
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

// sampleLayout is where the header fields of an event's SAMPLE records lie,
// worked out once per event (eventSet.add) from its sample_type, so that
// reading a header tests no sample_type bits.
type sampleLayout struct {
	st       SampleType
	idFields SampleType // the SampleID fields present
	fixed    int        // bytes of the sampleFixed fields
	// chainOnly: the fixed fields, then at most a callchain; such a
	// sample fits when its callchain's count does, as sampleFits finds.
	chainOnly bool
	// Byte offsets in the payload of the SampleID fields, -1 when absent.
	tid, time, id, stream, cpu int
}

func newSampleLayout(st SampleType) sampleLayout {
	l := sampleLayout{
		st:        st,
		idFields:  st & (SampleTID | SampleTime | SampleID | SampleStreamID | SampleCPU | SampleIdentifier),
		fixed:     8 * bits.OnesCount64(uint64(st&sampleFixed)),
		chainOnly: st&^(sampleFixed|SampleCallchain) == 0,
		tid:       -1, time: -1, id: -1, stream: -1, cpu: -1,
	}
	// The order of the sampleFixed fields (decodeSampleFixedLE).
	at := 0
	for _, f := range [...]struct {
		bit SampleType
		pos *int
	}{{SampleIdentifier, &l.id}, {SampleIP, nil}, {SampleTID, &l.tid}, {SampleTime, &l.time},
		{SampleAddr, nil}, {SampleID, &l.id}, {SampleStreamID, &l.stream}, {SampleCPU, &l.cpu}, {SamplePeriod, nil}} {
		if st&f.bit == 0 {
			continue
		}
		if f.pos != nil {
			*f.pos = at
		}
		at += 8
	}
	return l
}

// decodeSampleHeader sets, for RecordsOptions.SampleHeadersOnly, what p's
// sample holds of the little-endian SAMPLE record b (header included)
// when it fits its event's layout, and reports whether it does: its
// RecordHeader, SampleID included, and Fields. It is the in-place path's
// (Records.nextSampleInPlace), which most samples of such a reading take,
// so it does as little as it can: the layout's common cases checked
// inline, the fields written one by one (a literal RecordHeader is built
// on the stack and copied, a stall here).
func (p *parser) decodeSampleHeader(b []byte, off int64, compressed bool, part int) bool {
	le := binary.LittleEndian
	es := p.events
	if es == nil {
		return false
	}
	i := 0
	if len(es.events) != 1 {
		if i = es.lookup(RecordSample, b, le); i < 0 {
			return false
		}
	}
	l := &es.layouts[i]
	pl := b[8:]
	if !l.chainOnly {
		if !sampleFits(pl, &es.events[i].Attr) {
			return false
		}
	} else if l.fixed > len(pl) {
		return false
	} else if l.st&SampleCallchain != 0 {
		rest := uint64(len(pl) - l.fixed)
		if rest < 8 || le.Uint64(pl[l.fixed:]) > (rest-8)/8 {
			return false
		}
	}
	s := &p.sample
	if !p.sampleBare {
		resetSample(s, l.st)
		p.sampleBare = true
	}
	s.Fields = l.st
	h := &s.RecordHeader
	h.RecType = RecordSample
	h.Misc = le.Uint16(b[4:])
	h.Size = le.Uint16(b[6:])
	h.Offset, h.Compressed, h.Part, h.EventIndex = off, compressed, part, i
	id := &h.SampleID
	id.Fields = l.idFields
	id.PID, id.TID, id.Time, id.ID, id.StreamID, id.CPU = 0, 0, 0, 0, 0, 0
	if l.tid >= 0 {
		id.PID = le.Uint32(pl[l.tid:])
		id.TID = le.Uint32(pl[l.tid+4:])
	}
	if l.time >= 0 {
		id.Time = le.Uint64(pl[l.time:])
	}
	if l.id >= 0 {
		id.ID = le.Uint64(pl[l.id:])
	}
	if l.stream >= 0 {
		id.StreamID = le.Uint64(pl[l.stream:])
	}
	if l.cpu >= 0 {
		id.CPU = le.Uint32(pl[l.cpu:])
	}
	return true
}
