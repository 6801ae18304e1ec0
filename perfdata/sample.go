package perfdata

import (
	"encoding/binary"
	"iter"
	"math/bits"
	"slices"
	"unsafe"
)

// hostLittle is whether this machine stores a uint64 least significant
// byte first, as perf.data's usual (little-endian) order does.
var hostLittle = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// Sample is PERF_RECORD_SAMPLE (9). The fields present are those of the
// event's attr.sample_type (Fields); each optional field's comment names the
// bit that makes it valid. TID, TIME, ID, STREAM_ID, CPU and IDENTIFIER are
// in RecordHeader.SampleID. Slices alias buffers that the next call to
// Records.Next reuses.
type Sample struct {
	RecordHeader
	Fields SampleType // the attr's sample_type

	IP     uint64 // SampleIP
	Addr   uint64 // SampleAddr
	Period uint64 // SamplePeriod; without it, perf uses attr.sample_period
	Read   ReadValues
	// Callchain is the raw callchain (SampleCallchain): instruction
	// pointers interleaved with PERF_CONTEXT_* markers. Frames walks it.
	// It may be the record's own bytes, seen as words: read it, do not
	// write to it.
	Callchain []uint64
	Raw       []byte // SampleRaw: tracepoint or raw PMU data
	// BranchHWIndex is the hw_idx of the branch stack (SampleBranchStack
	// and attr branch_sample_type HW_INDEX), else -1.
	BranchHWIndex int64
	Branches      []BranchEntry // SampleBranchStack
	// BranchCounters has one entry per branch (SampleBranchStack and
	// branch_sample_type COUNTERS).
	BranchCounters []uint64
	RegsUserABI    uint64   // SampleRegsUser: 0 none, 1 32-bit, 2 64-bit
	RegsUser       []uint64 // SampleRegsUser, ABI != 0: one per bit of attr.sample_regs_user
	StackUser      []byte   // SampleStackUser: the copied user stack
	// StackUserDynSize is how much of StackUser is valid (SampleStackUser).
	StackUserDynSize uint64
	// Weight is the u64 of SampleWeight, or of SampleWeightStruct (then
	// see WeightVar1, WeightVar2, WeightVar3).
	Weight       uint64
	DataSrc      uint64   // SampleDataSrc: perf_mem_data_src
	Transaction  uint64   // SampleTransaction: PERF_TXN_* bits, abort code in bits 32..63
	RegsIntrABI  uint64   // SampleRegsIntr
	RegsIntr     []uint64 // SampleRegsIntr, ABI != 0: one per bit of attr.sample_regs_intr
	PhysAddr     uint64   // SamplePhysAddr
	CgroupID     uint64   // SampleCgroup
	DataPageSize uint64   // SampleDataPageSize
	CodePageSize uint64   // SampleCodePageSize
	Aux          []byte   // SampleAux
}

// PID returns the sample's process id (valid with SampleTID).
func (s *Sample) PID() uint32 { return s.SampleID.PID }

// TID returns the sample's thread id (valid with SampleTID).
func (s *Sample) TID() uint32 { return s.SampleID.TID }

// Time returns the sample's timestamp (valid with SampleTime).
func (s *Sample) Time() uint64 { return s.SampleID.Time }

// CPU returns the sample's CPU (valid with SampleCPU).
func (s *Sample) CPU() uint32 { return s.SampleID.CPU }

// ExactIP reports whether IP is the exact instruction (PERF_RECORD_MISC_EXACT_IP).
func (s *Sample) ExactIP() bool { return s.Misc&miscExactIP != 0 }

// WeightVar1 returns weight.var1_dw of SampleWeightStruct (the weight).
func (s *Sample) WeightVar1() uint32 { return uint32(s.Weight) }

// WeightVar2 returns weight.var2_w of SampleWeightStruct (instruction latency).
func (s *Sample) WeightVar2() uint16 { return uint16(s.Weight >> 32) }

// WeightVar3 returns weight.var3_w of SampleWeightStruct.
func (s *Sample) WeightVar3() uint16 { return uint16(s.Weight >> 48) }

// Frames walks the callchain as perf's thread__resolve_callchain does: it
// yields each instruction pointer with the address space it belongs to,
// skipping the PERF_CONTEXT_* markers (and the cookie after
// USER_DEFERRED). Before the first marker the sample's own CPUMode applies.
func (s *Sample) Frames() iter.Seq2[CPUMode, uint64] {
	return WalkCallchain(s.Callchain, s.CPUMode())
}

// Callchain context markers (PERF_CONTEXT_* in include/uapi/linux/perf_event.h).
const (
	ContextHV           uint64 = 0xffffffffffffffe0 // -32
	ContextKernel       uint64 = 0xffffffffffffff80 // -128
	ContextUser         uint64 = 0xfffffffffffffe00 // -512
	ContextUserDeferred uint64 = 0xfffffffffffffd80 // -640, followed by a cookie
	ContextGuest        uint64 = 0xfffffffffffff800 // -2048
	ContextGuestKernel  uint64 = 0xfffffffffffff780 // -2176
	ContextGuestUser    uint64 = 0xfffffffffffff600 // -2560
	ContextMax          uint64 = 0xfffffffffffff001 // -4095: entries >= this are markers
)

// WalkCallchain yields (address space, ip) for each non-marker entry of a
// raw callchain; mode applies until the first marker.
func WalkCallchain(ips []uint64, mode CPUMode) iter.Seq2[CPUMode, uint64] {
	return func(yield func(CPUMode, uint64) bool) {
		for i := 0; i < len(ips); i++ {
			ip := ips[i]
			if ip >= ContextMax {
				switch ip {
				case ContextHV:
					mode = CPUModeHypervisor
				case ContextKernel:
					mode = CPUModeKernel
				case ContextUser:
					mode = CPUModeUser
				case ContextUserDeferred:
					mode = CPUModeUser
					i++ // the cookie; the ips come in CALLCHAIN_DEFERRED
				case ContextGuest:
					mode = CPUModeGuestKernel
				case ContextGuestKernel:
					mode = CPUModeGuestKernel
				case ContextGuestUser:
					mode = CPUModeGuestUser
				}
				continue
			}
			if !yield(mode, ip) {
				return
			}
		}
	}
}

// ReadValues is a read_format block (SampleRead in a SAMPLE, or a READ
// record). Without FormatGroup, Values has one entry.
type ReadValues struct {
	Format      ReadFormat
	TimeEnabled uint64 // FormatTotalTimeEnabled
	TimeRunning uint64 // FormatTotalTimeRunning
	Values      []ReadValue
}

// ReadValue is one counter of a ReadValues.
type ReadValue struct {
	Value uint64
	ID    uint64 // FormatID
	Lost  uint64 // FormatLost
}

// BranchEntry is one entry of a branch stack. Flags uses the bit positions
// of a little-endian perf_branch_entry whatever the file's byte order
// (big-endian files are converted as evsel__bitfield_swap_branch_flags
// does); the methods decode it.
type BranchEntry struct {
	From, To uint64
	Flags    uint64
}

// Mispred reports a mispredicted branch.
func (b BranchEntry) Mispred() bool { return b.Flags&1 != 0 }

// Predicted reports a predicted branch.
func (b BranchEntry) Predicted() bool { return b.Flags&2 != 0 }

// InTx reports a branch inside a transaction.
func (b BranchEntry) InTx() bool { return b.Flags&4 != 0 }

// Abort reports a transaction abort.
func (b BranchEntry) Abort() bool { return b.Flags&8 != 0 }

// Cycles returns the cycle count since the previous branch (0: unknown).
func (b BranchEntry) Cycles() uint16 { return uint16(b.Flags >> 4) }

// BranchType returns the PERF_BR_* type.
func (b BranchEntry) BranchType() uint8 { return uint8(b.Flags>>20) & 0xf }

// Spec returns the speculation outcome (PERF_BR_SPEC_*).
func (b BranchEntry) Spec() uint8 { return uint8(b.Flags>>24) & 3 }

// NewType returns the extended PERF_BR_* type.
func (b BranchEntry) NewType() uint8 { return uint8(b.Flags>>26) & 0xf }

// Priv returns the privilege level (PERF_BR_PRIV_*).
func (b BranchEntry) Priv() uint8 { return uint8(b.Flags>>30) & 7 }

// branchFlagsBE converts the flags word of a big-endian file, decoded as a
// big-endian u64, to little-endian bit positions
// (evsel__bitfield_swap_branch_flags in tools/perf/util/evsel.c).
func branchFlagsBE(v uint64) uint64 {
	var f uint64
	f |= v >> 63 & 1
	f |= (v >> 62 & 1) << 1
	f |= (v >> 61 & 1) << 2
	f |= (v >> 60 & 1) << 3
	f |= (v >> 44 & 0xffff) << 4
	f |= (v >> 40 & 0xf) << 20
	f |= (v >> 38 & 3) << 24
	f |= (v >> 34 & 0xf) << 26
	f |= (v >> 31 & 7) << 30
	return f
}

// decodeReadValues decodes a read_format block into rv, reusing rv.Values.
// The group count is bounded by what remains before anything grows.
func decodeReadValues(d *decoder, rf ReadFormat, rv *ReadValues) {
	vals := rv.Values[:0]
	*rv = ReadValues{Format: rf}
	if rf&FormatGroup != 0 {
		nr := d.u64()
		if rf&FormatTotalTimeEnabled != 0 {
			rv.TimeEnabled = d.u64()
		}
		if rf&FormatTotalTimeRunning != 0 {
			rv.TimeRunning = d.u64()
		}
		per := uint64(8)
		if rf&FormatID != 0 {
			per += 8
		}
		if rf&FormatLost != 0 {
			per += 8
		}
		if d.err == nil && nr > uint64(d.remaining())/per {
			d.fail(errCount, "read group of %d values cannot fit in %d bytes", nr, d.remaining())
		}
		if d.err != nil {
			rv.Values = vals
			return
		}
		for i := uint64(0); i < nr; i++ {
			var v ReadValue
			v.Value = d.u64()
			if rf&FormatID != 0 {
				v.ID = d.u64()
			}
			if rf&FormatLost != 0 {
				v.Lost = d.u64()
			}
			vals = append(vals, v)
		}
		rv.Values = vals
		return
	}
	var v ReadValue
	v.Value = d.u64()
	if rf&FormatTotalTimeEnabled != 0 {
		rv.TimeEnabled = d.u64()
	}
	if rf&FormatTotalTimeRunning != 0 {
		rv.TimeRunning = d.u64()
	}
	if rf&FormatID != 0 {
		v.ID = d.u64()
	}
	if rf&FormatLost != 0 {
		v.Lost = d.u64()
	}
	rv.Values = append(vals, v)
}

// u64s decodes n u64 values into dst (reused), bounding n by what remains.
func (d *decoder) u64s(dst []uint64, n uint64, what string) []uint64 {
	dst = dst[:0]
	if !d.fitsU64s(n, what) {
		return dst
	}
	b := d.bytes(int(n) * 8)
	at := len(dst)
	dst = slices.Grow(dst, int(n))[:at+int(n)]
	out := dst[at:]
	if d.little && hostLittle && n > 0 {
		// The file's order is the machine's: the values are the bytes
		// as they are, so one copy does (registers, branch counters, and
		// callchains u64sView cannot return in place because they are
		// unaligned; decoding word by word was a tenth of reading a
		// recording in time order). The destination is viewed as bytes,
		// so nothing unaligned is ever read as a uint64.
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&out[0])), len(out)*8), b)
	} else if d.little {
		for i := range out {
			out[i] = binary.LittleEndian.Uint64(b[8*i:])
		}
	} else {
		for i := range out {
			out[i] = d.order.Uint64(b[8*i:])
		}
	}
	return dst
}

// u64sView is u64s for an array that is only read: when the file's order
// is the machine's and the words are aligned, it returns them in place, the
// record's bytes seen as words (no copy: a callchain is most of a sample,
// and copying it was a twentieth of checking a recording); otherwise it
// decodes them into buf. It returns the words and buf (reused next time).
func (d *decoder) u64sView(buf []uint64, n uint64, what string) ([]uint64, []uint64) {
	if d.little && hostLittle && n > 0 && d.fitsU64s(n, what) {
		b := d.b[d.off : d.off+int(n)*8]
		if uintptr(unsafe.Pointer(&b[0]))%8 == 0 {
			d.off += len(b)
			return unsafe.Slice((*uint64)(unsafe.Pointer(&b[0])), n), buf
		}
	}
	buf = d.u64s(buf, n, what)
	return buf, buf
}

// resetSample clears every field of s after its RecordHeader, keeping the
// slices' storage for reuse, and sets Fields. It writes the fields one by
// one: assigning a Sample literal that keeps s's own header makes the
// compiler copy the header out and back through the stack, a stall that
// weighs on a skimming decode (bench/README.md, "The reader").
// TestResetSampleEveryField fails when a field is added to Sample and not
// here.
func resetSample(s *Sample, st SampleType) {
	s.Fields = st
	s.IP, s.Addr, s.Period = 0, 0, 0
	s.Read = ReadValues{Values: s.Read.Values[:0]}
	// Not Callchain[:0]: it may be a previous record's bytes (u64sView),
	// which an append must never write into.
	s.Callchain = nil
	s.Raw = nil
	s.BranchHWIndex = -1
	s.Branches, s.BranchCounters = s.Branches[:0], s.BranchCounters[:0]
	s.RegsUserABI, s.RegsUser = 0, s.RegsUser[:0]
	s.StackUser, s.StackUserDynSize = nil, 0
	s.Weight, s.DataSrc, s.Transaction = 0, 0, 0
	s.RegsIntrABI, s.RegsIntr = 0, s.RegsIntr[:0]
	s.PhysAddr, s.CgroupID, s.DataPageSize, s.CodePageSize = 0, 0, 0, 0
	s.Aux = nil
}

// fitsU64s reports whether n u64 values fit in what remains, failing with
// errCount when they do not.
func (d *decoder) fitsU64s(n uint64, what string) bool {
	if d.err != nil {
		return false
	}
	if n > uint64(d.remaining())/8 {
		d.fail(errCount, "%s of %d entries cannot fit in %d bytes", what, n, d.remaining())
		return false
	}
	return true
}

// decodeSample decodes a SAMPLE payload (the bytes after the header) in
// the order of evsel__parse_sample (tools/perf/util/evsel.c; docs/perfdata-format.md,
// "Samples").
// s.RecordHeader must be set already; its SampleID is filled here. The
// callchain is the record's own bytes when it can be (u64sView), else it
// is decoded into *chainBuf. sampleFits walks the same layout without
// decoding it.
func decodeSample(d *decoder, a *Attr, s *Sample, chainBuf *[]uint64) {
	st := a.SampleType
	resetSample(s, st)
	id := &s.SampleID
	*id = SampleIDInfo{Fields: st & (SampleTID | SampleTime | SampleID | SampleStreamID | SampleCPU | SampleIdentifier)}

	if d.little && d.err == nil {
		if n := 8 * bits.OnesCount64(uint64(st&sampleFixed)); d.remaining() >= n {
			decodeSampleFixedLE(d.b[d.off:d.off+n], st, s)
			d.off += n
			goto variable
		}
	}
	if st&SampleIdentifier != 0 {
		id.ID = d.u64()
	}
	if st&SampleIP != 0 {
		s.IP = d.u64()
	}
	if st&SampleTID != 0 {
		id.PID = d.u32()
		id.TID = d.u32()
	}
	if st&SampleTime != 0 {
		id.Time = d.u64()
	}
	if st&SampleAddr != 0 {
		s.Addr = d.u64()
	}
	if st&SampleID != 0 {
		id.ID = d.u64()
	}
	if st&SampleStreamID != 0 {
		id.StreamID = d.u64()
	}
	if st&SampleCPU != 0 {
		id.CPU = d.u32()
		d.u32() // res
	}
	if st&SamplePeriod != 0 {
		s.Period = d.u64()
	}
variable:
	if st&SampleRead != 0 {
		decodeReadValues(d, a.ReadFormat, &s.Read)
	}
	if st&SampleCallchain != 0 {
		nr := d.u64()
		s.Callchain, *chainBuf = d.u64sView(*chainBuf, nr, "callchain")
	}
	if st&SampleRaw != 0 {
		n := d.u32()
		if d.err == nil && int64(n) > int64(d.remaining()) {
			d.fail(errCount, "raw data of %d bytes cannot fit in %d bytes", n, d.remaining())
		}
		s.Raw = d.bytes(int(n))
	}
	if st&SampleBranchStack != 0 {
		nr := d.u64()
		if a.BranchSampleType&BranchHWIndex != 0 {
			s.BranchHWIndex = int64(d.u64())
		}
		per := uint64(24)
		if a.BranchSampleType&BranchCounters != 0 {
			per += 8
		}
		if d.err == nil && nr > uint64(d.remaining())/per {
			d.fail(errCount, "branch stack of %d entries cannot fit in %d bytes", nr, d.remaining())
		}
		if d.err == nil {
			be := d.order == binary.BigEndian
			for i := uint64(0); i < nr; i++ {
				e := BranchEntry{From: d.u64(), To: d.u64(), Flags: d.u64()}
				if be {
					e.Flags = branchFlagsBE(e.Flags)
				}
				s.Branches = append(s.Branches, e)
			}
			if a.BranchSampleType&BranchCounters != 0 {
				s.BranchCounters = d.u64s(s.BranchCounters, nr, "branch counters")
			}
		}
	}
	if st&SampleRegsUser != 0 {
		s.RegsUserABI = d.u64()
		if s.RegsUserABI != 0 {
			s.RegsUser = d.u64s(s.RegsUser, uint64(bits.OnesCount64(a.SampleRegsUser)), "user registers")
		}
	}
	if st&SampleStackUser != 0 {
		n := d.u64()
		if n != 0 {
			if d.err == nil && n > uint64(d.remaining()) {
				d.fail(errCount, "user stack of %d bytes cannot fit in %d bytes", n, d.remaining())
			}
			s.StackUser = d.bytes(int(n))
			s.StackUserDynSize = d.u64()
		}
	}
	if st&(SampleWeight|SampleWeightStruct) != 0 {
		s.Weight = d.u64()
	}
	if st&SampleDataSrc != 0 {
		s.DataSrc = d.u64()
	}
	if st&SampleTransaction != 0 {
		s.Transaction = d.u64()
	}
	if st&SampleRegsIntr != 0 {
		s.RegsIntrABI = d.u64()
		if s.RegsIntrABI != 0 {
			s.RegsIntr = d.u64s(s.RegsIntr, uint64(bits.OnesCount64(a.SampleRegsIntr)), "interrupt registers")
		}
	}
	if st&SamplePhysAddr != 0 {
		s.PhysAddr = d.u64()
	}
	if st&SampleCgroup != 0 {
		s.CgroupID = d.u64()
	}
	if st&SampleDataPageSize != 0 {
		s.DataPageSize = d.u64()
	}
	if st&SampleCodePageSize != 0 {
		s.CodePageSize = d.u64()
	}
	if st&SampleAux != 0 {
		n := d.u64()
		if d.err == nil && n > uint64(d.remaining()) {
			d.fail(errCount, "aux sample of %d bytes cannot fit in %d bytes", n, d.remaining())
		}
		s.Aux = d.bytes(int(n))
	}
}

// sampleFixed are the u64-sized fields at the start of a SAMPLE, before the
// first variable-length one (READ).
const sampleFixed = SampleIdentifier | SampleIP | SampleTID | SampleTime | SampleAddr | SampleID |
	SampleStreamID | SampleCPU | SamplePeriod

// decodeSampleFixedLE decodes the sampleFixed fields of a little-endian
// sample from b, which holds exactly them: the common case, without a
// length check per field.
func decodeSampleFixedLE(b []byte, st SampleType, s *Sample) {
	le := binary.LittleEndian
	id := &s.SampleID
	p := 0
	next := func() uint64 {
		v := le.Uint64(b[p:])
		p += 8
		return v
	}
	if st&SampleIdentifier != 0 {
		id.ID = next()
	}
	if st&SampleIP != 0 {
		s.IP = next()
	}
	if st&SampleTID != 0 {
		id.PID = le.Uint32(b[p:])
		id.TID = le.Uint32(b[p+4:])
		p += 8
	}
	if st&SampleTime != 0 {
		id.Time = next()
	}
	if st&SampleAddr != 0 {
		s.Addr = next()
	}
	if st&SampleID != 0 {
		id.ID = next()
	}
	if st&SampleStreamID != 0 {
		id.StreamID = next()
	}
	if st&SampleCPU != 0 {
		id.CPU = le.Uint32(b[p:])
		p += 8
	}
	if st&SamplePeriod != 0 {
		s.Period = next()
	}
}

// idHeaderSize is the size of the sample_id trailer for sample type st
// (perf_evsel__calc_id_hdr_size / __evsel__id_hdr_size).
func idHeaderSize(st SampleType) int {
	n := 0
	for _, b := range [...]SampleType{SampleTID, SampleTime, SampleID, SampleStreamID, SampleCPU, SampleIdentifier} {
		if st&b != 0 {
			n += 8
		}
	}
	return n
}

// decodeSampleID decodes a sample_id trailer (perf_evsel__parse_id_sample in
// tools/perf/util/evsel.c; docs/perfdata-format.md) from b, which
// holds exactly the trailer's bytes.
func decodeSampleID(b []byte, order binary.ByteOrder, st SampleType, id *SampleIDInfo) {
	*id = SampleIDInfo{Fields: st & (SampleTID | SampleTime | SampleID | SampleStreamID | SampleCPU | SampleIdentifier)}
	off := 0
	if st&SampleTID != 0 {
		id.PID = order.Uint32(b[off:])
		id.TID = order.Uint32(b[off+4:])
		off += 8
	}
	if st&SampleTime != 0 {
		id.Time = order.Uint64(b[off:])
		off += 8
	}
	if st&SampleID != 0 {
		id.ID = order.Uint64(b[off:])
		off += 8
	}
	if st&SampleStreamID != 0 {
		id.StreamID = order.Uint64(b[off:])
		off += 8
	}
	if st&SampleCPU != 0 {
		id.CPU = order.Uint32(b[off:])
		off += 8
	}
	if st&SampleIdentifier != 0 {
		id.ID = order.Uint64(b[off:])
	}
}
