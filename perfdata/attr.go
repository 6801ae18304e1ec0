package perfdata

import (
	"encoding/binary"
	"math/bits"
)

// SampleType is perf_event_attr.sample_type: which fields a SAMPLE record
// carries (PERF_SAMPLE_* in include/uapi/linux/perf_event.h).
type SampleType uint64

// Sample type bits, in bit order.
const (
	SampleIP           SampleType = 1 << 0
	SampleTID          SampleType = 1 << 1
	SampleTime         SampleType = 1 << 2
	SampleAddr         SampleType = 1 << 3
	SampleRead         SampleType = 1 << 4
	SampleCallchain    SampleType = 1 << 5
	SampleID           SampleType = 1 << 6
	SampleCPU          SampleType = 1 << 7
	SamplePeriod       SampleType = 1 << 8
	SampleStreamID     SampleType = 1 << 9
	SampleRaw          SampleType = 1 << 10
	SampleBranchStack  SampleType = 1 << 11
	SampleRegsUser     SampleType = 1 << 12
	SampleStackUser    SampleType = 1 << 13
	SampleWeight       SampleType = 1 << 14
	SampleDataSrc      SampleType = 1 << 15
	SampleIdentifier   SampleType = 1 << 16
	SampleTransaction  SampleType = 1 << 17
	SampleRegsIntr     SampleType = 1 << 18
	SamplePhysAddr     SampleType = 1 << 19
	SampleAux          SampleType = 1 << 20
	SampleCgroup       SampleType = 1 << 21
	SampleDataPageSize SampleType = 1 << 22
	SampleCodePageSize SampleType = 1 << 23
	SampleWeightStruct SampleType = 1 << 24

	sampleTypeMax SampleType = 1 << 25 // PERF_SAMPLE_MAX: higher bits are unknown
)

// ReadFormat is perf_event_attr.read_format (PERF_FORMAT_*).
type ReadFormat uint64

// Read format bits.
const (
	FormatTotalTimeEnabled ReadFormat = 1 << 0
	FormatTotalTimeRunning ReadFormat = 1 << 1
	FormatID               ReadFormat = 1 << 2
	FormatGroup            ReadFormat = 1 << 3
	FormatLost             ReadFormat = 1 << 4

	readFormatMax ReadFormat = 1 << 5
)

// AttrFlags is the bitfield word at offset 40 of perf_event_attr, with bit i
// meaning what it means on a little-endian machine (docs/perfdata-format.md,
// "The attr flags word"); for
// big-endian files decodeAttr renumbers the bits so these constants hold.
type AttrFlags uint64

// Attribute flag bits.
const (
	FlagDisabled               AttrFlags = 1 << 0
	FlagInherit                AttrFlags = 1 << 1
	FlagPinned                 AttrFlags = 1 << 2
	FlagExclusive              AttrFlags = 1 << 3
	FlagExcludeUser            AttrFlags = 1 << 4
	FlagExcludeKernel          AttrFlags = 1 << 5
	FlagExcludeHV              AttrFlags = 1 << 6
	FlagExcludeIdle            AttrFlags = 1 << 7
	FlagMmap                   AttrFlags = 1 << 8
	FlagComm                   AttrFlags = 1 << 9
	FlagFreq                   AttrFlags = 1 << 10
	FlagInheritStat            AttrFlags = 1 << 11
	FlagEnableOnExec           AttrFlags = 1 << 12
	FlagTask                   AttrFlags = 1 << 13
	FlagWatermark              AttrFlags = 1 << 14
	flagPreciseIPMask          AttrFlags = 3 << 15 // two bits: see Attr.PreciseIP
	FlagMmapData               AttrFlags = 1 << 17
	FlagSampleIDAll            AttrFlags = 1 << 18
	FlagExcludeHost            AttrFlags = 1 << 19
	FlagExcludeGuest           AttrFlags = 1 << 20
	FlagExcludeCallchainKernel AttrFlags = 1 << 21
	FlagExcludeCallchainUser   AttrFlags = 1 << 22
	FlagMmap2                  AttrFlags = 1 << 23
	FlagCommExec               AttrFlags = 1 << 24
	FlagUseClockID             AttrFlags = 1 << 25
	FlagContextSwitch          AttrFlags = 1 << 26
	FlagWriteBackward          AttrFlags = 1 << 27
	FlagNamespaces             AttrFlags = 1 << 28
	FlagKsymbol                AttrFlags = 1 << 29
	FlagBPFEvent               AttrFlags = 1 << 30
	FlagAuxOutput              AttrFlags = 1 << 31
	FlagCgroup                 AttrFlags = 1 << 32
	FlagTextPoke               AttrFlags = 1 << 33
	FlagBuildID                AttrFlags = 1 << 34
	FlagInheritThread          AttrFlags = 1 << 35
	FlagRemoveOnExec           AttrFlags = 1 << 36
	FlagSigtrap                AttrFlags = 1 << 37
	FlagDeferCallchain         AttrFlags = 1 << 38
	FlagDeferOutput            AttrFlags = 1 << 39
)

// Branch sample type bits that change the SAMPLE layout.
const (
	BranchHWIndex  uint64 = 1 << 17 // PERF_SAMPLE_BRANCH_HW_INDEX: hw_idx follows nr
	BranchCounters uint64 = 1 << 19 // PERF_SAMPLE_BRANCH_COUNTERS: a counter per entry
)

// Attr types (perf_event_attr.type); dynamic PMUs have other numbers, named
// by the PMU_MAPPINGS feature.
const (
	AttrTypeHardware   uint32 = 0
	AttrTypeSoftware   uint32 = 1
	AttrTypeTracepoint uint32 = 2
	AttrTypeHWCache    uint32 = 3
	AttrTypeRaw        uint32 = 4
	AttrTypeBreakpoint uint32 = 5
)

// Attr sizes (PERF_ATTR_SIZE_VER*).
const (
	attrSizeVer0 = 64
	attrSizeMax  = 144 // VER9, the newest this reader knows; larger attrs keep a tail it ignores
)

// Attr is a decoded perf_event_attr. Fields past the attr's Size are zero,
// as the kernel treats them.
type Attr struct {
	Type             uint32
	Size             uint32 // as recorded; 0 in the file means VER0 (64)
	Config           uint64
	SamplePeriod     uint64 // a frequency when Flags has FlagFreq
	SampleType       SampleType
	ReadFormat       ReadFormat
	Flags            AttrFlags
	WakeupEvents     uint32 // or wakeup_watermark when FlagWatermark
	BPType           uint32
	Config1          uint64 // bp_addr, kprobe_func, uprobe_path
	Config2          uint64 // bp_len, kprobe_addr, probe_offset (VER1)
	BranchSampleType uint64 // VER2
	SampleRegsUser   uint64 // VER3
	SampleStackUser  uint32 // VER3
	ClockID          int32  // VER3, valid with FlagUseClockID
	SampleRegsIntr   uint64 // VER4
	AuxWatermark     uint32 // VER5
	SampleMaxStack   uint16 // VER5
	AuxSampleSize    uint32 // VER6
	AuxAction        uint32 // VER6
	SigData          uint64 // VER7
	Config3          uint64 // VER8
	Config4          uint64 // VER9
}

// PreciseIP returns the precise_ip field (0..3; perf prints it as ":p" suffixes).
func (a *Attr) PreciseIP() int { return int((a.Flags & flagPreciseIPMask) >> 15) }

// Freq reports whether SamplePeriod is a sampling frequency in Hz.
func (a *Attr) Freq() bool { return a.Flags&FlagFreq != 0 }

// SampleIDAll reports whether non-sample kernel records carry a sample_id trailer.
func (a *Attr) SampleIDAll() bool { return a.Flags&FlagSampleIDAll != 0 }

// decodeAttr decodes a perf_event_attr from b, which holds exactly the attr's
// bytes (attr_size-16 in file mode, attr.size in pipe mode). Shorter attrs
// leave newer fields zero; longer ones have a tail this reader ignores, as
// perf's read_attr tolerates attrs from newer writers only up to its own
// size, and we accept more. b must be at least 64 bytes (VER0).
func decodeAttr(b []byte, order binary.ByteOrder) Attr {
	var a Attr
	u32 := func(off int) uint32 {
		if off+4 > len(b) {
			return 0
		}
		return order.Uint32(b[off:])
	}
	u64 := func(off int) uint64 {
		if off+8 > len(b) {
			return 0
		}
		return order.Uint64(b[off:])
	}
	u16 := func(off int) uint16 {
		if off+2 > len(b) {
			return 0
		}
		return order.Uint16(b[off:])
	}
	a.Type = u32(0)
	a.Size = u32(4)
	a.Config = u64(8)
	a.SamplePeriod = u64(16)
	a.SampleType = SampleType(u64(24))
	a.ReadFormat = ReadFormat(u64(32))
	flags := u64(40)
	if order == binary.BigEndian {
		// C bitfields on big-endian machines are allocated from the most
		// significant bit down (swap_bitfield in tools/perf/util/session.c):
		// little-endian bit i is bit 63-i.
		flags = bits.Reverse64(flags)
		// The two-bit precise_ip keeps its own bit order inside the field:
		// its value is (v>>47)&3 of the big-endian word, so after the
		// reversal its two bits are swapped back.
		lo, hi := flags>>15&1, flags>>16&1
		flags = flags&^uint64(flagPreciseIPMask) | hi<<15 | lo<<16
	}
	a.Flags = AttrFlags(flags)
	a.WakeupEvents = u32(48)
	a.BPType = u32(52)
	a.Config1 = u64(56)
	a.Config2 = u64(64)
	a.BranchSampleType = u64(72)
	a.SampleRegsUser = u64(80)
	a.SampleStackUser = u32(88)
	a.ClockID = int32(u32(92))
	a.SampleRegsIntr = u64(96)
	a.AuxWatermark = u32(104)
	a.SampleMaxStack = u16(108)
	a.AuxSampleSize = u32(112)
	a.AuxAction = u32(116)
	a.SigData = u64(120)
	a.Config3 = u64(128)
	a.Config4 = u64(136)
	return a
}
