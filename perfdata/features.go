package perfdata

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
)

// Features holds a recording's header features. In file mode it keeps the
// section table and reads a section only when an accessor first needs it;
// in pipe mode it keeps copies of the HEADER_FEATURE payloads. Each typed
// accessor decodes its section once, caches the result and returns the
// same value and error on later calls; a section that does not parse is an
// error, never a zero value. Accessors of absent features return
// ErrNoFeature (wrapped). A Features is safe for concurrent use; the
// slices its accessors return are shared by all callers and must not be
// modified (BuildIDs and Raw return copies).
type Features struct {
	order    binary.ByteOrder
	r        io.ReaderAt // file mode; nil in pipe mode
	fileSize int64       // file mode: bound for sections; < 0 if unknown
	name     string      // file name for errors, if known

	mu       sync.Mutex
	secs     []featureSection // file mode, ascending ID
	pipe     map[Feature]pipeFeature
	buildIDs []BuildIDEntry // from HEADER_BUILD_ID records (addBuildID)
	slots    map[Feature]*featureSlot
	// recordTracing is, in file mode, the payload of the TRACING_DATA
	// record that starts the data section of a file without the
	// TRACING_DATA feature: simpleperf writes its tracing data so. It is
	// read as that feature's, though Has and IDs do not list it.
	recordTracing *pipeFeature
}

// pipeFeature is a HEADER_FEATURE payload and its stream offset.
type pipeFeature struct {
	data []byte
	base int64
}

// featureSlot caches one decoded feature.
type featureSlot struct {
	once sync.Once
	v    any
	err  error
}

// maxFeatureSection bounds what one section may claim when the file size is
// unknown; known file sizes bound it more tightly.
const maxFeatureSection = 1 << 30

// newFileFeatures returns the features of a file-mode recording whose
// section table secs the caller has read. Offsets and sizes are checked
// against fileSize when a section is first read.
func newFileFeatures(r io.ReaderAt, fileSize int64, order binary.ByteOrder, secs []featureSection) *Features {
	s := slices.Clone(secs)
	slices.SortStableFunc(s, func(a, b featureSection) int { return int(a.ID) - int(b.ID) })
	return &Features{order: order, r: r, fileSize: fileSize, secs: s, slots: map[Feature]*featureSlot{}}
}

// newPipeFeatures returns an empty feature set for a pipe-mode stream, to be
// filled by addPipe and addBuildID as the header records arrive.
func newPipeFeatures(order binary.ByteOrder) *Features {
	return &Features{order: order, fileSize: -1, pipe: map[Feature]pipeFeature{}, slots: map[Feature]*featureSlot{}}
}

// setName sets the file name that errors carry.
func (fs *Features) setName(name string) { fs.name = name }

// addPipe records a HEADER_FEATURE payload; base is the stream offset of
// payload[0]. The payload is copied. A later record for the same feature
// replaces the earlier one, as perf's processing overwrites its env.
//
// A payload-less record whose id is CPU_DOMAIN_INFO or higher is the end
// marker perf >= 6.5 writes with its own HEADER_LAST_FEATURE (32 for perf
// 6.5 to 6.16, 33 since): it is not a feature and is dropped. No feature
// perf synthesizes in pipe mode has an empty payload.
func (fs *Features) addPipe(id Feature, payload []byte, base int64) {
	if len(payload) == 0 && id >= FeatureCPUDomainInfo {
		return
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.pipe == nil {
		fs.pipe = map[Feature]pipeFeature{}
	}
	data := make([]byte, len(payload))
	copy(data, payload)
	fs.pipe[id] = pipeFeature{data: data, base: base}
	delete(fs.slots, id) // a replaced payload decodes afresh
}

// addBuildID records a HEADER_BUILD_ID (67) record's entry. Its BuildID
// must not alias a reused buffer (decodeBuildIDEvent copies it).
func (fs *Features) addBuildID(e BuildIDEntry) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.buildIDs = append(fs.buildIDs, e)
	delete(fs.slots, FeatureBuildID)
}

// Has reports whether the recording carries feature f (a bit of the
// file's feature bitmap; in pipe mode a HEADER_FEATURE record, or for
// BUILD_ID at least one HEADER_BUILD_ID record).
func (fs *Features) Has(f Feature) bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.hasLocked(f)
}

func (fs *Features) hasLocked(f Feature) bool {
	if f == FeatureBuildID && len(fs.buildIDs) > 0 {
		return true
	}
	if fs.r != nil {
		_, ok := fs.sectionLocked(f)
		return ok
	}
	if f == FeatureBuildID && len(fs.buildIDs) > 0 {
		return true
	}
	_, ok := fs.pipe[f]
	return ok
}

func (fs *Features) sectionLocked(f Feature) (featureSection, bool) {
	i, ok := slices.BinarySearchFunc(fs.secs, f, func(s featureSection, f Feature) int { return int(s.ID) - int(f) })
	if !ok {
		return featureSection{}, false
	}
	return fs.secs[i], true
}

// IDs returns the features present, in ascending order.
func (fs *Features) IDs() []Feature {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	var out []Feature
	for _, s := range fs.secs {
		out = append(out, s.ID)
	}
	for id := range fs.pipe {
		out = append(out, id)
	}
	if len(fs.buildIDs) > 0 && !slices.Contains(out, FeatureBuildID) {
		out = append(out, FeatureBuildID)
	}
	slices.Sort(out)
	return out
}

// Raw returns a copy of feature f's payload as stored, in the file's byte
// order. It is how callers reach the features this package keeps raw
// (TRACING_DATA, BPF_PROG_INFO, BPF_BTF, CPU_DOMAIN_INFO).
func (fs *Features) Raw(f Feature) ([]byte, error) {
	b, _, err := fs.raw(f)
	return b, err
}

// raw returns f's payload and the absolute offset of its first byte.
func (fs *Features) raw(f Feature) ([]byte, int64, error) {
	fs.mu.Lock()
	if fs.r == nil {
		p, ok := fs.pipe[f]
		fs.mu.Unlock()
		if !ok {
			return nil, 0, fmt.Errorf("%w: %v", ErrNoFeature, f)
		}
		return slices.Clone(p.data), p.base, nil
	}
	s, ok := fs.sectionLocked(f)
	rt := fs.recordTracing
	fs.mu.Unlock()
	if !ok && f == FeatureTracingData && rt != nil {
		return slices.Clone(rt.data), rt.base, nil
	}
	if !ok {
		return nil, 0, fmt.Errorf("%w: %v", ErrNoFeature, f)
	}
	b, err := fs.readSection(s)
	return b, s.Offset, err
}

// readSection reads a file-mode section after checking it lies inside the
// file. The read is chunked (as Go's internal/saferio) so that a section
// claiming more than the reader really holds fails before its whole size
// is allocated.
func (fs *Features) readSection(s featureSection) ([]byte, error) {
	limit := fs.fileSize
	if limit < 0 {
		limit = maxFeatureSection
	}
	if s.Offset < 0 || s.Size < 0 || s.Offset > limit || s.Size > limit-s.Offset {
		what := fmt.Sprintf("the file (%d bytes)", fs.fileSize)
		if fs.fileSize < 0 {
			what = fmt.Sprintf("the %d bytes a section may have", limit)
		}
		return nil, fs.errorf(s.Offset, io.ErrUnexpectedEOF,
			"%v feature section [offset %d, size %d] lies outside %s", s.ID, s.Offset, s.Size, what)
	}
	const chunk = 1 << 20
	var buf []byte
	for got := int64(0); got < s.Size; {
		n := min(s.Size-got, chunk)
		buf = slices.Grow(buf, int(n))
		k, err := fs.r.ReadAt(buf[got:got+n], s.Offset+got)
		buf = buf[:got+int64(k)]
		got += int64(k)
		if int64(k) < n {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, fs.errorf(s.Offset+got, err, "reading %v feature section [offset %d, size %d]", s.ID, s.Offset, s.Size)
		}
	}
	if buf == nil {
		buf = []byte{}
	}
	return buf, nil
}

func (fs *Features) errorf(off int64, cause error, format string, args ...any) error {
	return &FormatError{File: fs.name, Offset: off, Msg: fmt.Sprintf(format, args...), Err: cause}
}

// decoded runs decode on f's payload once and caches its result.
func (fs *Features) decoded(f Feature, decode func(d *decoder) any) (any, error) {
	fs.mu.Lock()
	sl := fs.slots[f]
	if sl == nil {
		sl = &featureSlot{}
		fs.slots[f] = sl
	}
	fs.mu.Unlock()
	sl.once.Do(func() {
		b, base, err := fs.raw(f)
		if err != nil {
			sl.err = err
			return
		}
		d := newDecoder(b, base, fs.order, f.String()+" feature")
		v := decode(&d)
		if d.err != nil {
			if fe, ok := d.err.(*FormatError); ok && fe.File == "" {
				fe.File = fs.name
			}
			sl.err = d.err
			return
		}
		sl.v = v
	})
	return sl.v, sl.err
}

// get decodes f with decode and asserts the cached value's type.
func get[T any](fs *Features, f Feature, decode func(d *decoder) T) (T, error) {
	v, err := fs.decoded(f, func(d *decoder) any { return decode(d) })
	if err != nil {
		var zero T
		return zero, err
	}
	return v.(T), nil
}

// decodeString decodes a feature that is one perf_header_string.
func decodeString(d *decoder) string { return d.headerString() }

// BuildIDs returns the build-id table: the BUILD_ID feature's entries in
// file order, then those of any HEADER_BUILD_ID records (pipe mode, or
// perf inject output), in stream order.
func (fs *Features) BuildIDs() ([]BuildIDEntry, error) {
	fs.mu.Lock()
	extra := slices.Clone(fs.buildIDs)
	_, has := fs.sectionLocked(FeatureBuildID)
	if !has {
		_, has = fs.pipe[FeatureBuildID]
	}
	fs.mu.Unlock()
	var out []BuildIDEntry
	if has {
		v, err := fs.decoded(FeatureBuildID, func(d *decoder) any {
			es, err := decodeBuildIDTable(d.b, d.base, d.order)
			if err != nil {
				d.err = err
			}
			d.off = len(d.b)
			return es
		})
		if err != nil && !(errors.Is(err, ErrNoFeature) && len(extra) > 0) {
			return nil, err
		}
		if v != nil {
			out = slices.Clone(v.([]BuildIDEntry))
		}
	} else if len(extra) == 0 {
		return nil, fmt.Errorf("%w: %v", ErrNoFeature, FeatureBuildID)
	}
	return append(out, extra...), nil
}

// Hostname returns HOSTNAME (uname -n of the recording machine).
func (fs *Features) Hostname() (string, error) { return get(fs, FeatureHostname, decodeString) }

// OSRelease returns OSRELEASE (uname -r: the kernel release).
func (fs *Features) OSRelease() (string, error) { return get(fs, FeatureOSRelease, decodeString) }

// Version returns VERSION (the version of the perf that recorded).
func (fs *Features) Version() (string, error) { return get(fs, FeatureVersion, decodeString) }

// Arch returns ARCH (uname -m).
func (fs *Features) Arch() (string, error) { return get(fs, FeatureArch, decodeString) }

// CPUDesc returns CPUDESC (for example the x86 model name).
func (fs *Features) CPUDesc() (string, error) { return get(fs, FeatureCPUDesc, decodeString) }

// CPUID returns CPUID (for example "GenuineIntel,6,85,7").
func (fs *Features) CPUID() (string, error) { return get(fs, FeatureCPUID, decodeString) }

// NrCPUs returns NRCPUS: the CPUs available (the highest possible CPU
// number plus one) and those online when recording. The avail count comes
// first in the section (write_nrcpus in header.c).
func (fs *Features) NrCPUs() (avail, online int, err error) {
	v, err := get(fs, FeatureNrCPUs, func(d *decoder) [2]uint32 {
		return [2]uint32{d.u32(), d.u32()}
	})
	return int(v[0]), int(v[1]), err
}

// TotalMem returns TOTAL_MEM, the machine's MemTotal in kB.
func (fs *Features) TotalMem() (uint64, error) {
	return get(fs, FeatureTotalMem, func(d *decoder) uint64 { return d.u64() })
}

// CmdLine returns CMDLINE: the perf binary's path, then its arguments.
func (fs *Features) CmdLine() ([]string, error) {
	return get(fs, FeatureCmdLine, func(d *decoder) []string { return d.headerStringList() })
}

// EventDesc is one entry of EVENT_DESC: an event's attr, its name and the
// sample ids that belong to it.
type EventDesc struct {
	Attr Attr
	Name string
	IDs  []uint64
}

// EventDesc returns EVENT_DESC (read_event_desc in header.c).
func (fs *Features) EventDesc() ([]EventDesc, error) {
	return get(fs, FeatureEventDesc, func(d *decoder) []EventDesc {
		nr := d.u32()
		sz := d.u32()
		if d.err != nil {
			return nil
		}
		if sz < attrSizeVer0 {
			d.off -= 4
			d.fail(nil, "attr size %d is smaller than %d", sz, attrSizeVer0)
			return nil
		}
		// Each entry holds an attr, a u32 count and a string length.
		if int64(nr) > int64(d.remaining())/(int64(sz)+8) {
			d.off -= 8
			d.fail(io.ErrUnexpectedEOF, "%d events of %d bytes each cannot fit in %d bytes", nr, sz, d.remaining())
			return nil
		}
		out := make([]EventDesc, 0, nr)
		for i := uint32(0); i < nr && d.err == nil; i++ {
			var e EventDesc
			ab := d.bytes(int(sz))
			if d.err != nil {
				break
			}
			e.Attr = decodeAttr(ab, d.order)
			nids := d.u32()
			e.Name = d.headerString()
			if d.err != nil {
				break
			}
			if int64(nids) > int64(d.remaining()/8) {
				d.fail(io.ErrUnexpectedEOF, "event %q: %d ids cannot fit in %d bytes", e.Name, nids, d.remaining())
				break
			}
			e.IDs = make([]uint64, nids)
			for j := range e.IDs {
				e.IDs[j] = d.u64()
			}
			out = append(out, e)
		}
		return out
	})
}

// CPUTopology is CPU_TOPOLOGY (process_cpu_topology in header.c).
type CPUTopology struct {
	// CoreSiblings are the package (socket) CPU lists, e.g. "0-7".
	CoreSiblings []string
	// ThreadSiblings are the core CPU lists (SMT siblings).
	ThreadSiblings []string
	// CPUs has one entry per available CPU (NRCPUS) when the section
	// carries core and socket ids (perf >= 4.1); nil otherwise.
	CPUs []CPUTopologyEntry
	// DieSiblings are the die CPU lists (perf >= 5.3); nil otherwise.
	DieSiblings []string
}

// CPUTopologyEntry is one CPU's place in the topology. DieID is -1 when
// the section has no die ids.
type CPUTopologyEntry struct {
	CoreID, SocketID, DieID int32
}

// CPUTopology returns CPU_TOPOLOGY. Its per-CPU part needs NRCPUS, which
// is decoded first (features depend on earlier ones in bit order).
func (fs *Features) CPUTopology() (*CPUTopology, error) {
	avail, _, nerr := fs.NrCPUs()
	return get(fs, FeatureCPUTopology, func(d *decoder) *CPUTopology {
		t := &CPUTopology{}
		t.CoreSiblings = d.headerStringList()
		t.ThreadSiblings = d.headerStringList()
		if d.err != nil || d.remaining() == 0 {
			return t
		}
		// The optional parts follow only if the section is large
		// enough, which perf judges from the section size.
		if nerr != nil {
			d.fail(nerr, "per-CPU topology needs NRCPUS")
			return nil
		}
		if int64(avail) > int64(d.remaining()/8) {
			d.fail(io.ErrUnexpectedEOF, "%d CPUs' core and socket ids cannot fit in %d bytes", avail, d.remaining())
			return nil
		}
		t.CPUs = make([]CPUTopologyEntry, avail)
		for i := range t.CPUs {
			t.CPUs[i] = CPUTopologyEntry{CoreID: int32(d.u32()), SocketID: int32(d.u32()), DieID: -1}
		}
		if d.err != nil || d.remaining() == 0 {
			return t
		}
		t.DieSiblings = d.headerStringList()
		if d.err != nil {
			return nil
		}
		if int64(avail) > int64(d.remaining()/4) {
			d.fail(io.ErrUnexpectedEOF, "%d CPUs' die ids cannot fit in %d bytes", avail, d.remaining())
			return nil
		}
		for i := range t.CPUs {
			t.CPUs[i].DieID = int32(d.u32())
		}
		return t
	})
}

// NUMANode is one entry of NUMA_TOPOLOGY. Memory figures are in kB.
type NUMANode struct {
	Node     uint32
	MemTotal uint64
	MemFree  uint64
	CPUs     string // a CPU list such as "0-3,8-11"
}

// NUMATopology returns NUMA_TOPOLOGY.
func (fs *Features) NUMATopology() ([]NUMANode, error) {
	return get(fs, FeatureNUMATopology, func(d *decoder) []NUMANode {
		nr := d.u32()
		if !d.fitCount(nr, 24, "NUMA nodes") {
			return nil
		}
		out := make([]NUMANode, 0, nr)
		for i := uint32(0); i < nr && d.err == nil; i++ {
			out = append(out, NUMANode{Node: d.u32(), MemTotal: d.u64(), MemFree: d.u64(), CPUs: d.headerString()})
		}
		return out
	})
}

// BranchStack reports the BRANCH_STACK flag feature (samples have branch
// stacks).
func (fs *Features) BranchStack() bool { return fs.Has(FeatureBranchStack) }

// Stat reports the STAT flag feature (the file was written by perf stat
// record).
func (fs *Features) Stat() bool { return fs.Has(FeatureStat) }

// PMUMapping names a dynamic PMU type number.
type PMUMapping struct {
	Type uint32
	Name string
}

// PMUMappings returns PMU_MAPPINGS.
func (fs *Features) PMUMappings() ([]PMUMapping, error) {
	return get(fs, FeaturePMUMappings, func(d *decoder) []PMUMapping {
		nr := d.u32()
		if !d.fitCount(nr, 8, "PMU mappings") {
			return nil
		}
		out := make([]PMUMapping, 0, nr)
		for i := uint32(0); i < nr && d.err == nil; i++ {
			out = append(out, PMUMapping{Type: d.u32(), Name: d.headerString()})
		}
		return out
	})
}

// GroupDesc is one event group of GROUP_DESC. Leader is the index of the
// group leader's attr (its evsel index).
type GroupDesc struct {
	Name      string // "{anon_group}" when unnamed
	Leader    uint32
	NrMembers uint32
}

// GroupDesc returns GROUP_DESC.
func (fs *Features) GroupDesc() ([]GroupDesc, error) {
	return get(fs, FeatureGroupDesc, func(d *decoder) []GroupDesc {
		nr := d.u32()
		if !d.fitCount(nr, 12, "groups") {
			return nil
		}
		out := make([]GroupDesc, 0, nr)
		for i := uint32(0); i < nr && d.err == nil; i++ {
			out = append(out, GroupDesc{Name: d.headerString(), Leader: d.u32(), NrMembers: d.u32()})
		}
		return out
	})
}

// AuxtraceIndexEntry locates one AUXTRACE record in the file.
type AuxtraceIndexEntry struct {
	Offset uint64
	Size   uint64
}

// AuxtraceIndex returns the AUXTRACE feature: perf's index of AUXTRACE
// records (auxtrace_index__process in tools/perf/util/auxtrace.c).
func (fs *Features) AuxtraceIndex() ([]AuxtraceIndexEntry, error) {
	return get(fs, FeatureAuxtrace, func(d *decoder) []AuxtraceIndexEntry {
		nr := d.u64()
		if d.err != nil {
			return nil
		}
		if nr > uint64(d.remaining()/16) {
			d.off -= 8
			d.fail(io.ErrUnexpectedEOF, "%d auxtrace index entries cannot fit in %d bytes", nr, d.remaining())
			return nil
		}
		out := make([]AuxtraceIndexEntry, nr)
		for i := range out {
			out[i] = AuxtraceIndexEntry{Offset: d.u64(), Size: d.u64()}
		}
		return out
	})
}

// CacheLevel is one CPU cache of the CACHE feature.
type CacheLevel struct {
	Level, LineSize, Sets, Ways uint32
	Type                        string // "Data", "Instruction", "Unified"
	Size                        string // e.g. "32K"
	Map                         string // shared_cpu_list, e.g. "0,4"
}

// Cache returns CACHE (version 1 only, as perf).
func (fs *Features) Cache() ([]CacheLevel, error) {
	return get(fs, FeatureCache, func(d *decoder) []CacheLevel {
		ver := d.u32()
		if d.err == nil && ver != 1 {
			d.off -= 4
			d.fail(nil, "unsupported cache feature version %d", ver)
			return nil
		}
		nr := d.u32()
		if !d.fitCount(nr, 28, "caches") {
			return nil
		}
		out := make([]CacheLevel, 0, nr)
		for i := uint32(0); i < nr && d.err == nil; i++ {
			out = append(out, CacheLevel{Level: d.u32(), LineSize: d.u32(), Sets: d.u32(), Ways: d.u32(),
				Type: d.headerString(), Size: d.headerString(), Map: d.headerString()})
		}
		return out
	})
}

// SampleTime returns SAMPLE_TIME: the first and last sample times, in the
// recording's perf clock (ns).
func (fs *Features) SampleTime() (first, last uint64, err error) {
	v, err := get(fs, FeatureSampleTime, func(d *decoder) [2]uint64 { return [2]uint64{d.u64(), d.u64()} })
	return v[0], v[1], err
}

// MemTopology is MEM_TOPOLOGY: memory blocks per NUMA node.
type MemTopology struct {
	Version   uint64
	BlockSize uint64 // bytes per memory block
	Nodes     []MemNode
}

// MemNode is one node of MEM_TOPOLOGY. Blocks is a bitmap of the memory
// blocks the node holds (bit i of word i/64), Size bits long.
type MemNode struct {
	Node   uint64
	Size   uint64
	Blocks []uint64
}

// MemTopology returns MEM_TOPOLOGY (process_mem_topology and
// do_read_bitmap in header.c).
func (fs *Features) MemTopology() (*MemTopology, error) {
	return get(fs, FeatureMemTopology, func(d *decoder) *MemTopology {
		m := &MemTopology{Version: d.u64(), BlockSize: d.u64()}
		if d.err == nil && m.Version != 1 {
			d.off -= 16
			d.fail(nil, "unsupported memory topology version %d", m.Version)
			return nil
		}
		nr := d.u64()
		if d.err != nil {
			return nil
		}
		if nr > uint64(d.remaining()/24) {
			d.off -= 8
			d.fail(io.ErrUnexpectedEOF, "%d memory nodes cannot fit in %d bytes", nr, d.remaining())
			return nil
		}
		m.Nodes = make([]MemNode, 0, nr)
		for i := uint64(0); i < nr && d.err == nil; i++ {
			n := MemNode{Node: d.u64(), Size: d.u64()}
			nbits := d.u64()
			if d.err != nil {
				break
			}
			words := nbits/64 + min(nbits%64, 1)
			if words > uint64(d.remaining()/8) {
				d.off -= 8
				d.fail(io.ErrUnexpectedEOF, "a bitmap of %d bits cannot fit in %d bytes", nbits, d.remaining())
				break
			}
			n.Blocks = make([]uint64, words)
			for j := range n.Blocks {
				n.Blocks[j] = d.u64()
			}
			m.Nodes = append(m.Nodes, n)
		}
		return m
	})
}

// ClockID returns CLOCKID: the resolution in ns of the clock the samples
// were timed with (perf record -k).
func (fs *Features) ClockID() (uint64, error) {
	return get(fs, FeatureClockID, func(d *decoder) uint64 { return d.u64() })
}

// DirFormat returns DIR_FORMAT's version: 1 means the recording is a
// directory with data.N files beside data.
func (fs *Features) DirFormat() (uint64, error) {
	return get(fs, FeatureDirFormat, func(d *decoder) uint64 { return d.u64() })
}

// Compression is the COMPRESSED feature.
type Compression struct {
	Version uint32
	Type    uint32 // 1: zstd (PERF_COMP_ZSTD)
	Level   uint32
	Ratio   uint32 // informational
	MmapLen uint32 // decompression buffer size perf uses
}

// Compressed returns COMPRESSED: the data section holds COMPRESSED or
// COMPRESSED2 records.
func (fs *Features) Compressed() (Compression, error) {
	return get(fs, FeatureCompressed, func(d *decoder) Compression {
		return Compression{Version: d.u32(), Type: d.u32(), Level: d.u32(), Ratio: d.u32(), MmapLen: d.u32()}
	})
}

// PMUCap is one capability of a PMU, as read from
// /sys/bus/event_source/devices/PMU/caps/NAME.
type PMUCap struct {
	Name, Value string
}

func decodeCaps(d *decoder) []PMUCap {
	nr := d.u32()
	if !d.fitCount(nr, 8, "PMU capabilities") {
		return nil
	}
	out := make([]PMUCap, 0, nr)
	for i := uint32(0); i < nr && d.err == nil; i++ {
		out = append(out, PMUCap{Name: d.headerString(), Value: d.headerString()})
	}
	return out
}

// CPUPMUCaps returns CPU_PMU_CAPS, the core PMU's capabilities.
func (fs *Features) CPUPMUCaps() ([]PMUCap, error) {
	return get(fs, FeatureCPUPMUCaps, decodeCaps)
}

// ClockData is CLOCK_DATA: a pair of readings of the sampling clock and
// of the wall clock taken together, to convert sample times to wall time.
type ClockData struct {
	Version     uint32
	ClockID     uint32
	WallClockNS uint64 // CLOCK_REALTIME
	ClockIDNS   uint64 // the sampling clock at the same instant
}

// ClockData returns CLOCK_DATA (version 1 only, as perf).
func (fs *Features) ClockData() (ClockData, error) {
	return get(fs, FeatureClockData, func(d *decoder) ClockData {
		c := ClockData{Version: d.u32()}
		if d.err == nil && c.Version != 1 {
			d.off -= 4
			d.fail(nil, "unsupported clock data version %d", c.Version)
			return ClockData{}
		}
		c.ClockID = d.u32()
		c.WallClockNS = d.u64()
		c.ClockIDNS = d.u64()
		return c
	})
}

// HybridNode is one PMU of HYBRID_TOPOLOGY and the CPUs it covers.
type HybridNode struct {
	PMUName string
	CPUs    string
}

// HybridTopology returns HYBRID_TOPOLOGY.
func (fs *Features) HybridTopology() ([]HybridNode, error) {
	return get(fs, FeatureHybridTopology, func(d *decoder) []HybridNode {
		nr := d.u32()
		if !d.fitCount(nr, 8, "hybrid PMUs") {
			return nil
		}
		out := make([]HybridNode, 0, nr)
		for i := uint32(0); i < nr && d.err == nil; i++ {
			out = append(out, HybridNode{PMUName: d.headerString(), CPUs: d.headerString()})
		}
		return out
	})
}

// PMUCaps is one PMU's capabilities in the PMU_CAPS feature.
type PMUCaps struct {
	PMU  string
	Caps []PMUCap
}

// PMUCaps returns PMU_CAPS: the capabilities of every PMU but "cpu"
// (process_pmu_caps in header.c; the name follows the caps).
func (fs *Features) PMUCaps() ([]PMUCaps, error) {
	return get(fs, FeaturePMUCaps, func(d *decoder) []PMUCaps {
		nr := d.u32()
		if !d.fitCount(nr, 8, "PMUs") {
			return nil
		}
		out := make([]PMUCaps, 0, nr)
		for i := uint32(0); i < nr && d.err == nil; i++ {
			caps := decodeCaps(d)
			out = append(out, PMUCaps{Caps: caps, PMU: d.headerString()})
		}
		return out
	})
}

// DerivedName returns the name perf gives an event from its attr alone
// (evsel__name in tools/perf/util/evsel.c: "cycles:uH", "cpu-clock",
// "raw 0x1cd:pp"), ignoring any name the recording carries. perf 6.1's
// perf report uses it for pipe-mode recordings even when EVENT_DESC and
// EVENT_UPDATE name the events (checked with perf 6.1: a pipe recording
// of -e cpu-clock:u reports "cpu-clock:uH stats:"), so tools that must
// print what perf prints need it; Event.Name is the recorded name.
func (a *Attr) DerivedName() string { return defaultEventName(a) }
