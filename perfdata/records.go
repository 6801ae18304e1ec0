package perfdata

import (
	"strconv"

	"github.com/perfcheck/perfcheck/buildid"
)

// RecordType is perf_event_header.type: kernel records (1..63, from
// include/uapi/linux/perf_event.h) and records the perf tool writes itself
// (64 and up, from tools/lib/perf/include/perf/event.h).
type RecordType uint32

// Record types.
const (
	RecordMmap              RecordType = 1
	RecordLost              RecordType = 2
	RecordComm              RecordType = 3
	RecordExit              RecordType = 4
	RecordThrottle          RecordType = 5
	RecordUnthrottle        RecordType = 6
	RecordFork              RecordType = 7
	RecordRead              RecordType = 8
	RecordSample            RecordType = 9
	RecordMmap2             RecordType = 10
	RecordAux               RecordType = 11
	RecordItraceStart       RecordType = 12
	RecordLostSamples       RecordType = 13
	RecordSwitch            RecordType = 14
	RecordSwitchCPUWide     RecordType = 15
	RecordNamespaces        RecordType = 16
	RecordKsymbol           RecordType = 17
	RecordBPFEvent          RecordType = 18
	RecordCgroup            RecordType = 19
	RecordTextPoke          RecordType = 20
	RecordAuxOutputHWID     RecordType = 21
	RecordCallchainDeferred RecordType = 22

	RecordHeaderAttr      RecordType = 64
	RecordHeaderEventType RecordType = 65
	RecordTracingData     RecordType = 66
	RecordHeaderBuildID   RecordType = 67
	RecordFinishedRound   RecordType = 68
	RecordIDIndex         RecordType = 69
	RecordAuxtraceInfo    RecordType = 70
	RecordAuxtrace        RecordType = 71
	RecordAuxtraceError   RecordType = 72
	RecordThreadMap       RecordType = 73
	RecordCPUMap          RecordType = 74
	RecordStatConfig      RecordType = 75
	RecordStat            RecordType = 76
	RecordStatRound       RecordType = 77
	RecordEventUpdate     RecordType = 78
	RecordTimeConv        RecordType = 79
	RecordHeaderFeature   RecordType = 80
	RecordCompressed      RecordType = 81
	RecordFinishedInit    RecordType = 82
	RecordCompressed2     RecordType = 83
	RecordBPFMetadata     RecordType = 84
	RecordSchedstatCPU    RecordType = 85
	RecordSchedstatDomain RecordType = 86

	// Records only simpleperf (Android) writes, from
	// SIMPLE_PERF_RECORD_TYPE_START on (system/extras/simpleperf/record.h):
	// its own symbol tables, the callchains it unwound after recording,
	// and debug data. Linux perf stops at them; this package returns them
	// as *Unknown, named.
	RecordSimpleperfKernelSymbol RecordType = 32769
	RecordSimpleperfDSO          RecordType = 32770
	RecordSimpleperfSymbol       RecordType = 32771
	RecordSimpleperfSplit        RecordType = 32772
	RecordSimpleperfSplitEnd     RecordType = 32773
	RecordSimpleperfEventID      RecordType = 32774
	RecordSimpleperfCallchain    RecordType = 32775
	RecordSimpleperfUnwinding    RecordType = 32776
	RecordSimpleperfTracingData  RecordType = 32777
	RecordSimpleperfDebug        RecordType = 32778
	recordSimpleperfStart        RecordType = 32768

	// recordUserStart is PERF_RECORD_USER_TYPE_START: records from here on
	// are written by the perf tool, never carry a sample_id trailer and are
	// never time-ordered (perf_session__process_user_event).
	recordUserStart RecordType = 64
)

var recordTypeNames = map[RecordType]string{
	RecordMmap: "MMAP", RecordLost: "LOST", RecordComm: "COMM", RecordExit: "EXIT",
	RecordThrottle: "THROTTLE", RecordUnthrottle: "UNTHROTTLE", RecordFork: "FORK",
	RecordRead: "READ", RecordSample: "SAMPLE", RecordMmap2: "MMAP2", RecordAux: "AUX",
	RecordItraceStart: "ITRACE_START", RecordLostSamples: "LOST_SAMPLES",
	RecordSwitch: "SWITCH", RecordSwitchCPUWide: "SWITCH_CPU_WIDE",
	RecordNamespaces: "NAMESPACES", RecordKsymbol: "KSYMBOL", RecordBPFEvent: "BPF_EVENT",
	RecordCgroup: "CGROUP", RecordTextPoke: "TEXT_POKE", RecordAuxOutputHWID: "AUX_OUTPUT_HW_ID",
	RecordCallchainDeferred: "CALLCHAIN_DEFERRED",
	RecordHeaderAttr:        "ATTR", RecordHeaderEventType: "EVENT_TYPE",
	RecordTracingData: "TRACING_DATA", RecordHeaderBuildID: "BUILD_ID",
	RecordFinishedRound: "FINISHED_ROUND", RecordIDIndex: "ID_INDEX",
	RecordAuxtraceInfo: "AUXTRACE_INFO", RecordAuxtrace: "AUXTRACE",
	RecordAuxtraceError: "AUXTRACE_ERROR", RecordThreadMap: "THREAD_MAP",
	RecordCPUMap: "CPU_MAP", RecordStatConfig: "STAT_CONFIG", RecordStat: "STAT",
	RecordStatRound: "STAT_ROUND", RecordEventUpdate: "EVENT_UPDATE",
	RecordTimeConv: "TIME_CONV", RecordHeaderFeature: "FEATURE",
	RecordCompressed: "COMPRESSED", RecordFinishedInit: "FINISHED_INIT",
	RecordCompressed2: "COMPRESSED2", RecordBPFMetadata: "BPF_METADATA",
	RecordSchedstatCPU: "SCHEDSTAT_CPU", RecordSchedstatDomain: "SCHEDSTAT_DOMAIN",

	RecordSimpleperfKernelSymbol: "simpleperf:KERNEL_SYMBOL", RecordSimpleperfDSO: "simpleperf:DSO",
	RecordSimpleperfSymbol: "simpleperf:SYMBOL", RecordSimpleperfSplit: "simpleperf:SPLIT",
	RecordSimpleperfSplitEnd: "simpleperf:SPLIT_END", RecordSimpleperfEventID: "simpleperf:EVENT_ID",
	RecordSimpleperfCallchain: "simpleperf:CALLCHAIN", RecordSimpleperfUnwinding: "simpleperf:UNWINDING_RESULT",
	RecordSimpleperfTracingData: "simpleperf:TRACING_DATA", RecordSimpleperfDebug: "simpleperf:DEBUG",
}

// String returns the name perf report --stats uses for the type ("MMAP2",
// "FINISHED_ROUND"), "simpleperf:NAME" for simpleperf's own records
// (IsSimpleperf), or "type(N)" for a type this package does not know.
func (t RecordType) String() string {
	if s, ok := recordTypeNames[t]; ok {
		return s
	}
	return "type(" + strconv.FormatUint(uint64(t), 10) + ")"
}

// IsUser reports whether t is a record the perf tool writes (type >= 64)
// rather than one the kernel emits.
func (t RecordType) IsUser() bool { return t >= recordUserStart }

// IsSimpleperf reports whether t is one of the records only simpleperf
// writes (type 32768 and up); Linux perf does not read them.
func (t RecordType) IsSimpleperf() bool { return t >= recordSimpleperfStart && t <= 0xffff }

// Record is one decoded perf.data record. Its dynamic type is one of the
// pointer types in this package (*Sample, *Mmap2, *Comm, ..., *Unknown).
type Record interface {
	// Header returns the fields every record has.
	Header() *RecordHeader
	// Type returns the record's perf_event_header.type.
	Type() RecordType
}

// RecordHeader holds what every record carries besides its payload.
type RecordHeader struct {
	RecType RecordType
	Misc    uint16 // perf_event_header.misc
	// Size is perf_event_header.size; AUXTRACE and TRACING_DATA payloads
	// that follow the record are not included (see those types).
	Size uint16

	// Offset is the absolute byte offset of the record in its input: the
	// file (or data.N file of a perf.data directory, see Part) or the pipe
	// stream. For a record that came out of a COMPRESSED or COMPRESSED2
	// record it is the offset of that compressed record and Compressed is
	// true.
	Offset     int64
	Compressed bool
	// Part is 0 for the main file or stream and N+1 for the data.N file of
	// a perf.data directory.
	Part int

	// EventIndex is the index in Records.Events (the same as File.Events
	// for file-format recordings) of the event (attr) the record belongs
	// to, found as perf's evlist__event2evsel does (docs/perfdata-format.md);
	// -1 for user records (type >= 64) and when no event is known.
	EventIndex int

	// SampleID holds the sample_id fields: for a SAMPLE the sample's own
	// TID, TIME, ID, STREAM_ID, CPU and IDENTIFIER fields, for other
	// kernel records the sample_id trailer (attr.sample_id_all). Which
	// fields are valid is SampleID.Fields.
	SampleID SampleIDInfo
}

// Header returns h; it makes every record type satisfy Record.
func (h *RecordHeader) Header() *RecordHeader { return h }

// Type returns the record type.
func (h *RecordHeader) Type() RecordType { return h.RecType }

// CPUMode returns the address space of the record (misc & CPUMODE_MASK).
func (h *RecordHeader) CPUMode() CPUMode { return CPUMode(h.Misc & miscCPUModeMask) }

// SampleIDInfo is the sample_id part of a record (docs/perfdata-format.md,
// "The sample_id trailer").
type SampleIDInfo struct {
	// Fields has the SampleTID, SampleTime, SampleID, SampleStreamID,
	// SampleCPU and SampleIdentifier bits of the fields that were present.
	Fields   SampleType
	PID, TID uint32 // SampleTID
	Time     uint64 // SampleTime
	ID       uint64 // SampleID or SampleIdentifier
	StreamID uint64 // SampleStreamID
	CPU      uint32 // SampleCPU
}

// HasTime reports whether Time is valid.
func (s *SampleIDInfo) HasTime() bool { return s.Fields&SampleTime != 0 }

// Mmap is PERF_RECORD_MMAP (1): an executable mapping (or a data mapping
// when Misc has MMAP_DATA, see IsData).
type Mmap struct {
	RecordHeader
	PID, TID uint32
	Addr     uint64
	Len      uint64
	PgOff    uint64
	Filename string
}

// IsData reports whether the mapping is not executable (PERF_RECORD_MISC_MMAP_DATA).
func (r *Mmap) IsData() bool { return r.Misc&miscMmapData != 0 }

// Mmap2 is PERF_RECORD_MMAP2 (10). The union after PgOff holds either the
// device and inode of the mapped file or, when HasBuildID, its build-id
// (perf record --buildid-mmap).
type Mmap2 struct {
	RecordHeader
	PID, TID uint32
	Addr     uint64
	Len      uint64
	PgOff    uint64
	// Maj, Min, Ino and InoGeneration are valid when !HasBuildID().
	Maj, Min      uint32
	Ino           uint64
	InoGeneration uint64
	// BuildID is valid when HasBuildID(); it aliases storage reused by the
	// next record, copy it to keep it.
	BuildID  buildid.ID
	Prot     uint32
	Flags    uint32
	Filename string

	bid [20]byte
}

// HasBuildID reports whether the record carries a build-id instead of
// device and inode (PERF_RECORD_MISC_MMAP_BUILD_ID).
func (r *Mmap2) HasBuildID() bool { return r.Misc&miscMmapBuildID != 0 }

// IsData reports whether the mapping is not executable (PERF_RECORD_MISC_MMAP_DATA).
func (r *Mmap2) IsData() bool { return r.Misc&miscMmapData != 0 }

// Lost is PERF_RECORD_LOST (2): the kernel dropped records.
type Lost struct {
	RecordHeader
	ID   uint64
	Lost uint64
}

// Comm is PERF_RECORD_COMM (3): a thread's name changed.
type Comm struct {
	RecordHeader
	PID, TID uint32
	Comm     string
}

// Exec reports whether the name changed because of an exec (COMM_EXEC).
func (r *Comm) Exec() bool { return r.Misc&miscCommExec != 0 }

// Exit is PERF_RECORD_EXIT (4).
type Exit struct {
	RecordHeader
	PID, PPID uint32
	TID, PTID uint32
	Time      uint64
}

// Fork is PERF_RECORD_FORK (7).
type Fork struct {
	RecordHeader
	PID, PPID uint32
	TID, PTID uint32
	Time      uint64
}

// Throttle is PERF_RECORD_THROTTLE (5) or PERF_RECORD_UNTHROTTLE (6); Type
// tells which.
type Throttle struct {
	RecordHeader
	Time     uint64
	ID       uint64
	StreamID uint64
}

// Read is PERF_RECORD_READ (8): counter values at thread exit (inherit_stat).
type Read struct {
	RecordHeader
	PID, TID uint32
	Values   ReadValues
}

// Aux is PERF_RECORD_AUX (11): new data in the AUX area.
type Aux struct {
	RecordHeader
	AuxOffset uint64
	AuxSize   uint64
	Flags     uint64 // PERF_AUX_FLAG_*: TRUNCATED 0x1, OVERWRITE 0x2, PARTIAL 0x4, COLLISION 0x8
}

// ItraceStart is PERF_RECORD_ITRACE_START (12).
type ItraceStart struct {
	RecordHeader
	PID, TID uint32
}

// LostSamples is PERF_RECORD_LOST_SAMPLES (13).
type LostSamples struct {
	RecordHeader
	Lost uint64
}

// Switch is PERF_RECORD_SWITCH (14) or PERF_RECORD_SWITCH_CPU_WIDE (15).
type Switch struct {
	RecordHeader
	// NextPrevPID and NextPrevTID are valid for SWITCH_CPU_WIDE: the
	// thread switched to (when Out) or from.
	NextPrevPID, NextPrevTID uint32
}

// Out reports a switch out of the current thread (PERF_RECORD_MISC_SWITCH_OUT).
func (r *Switch) Out() bool { return r.Misc&miscSwitchOut != 0 }

// Preempt reports a switch out caused by preemption (SWITCH_OUT_PREEMPT).
func (r *Switch) Preempt() bool { return r.Misc&miscSwitchOutPreempt != 0 }

// Namespace is one {dev, inode} entry of a NAMESPACES record.
type Namespace struct{ Dev, Ino uint64 }

// Namespaces is PERF_RECORD_NAMESPACES (16). Index order: net, uts, ipc,
// pid, user, mnt, cgroup.
type Namespaces struct {
	RecordHeader
	PID, TID   uint32
	Namespaces []Namespace
}

// Ksymbol is PERF_RECORD_KSYMBOL (17): a kernel symbol (BPF program,
// out-of-line code) was registered or unregistered.
type Ksymbol struct {
	RecordHeader
	Addr     uint64
	Len      uint32
	KsymType uint16 // 1 BPF, 2 OOL
	Flags    uint16 // bit 0: unregister
	Name     string
}

// BPFEvent is PERF_RECORD_BPF_EVENT (18).
type BPFEvent struct {
	RecordHeader
	EventType uint16 // 1 PROG_LOAD, 2 PROG_UNLOAD
	Flags     uint16
	ID        uint32
	Tag       [8]byte
}

// Cgroup is PERF_RECORD_CGROUP (19).
type Cgroup struct {
	RecordHeader
	ID   uint64
	Path string
}

// TextPoke is PERF_RECORD_TEXT_POKE (20): kernel text was modified. Old
// and New alias the read buffer.
type TextPoke struct {
	RecordHeader
	Addr uint64
	Old  []byte
	New  []byte
}

// AuxOutputHWID is PERF_RECORD_AUX_OUTPUT_HW_ID (21).
type AuxOutputHWID struct {
	RecordHeader
	HWID uint64
}

// CallchainDeferred is PERF_RECORD_CALLCHAIN_DEFERRED (22): the user part of
// a callchain whose SAMPLE ended in PERF_CONTEXT_USER_DEFERRED with Cookie.
type CallchainDeferred struct {
	RecordHeader
	Cookie uint64
	IPs    []uint64
}

// HeaderAttr is PERF_RECORD_HEADER_ATTR (64), the pipe-mode form of the
// attrs section. Reading it adds an event to Events().
type HeaderAttr struct {
	RecordHeader
	Attr Attr
	IDs  []uint64
}

// EventType is the deprecated PERF_RECORD_HEADER_EVENT_TYPE (65).
type EventType struct {
	RecordHeader
	EventID uint64
	Name    string
}

// TracingData is PERF_RECORD_HEADER_TRACING_DATA (66). Its DataSize bytes
// of tracing data (tracepoint formats, kallsyms, printk formats: the
// TRACING_DATA feature's blob) follow the record in the input at
// DataOffset, outside Size. Data holds them (nil when over 64 MiB); for a
// pipe stream they also become Features' TRACING_DATA.
type TracingData struct {
	RecordHeader
	DataSize   uint32
	DataOffset int64
	Data       []byte
}

// FinishedRound is PERF_RECORD_FINISHED_ROUND (68): perf record finished one
// pass over all ring buffers (the ordering guarantee of
// docs/perfdata-format.md, "Time order").
type FinishedRound struct{ RecordHeader }

// IDIndexEntry is one entry of an ID_INDEX record.
type IDIndexEntry struct {
	ID, Idx, CPU, TID uint64
	// MachinePID and VCPU are valid when the record has the second array
	// (guest machines, perf ≥ 6.2); otherwise zero.
	MachinePID, VCPU uint64
}

// IDIndex is PERF_RECORD_ID_INDEX (69).
type IDIndex struct {
	RecordHeader
	Entries []IDIndexEntry
}

// AuxtraceInfo is PERF_RECORD_AUXTRACE_INFO (70).
type AuxtraceInfo struct {
	RecordHeader
	AuxType uint32
	Priv    []uint64
}

// Auxtrace is PERF_RECORD_AUXTRACE (71). Its DataSize bytes of AUX data
// follow the record in the input at DataOffset (outside Size; for a record
// from a compressed stream the offset is not meaningful); the reader skips
// them.
type Auxtrace struct {
	RecordHeader
	DataSize   uint64
	AuxOffset  uint64
	Reference  uint64
	Idx        uint32
	TID        uint32
	CPU        uint32
	DataOffset int64
}

// AuxtraceError is PERF_RECORD_AUXTRACE_ERROR (72).
type AuxtraceError struct {
	RecordHeader
	ErrType, Code, CPU, PID, TID uint32
	Fmt                          uint32
	IP                           uint64
	Time                         uint64 // Fmt >= 1
	Msg                          string
	MachinePID, VCPU             uint32 // Fmt >= 2
}

// ThreadMapEntry is one thread of a THREAD_MAP record.
type ThreadMapEntry struct {
	PID  uint64
	Comm string
}

// ThreadMap is PERF_RECORD_THREAD_MAP (73).
type ThreadMap struct {
	RecordHeader
	Entries []ThreadMapEntry
}

// CPUMap is PERF_RECORD_CPU_MAP (74), decoded to a list of CPU numbers.
// AnyCPU is set for a RANGE_CPUS map with any_cpu (the "-1" dummy CPU).
type CPUMap struct {
	RecordHeader
	CPUs   []uint32
	AnyCPU bool
}

// StatConfigEntry is one {tag, value} of a STAT_CONFIG record.
type StatConfigEntry struct{ Tag, Val uint64 }

// StatConfig is PERF_RECORD_STAT_CONFIG (75).
type StatConfig struct {
	RecordHeader
	Entries []StatConfigEntry
}

// Stat is PERF_RECORD_STAT (76).
type Stat struct {
	RecordHeader
	ID            uint64
	CPU, Thread   uint32
	Val, Ena, Run uint64
}

// StatRound is PERF_RECORD_STAT_ROUND (77).
type StatRound struct {
	RecordHeader
	RoundType uint64
	Time      uint64
}

// Event update kinds (EventUpdate.UpdateType).
const (
	EventUpdateUnit  = 0
	EventUpdateScale = 1
	EventUpdateName  = 2
	EventUpdateCPUs  = 3
)

// EventUpdate is PERF_RECORD_EVENT_UPDATE (78). Only the field for
// UpdateType is valid. A NAME update renames the event with that ID.
type EventUpdate struct {
	RecordHeader
	UpdateType uint64
	ID         uint64
	Unit       string   // EventUpdateUnit
	Scale      float64  // EventUpdateScale
	Name       string   // EventUpdateName
	CPUs       []uint32 // EventUpdateCPUs
}

// TimeConv is PERF_RECORD_TIME_CONV (79): TSC to perf time conversion.
type TimeConv struct {
	RecordHeader
	TimeShift, TimeMult, TimeZero uint64
	// The rest is valid when Extended (perf ≥ 5.10).
	Extended         bool
	TimeCycles       uint64
	TimeMask         uint64
	CapUserTimeZero  bool
	CapUserTimeShort bool
}

// HeaderFeature is PERF_RECORD_HEADER_FEATURE (80), the pipe-mode form of a
// feature section. Data aliases the read buffer; the decoded features are
// available from Reader.Features (or File.Features).
type HeaderFeature struct {
	RecordHeader
	FeatureID uint64
	Data      []byte
}

// Compressed is PERF_RECORD_COMPRESSED (81) or COMPRESSED2 (83). The
// records it holds follow it, each with Compressed set and this record's
// Offset.
type Compressed struct {
	RecordHeader
	DataSize int // bytes of zstd data
}

// FinishedInit is PERF_RECORD_FINISHED_INIT (82): the end of the synthesized
// records that describe the system state before recording started.
type FinishedInit struct{ RecordHeader }

// Unknown is a record whose type this package does not decode (including
// BPF_METADATA and SCHEDSTAT records). Data is the whole record, header
// included, and aliases the read buffer.
type Unknown struct {
	RecordHeader
	Data []byte
}
