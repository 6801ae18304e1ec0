package perfdata

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"sync"
)

// Magic numbers (check_magic_endian in tools/perf/util/header.c).
var (
	magicLE = []byte("PERFILE2")
	magicBE = []byte("2ELIFREP")
	magicV1 = []byte("PERFFILE")
)

const (
	pipeHeaderSize     = 16
	fileHeaderSize     = 104
	fileHeaderSizeNoFB = 72 // old files without the feature bitmap
	// maxEvents bounds the number of attrs a header may declare beyond
	// what the file size already bounds.
	maxEvents = 1 << 16
)

// The package's sentinel errors, wrapped (in a *FormatError with the file
// and offset, or with %w) by every call that returns them: test with
// errors.Is.
var (
	// ErrNotPerfData is the cause of the error for input that does not
	// start with a perf.data magic number.
	ErrNotPerfData = errors.New("not a perf.data file")

	// ErrMalformed is the cause of a FormatError for input that is not
	// cut short but impossible: sizes or counts that do not fit, unknown
	// sample_type bits, a version-1 header whose attr size perf would
	// not accept. (Truncation is
	// io.ErrUnexpectedEOF instead.)
	ErrMalformed = errors.New("malformed perf.data")

	// ErrNoFeature is returned (wrapped) by a Features accessor whose
	// feature the recording does not carry.
	ErrNoFeature = errors.New("feature not present")
)

// File is a perf.data recording read from a seekable input: a file in file
// or pipe format, or the perf.data directory form. Its header, attrs and
// the feature table are read by Open/NewFile; records are streamed by
// Records and feature sections are decoded on first use (Features).
type File struct {
	name   string
	r      io.ReaderAt
	size   int64
	closer []io.Closer
	order  binary.ByteOrder
	pipe   bool // pipe format (perf record -o FILE with a pipe header)

	events   eventSet
	features *Features
	featOnce sync.Once

	dataOff, dataSize int64
	truncated         bool
	parts             []filePart // data.N files of the directory form

	mu       sync.Mutex
	warnings []string
}

// filePart is one data.N file of a perf.data directory.
type filePart struct {
	name string
	r    io.ReaderAt
	size int64
}

// Open opens the named perf.data: a regular file in file or pipe format,
// or a perf.data directory (perf record --threads writes data plus
// data.N).
func Open(name string) (*File, error) {
	fi, err := os.Stat(name)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return openDir(name)
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	pf, err := newFile(f, fi.Size(), name)
	if err != nil {
		f.Close()
		return nil, err
	}
	pf.closer = append(pf.closer, f)
	return pf, nil
}

// NewFile reads the perf.data header from r, which holds size bytes.
func NewFile(r io.ReaderAt, size int64) (*File, error) {
	return newFile(r, size, "")
}

// Close closes the files Open opened; it does nothing for NewFile.
func (f *File) Close() error {
	var first error
	for _, c := range f.closer {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	f.closer = nil
	return first
}

func (f *File) errorf(off int64, cause error, format string, args ...any) error {
	return &FormatError{File: f.name, Offset: off, Msg: fmt.Sprintf(format, args...), Err: cause}
}

func (f *File) warn(msg string) {
	f.mu.Lock()
	f.warnings = append(f.warnings, msg)
	f.mu.Unlock()
}

// readAt reads exactly len(b) bytes at off or returns a FormatError.
func (f *File) readAt(b []byte, off int64, what string) error {
	if off < 0 || off > f.size || int64(len(b)) > f.size-off {
		return f.errorf(off, io.ErrUnexpectedEOF, "%s [offset %d, size %d] lies outside the file (%d bytes)", what, off, len(b), f.size)
	}
	n, err := f.r.ReadAt(b, off)
	if n < len(b) {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return f.errorf(off+int64(n), err, "reading %s", what)
	}
	return nil
}

// byteOrder checks the magic and returns the file's byte order.
func byteOrder(magic []byte) (binary.ByteOrder, error) {
	switch {
	case bytes.Equal(magic, magicLE):
		return binary.LittleEndian, nil
	case bytes.Equal(magic, magicBE):
		return binary.BigEndian, nil
	}
	return nil, ErrNotPerfData
}

// attrABISizes are the attr sizes a version-1 file may have
// (attr_file_abi_sizes in tools/perf/util/header.c: PERF_ATTR_SIZE_VER0
// to VER4).
var attrABISizes = [...]uint64{64, 72, 80, 96, 104}

// v1ByteOrder finds the byte order of a version-1 file ("PERFFILE", one
// magic for both orders) from its header's attr_size, which is one of
// attrABISizes plus the 16-byte ids section, as try_all_file_abis in
// header.c does. The rest of the file is laid out as version 2.
func v1ByteOrder(attrSize []byte) binary.ByteOrder {
	le, be := binary.LittleEndian.Uint64(attrSize), binary.BigEndian.Uint64(attrSize)
	for _, s := range attrABISizes {
		switch s + 16 {
		case le:
			return binary.LittleEndian
		case be:
			return binary.BigEndian
		}
	}
	return nil
}

func newFile(r io.ReaderAt, size int64, name string) (*File, error) {
	f := &File{name: name, r: r, size: size}
	var hdr [fileHeaderSize]byte
	if size < pipeHeaderSize {
		return nil, f.errorf(0, io.ErrUnexpectedEOF, "file of %d bytes is too short for a perf.data header", size)
	}
	if err := f.readAt(hdr[:pipeHeaderSize], 0, "header"); err != nil {
		return nil, err
	}
	order, err := byteOrder(hdr[:8])
	if bytes.Equal(hdr[:8], magicV1) {
		if size < 24 {
			return nil, f.errorf(0, io.ErrUnexpectedEOF, "version-1 file of %d bytes is too short for its header", size)
		}
		if err := f.readAt(hdr[:24], 0, "header"); err != nil {
			return nil, err
		}
		if order = v1ByteOrder(hdr[16:24]); order == nil {
			return nil, f.errorf(16, ErrMalformed, "version-1 header: attr size %#x is none perf knows, in either byte order", hdr[16:24])
		}
		err = nil
	}
	if err != nil {
		return nil, f.errorf(0, ErrNotPerfData, "bad magic %q", hdr[:8])
	}
	f.order = order
	hsize := order.Uint64(hdr[8:])
	// perf tries the pipe header first, even on regular files
	// (perf_file_header__read_pipe).
	if hsize == pipeHeaderSize {
		f.pipe = true
		return f, f.scanPipeHeader()
	}
	if hsize != fileHeaderSize && hsize != fileHeaderSizeNoFB {
		return nil, f.errorf(8, ErrMalformed, "header size %d is neither %d nor %d", hsize, fileHeaderSize, fileHeaderSizeNoFB)
	}
	if err := f.readAt(hdr[:hsize], 0, "header"); err != nil {
		return nil, err
	}
	attrSize := order.Uint64(hdr[16:])
	attrsOff, attrsSize := int64(order.Uint64(hdr[24:])), int64(order.Uint64(hdr[32:]))
	f.dataOff, f.dataSize = int64(order.Uint64(hdr[40:])), int64(order.Uint64(hdr[48:]))

	// perf's sanity checks (perf_file_header__read, perf_session__open).
	if attrsOff < 0 || attrsSize < 0 || f.dataOff < 0 || f.dataSize < 0 {
		return nil, f.errorf(24, ErrMalformed, "negative section offset or size")
	}
	if attrsSize > 0 && uint64(attrsOff) < hsize {
		return nil, f.errorf(24, ErrMalformed, "attrs section at %d overlaps the header", attrsOff)
	}
	if uint64(f.dataOff) < hsize {
		return nil, f.errorf(40, ErrMalformed, "data section at %d overlaps the header", f.dataOff)
	}
	if attrsSize > 0 && f.dataSize > 0 && attrsOff-f.dataOff < f.dataSize && f.dataOff-attrsOff < attrsSize {
		return nil, f.errorf(24, ErrMalformed, "attrs [%d,+%d) and data [%d,+%d) sections overlap", attrsOff, attrsSize, f.dataOff, f.dataSize)
	}
	if attrsOff > size || attrsSize > size-attrsOff {
		return nil, f.errorf(attrsOff, io.ErrUnexpectedEOF, "attrs section [offset %d, size %d] lies outside the file (%d bytes)", attrsOff, attrsSize, size)
	}
	if f.dataOff > size {
		return nil, f.errorf(40, io.ErrUnexpectedEOF, "data section at %d starts past the end of the file (%d bytes)", f.dataOff, size)
	}
	if err := f.readAttrs(attrSize, attrsOff, attrsSize); err != nil {
		return nil, err
	}

	if f.dataSize == 0 && hsize == fileHeaderSize {
		if end, ok := f.findFeatureTable(len(f.featureBits(hdr[72:104]))); ok {
			// The features were written, so perf record finished: the
			// data size alone was lost. The data ends at the table.
			f.dataSize = end - f.dataOff
			f.warn(fmt.Sprintf("the header's data size is 0, but the feature section table follows the records at offset %d: reading the %d bytes of records before it", end, f.dataSize))
		}
	}
	if f.dataSize == 0 {
		// perf record writes the final header only when it exits; a
		// zero data size means it was killed first. perf refuses such
		// files; the records up to the end of the file are still good.
		f.truncated = true
		f.dataSize = size - f.dataOff
		f.warn(fmt.Sprintf("the header's data size is 0: perf record did not exit cleanly (it was killed before it rewrote the header); reading %d bytes of records to the end of the file; header features are missing", f.dataSize))
		f.features = newFileFeatures(r, size, order, nil)
	} else if hsize == fileHeaderSize {
		f.features, err = f.readFeatureTable(hdr[72:104])
		if err != nil {
			return nil, err
		}
	} else {
		f.features = newFileFeatures(r, size, order, nil)
	}
	if f.dataShort() {
		f.warn(fmt.Sprintf("the data section [%d,+%d) runs past the end of the file (%d bytes): the file is truncated", f.dataOff, f.dataSize, size))
	}
	f.features.setName(name)
	f.nameEvents()
	f.takeRecordTracing()
	f.nameTracepoints()
	return f, nil
}

// nameTracepoints names the tracepoint events EVENT_DESC left unnamed from
// the tracing data: the TRACING_DATA feature (for simpleperf's files, the
// TRACING_DATA record it puts first in the data section: takeRecordTracing),
// else the event_type_info of simpleperf's META_INFO feature.
func (f *File) nameTracepoints() {
	unnamed := false
	for i, e := range f.events.events {
		unnamed = unnamed || (e.Attr.Type == AttrTypeTracepoint && !f.events.named[i])
	}
	if !unnamed {
		return
	}
	evs, err := f.features.TraceEvents()
	if errors.Is(err, ErrNoFeature) && f.features.Has(FeatureSimpleperfMetaInfo) {
		var mi map[string]string
		if mi, err = f.features.SimpleperfMetaInfo(); err == nil {
			evs = simpleperfTracepoints(mi["event_type_info"])
		}
	}
	if err != nil && !errors.Is(err, ErrNoFeature) {
		f.warn(fmt.Sprintf("tracepoint names: %v", err))
	}
	f.events.nameTracepoints(evs)
}

// takeRecordTracing makes the payload of a TRACING_DATA record that starts
// the data section, holding its payload (header.size = 12 + the payload
// padded, as simpleperf's TracingDataRecord writes it), the tracing data
// of a file without the TRACING_DATA feature: simpleperf's files carry
// their tracepoint formats so (RecordFileWriter writes the record first).
// Nothing for a data section that starts otherwise.
func (f *File) takeRecordTracing() {
	if f.features.Has(FeatureTracingData) {
		return
	}
	var h [12]byte
	if f.dataSize < 12 || f.readAt(h[:], f.dataOff, "first record") != nil {
		return
	}
	size, n := int64(f.order.Uint16(h[6:])), int64(f.order.Uint32(h[8:]))
	if RecordType(f.order.Uint32(h[:])) != RecordTracingData || size <= 12 || size < 12+n || 12+n > f.dataSize {
		return
	}
	b := make([]byte, n)
	if err := f.readAt(b, f.dataOff+12, "tracing data"); err != nil {
		f.warn(fmt.Sprintf("tracing data: %v", err))
		return
	}
	f.features.mu.Lock()
	f.features.recordTracing = &pipeFeature{data: b, base: f.dataOff + 12}
	f.features.mu.Unlock()
}

// readAttrs reads the attrs section: entries of attr_size bytes, each an
// attr followed by a {offset, size} section of u64 ids (read_attr and
// perf_session__read_header in header.c).
func (f *File) readAttrs(attrSize uint64, off, size int64) error {
	if size == 0 {
		return nil
	}
	if attrSize < attrSizeVer0+16 || attrSize > 1<<16 {
		return f.errorf(16, ErrMalformed, "attr entry size %d", attrSize)
	}
	n := size / int64(attrSize)
	if n > maxEvents {
		return f.errorf(off, ErrMalformed, "%d attrs", n)
	}
	buf := make([]byte, size)
	if err := f.readAt(buf, off, "attrs section"); err != nil {
		return err
	}
	// Each attr's ids lie in the file, and perf writes them one after the
	// other (perf_session__write_header in header.c), so all of them
	// together fit the file too. Without the running total, attrs that
	// all name the whole file would cost the file's size once per attr.
	var idsTotal int64
	for i := int64(0); i < n; i++ {
		e := buf[i*int64(attrSize) : (i+1)*int64(attrSize)]
		ab := e[:len(e)-16]
		// attr.size may be smaller than the entry (never larger):
		// decode what it covers.
		if as := f.order.Uint32(ab[4:]); as >= attrSizeVer0 && int(as) < len(ab) {
			ab = ab[:as]
		}
		a := decodeAttr(ab, f.order)
		idsOff := int64(f.order.Uint64(e[len(e)-16:]))
		idsSize := int64(f.order.Uint64(e[len(e)-8:]))
		entryOff := off + i*int64(attrSize)
		if a.SampleType >= sampleTypeMax {
			return f.errorf(entryOff+24, ErrMalformed, "attr %d has unknown sample_type bits %#x", i, uint64(a.SampleType))
		}
		var ids []uint64
		if idsSize != 0 {
			if idsOff < 0 || idsSize < 0 || idsOff > f.size || idsSize > f.size-idsOff {
				return f.errorf(entryOff+int64(len(ab)), io.ErrUnexpectedEOF, "attr %d: ids [offset %d, size %d] lie outside the file (%d bytes)", i, idsOff, idsSize, f.size)
			}
			if idsTotal += idsSize; idsTotal > f.size {
				return f.errorf(entryOff, ErrMalformed, "attr %d: ids [offset %d, size %d] bring the attrs' ids to %d bytes, more than the file's %d: the id ranges overlap", i, idsOff, idsSize, idsTotal, f.size)
			}
			b := make([]byte, idsSize/8*8)
			if err := f.readAt(b, idsOff, "ids"); err != nil {
				return err
			}
			ids = make([]uint64, len(b)/8)
			for j := range ids {
				ids[j] = f.order.Uint64(b[8*j:])
			}
		}
		f.events.add(a, ids, "")
	}
	return nil
}

// maxFeatureScan bounds how far from the end of a file whose header lost
// its data size findFeatureTable looks for the feature section table (the
// limit a stream puts on feature sections).
const maxFeatureScan = maxStreamTail

// findFeatureTable looks for the feature section table of a file whose
// header says its data size is 0 although perf record finished it (the
// size was zeroed since): n {offset, size} entries whose sections follow
// one another within the file, the first after room for the table, as
// perf_header__adds_write in header.c writes them (it reserves an entry
// per feature it means to write, and drops those that fail, so the room
// can exceed n entries). Such a table can only be where the data ends;
// it is looked for backwards from the end of the file. It returns the
// table's offset.
func (f *File) findFeatureTable(n int) (int64, bool) {
	if n == 0 {
		return 0, false
	}
	tsize := int64(16 * n)
	lo := max(f.dataOff, f.size-tsize-maxFeatureScan)
	hi := f.size - tsize
	if hi < lo {
		return 0, false
	}
	const window = 64 << 10
	buf := make([]byte, window+8)
	for end := hi + 8; end > lo; end -= window {
		start := max(lo, end-window-8)
		b := buf[:end-start]
		if f.readAt(b, start, "feature section table") != nil {
			return 0, false
		}
		for i := len(b) - 8; i >= 0; i-- {
			x := start + int64(i)
			if x > hi || !tableRoom(f.order.Uint64(b[i:]), x, n) {
				continue
			}
			if f.featureChain(x, n) {
				return x, true
			}
		}
	}
	return 0, false
}

// tableRoom reports whether a first feature section at first leaves room
// for a table of n to featureBits entries at off, as perf reserves it.
func tableRoom(first uint64, off int64, n int) bool {
	room := first - uint64(off)
	return first > uint64(off) && room%16 == 0 && room/16 >= uint64(n) && room/16 <= featureBits
}

// featureChain reports whether the n table entries at off describe
// sections that follow one another within the file, the first after the
// table's room.
func (f *File) featureChain(off int64, n int) bool {
	t := make([]byte, 16*n)
	if f.readAt(t, off, "feature section table") != nil {
		return false
	}
	next := int64(f.order.Uint64(t))
	for i := 0; i < n; i++ {
		o, sz := f.order.Uint64(t[16*i:]), f.order.Uint64(t[16*i+8:])
		if o != uint64(next) || sz > uint64(f.size-next) {
			return false
		}
		next += int64(sz)
	}
	return true
}

// readFeatureTable reads the feature section table at the end of the data
// section: one {offset, size} per set bit of the bitmap, in bit order.
func (f *File) readFeatureTable(bitmap []byte) (*Features, error) {
	set := f.featureBits(bitmap)
	var secs []featureSection
	n := len(set)
	if n == 0 {
		return newFileFeatures(f.r, f.size, f.order, nil), nil
	}
	if f.dataShort() {
		f.warn("the feature section table is missing: the file ends inside the data section")
		return newFileFeatures(f.r, f.size, f.order, nil), nil
	}
	off := f.dataOff + f.dataSize
	buf := make([]byte, 16*n)
	if off > f.size || int64(len(buf)) > f.size-off {
		f.warn(fmt.Sprintf("the feature section table at offset %d lies outside the file (%d bytes): header features are missing", off, f.size))
		return newFileFeatures(f.r, f.size, f.order, nil), nil
	}
	if err := f.readAt(buf, off, "feature section table"); err != nil {
		return nil, err
	}
	for i, id := range set {
		secs = append(secs, featureSection{
			ID:     Feature(id),
			Offset: int64(f.order.Uint64(buf[16*i:])),
			Size:   int64(f.order.Uint64(buf[16*i+8:])),
		})
	}
	return newFileFeatures(f.r, f.size, f.order, secs), nil
}

// featureBits returns the set bits of the adds_features bitmap. In a
// little-endian file bit n is bit n%8 of byte n/8. For a big-endian file
// perf tries u64 words, then u32 words, and falls back to BUILD_ID alone
// when HOSTNAME (always written) is still not set (perf_file_header__read).
func (f *File) featureBits(bm []byte) []int {
	var out []int
	if f.order == binary.LittleEndian {
		for i := 0; i < featureBits; i++ {
			if bm[i/8]&(1<<(i%8)) != 0 {
				out = append(out, i)
			}
		}
		return out
	}
	words64 := func() []int {
		var o []int
		for w := 0; w < 4; w++ {
			v := binary.BigEndian.Uint64(bm[8*w:])
			for v != 0 {
				b := bits.TrailingZeros64(v)
				o = append(o, 64*w+b)
				v &^= 1 << b
			}
		}
		return o
	}
	words32 := func() []int {
		var o []int
		for w := 0; w < 8; w++ {
			v := binary.BigEndian.Uint32(bm[4*w:])
			for v != 0 {
				b := bits.TrailingZeros32(v)
				o = append(o, 32*w+b)
				v &^= 1 << b
			}
		}
		return o
	}
	has := func(s []int, n int) bool {
		for _, x := range s {
			if x == n {
				return true
			}
		}
		return false
	}
	if s := words64(); has(s, int(FeatureHostname)) {
		return s
	}
	if s := words32(); has(s, int(FeatureHostname)) {
		return s
	}
	f.warn("the feature bitmap of this big-endian file cannot be read; assuming only BUILD_ID, as perf does")
	return []int{int(FeatureBuildID)}
}

// nameEvents takes event names from EVENT_DESC, matching by ids and then by
// position (perf_evlist__set_event_name in header.c matches by id).
func (f *File) nameEvents() {
	if f.features == nil || !f.features.Has(FeatureEventDesc) {
		return
	}
	descs, err := f.features.EventDesc()
	if err != nil {
		f.warn(fmt.Sprintf("event names: %v", err))
		return
	}
	for i, d := range descs {
		if d.Name == "" {
			continue
		}
		found := false
		for _, id := range d.IDs {
			if f.events.setName(id, d.Name) {
				found = true
				break
			}
		}
		if !found && i < len(f.events.events) && !f.events.named[i] {
			f.events.events[i].Name = d.Name
			f.events.named[i] = true
		}
	}
}

// ByteOrder returns the file's byte order.
func (f *File) ByteOrder() binary.ByteOrder { return f.order }

// IsPipe reports whether the file is in pipe format (perf record -o - >
// FILE): no header sections, metadata in records.
func (f *File) IsPipe() bool { return f.pipe }

// IsDir reports whether the recording is the perf.data directory form.
func (f *File) IsDir() bool { return len(f.parts) > 0 }

// Truncated reports whether perf record did not finish the file: the
// header's data size is 0 (it was killed before rewriting the header) or
// the data section runs past the end of the file. The records that are
// there can still be read.
func (f *File) Truncated() bool { return f.truncated || f.dataShort() }

// dataShort reports whether the data section runs past the end of the
// file (written so that huge sizes cannot overflow).
func (f *File) dataShort() bool { return f.dataSize > f.size-f.dataOff }

// Warnings returns what was tolerated while reading: an unfinished file,
// trailing bytes after the last record of a pipe stream, an unreadable
// feature table. It grows as records are read.
func (f *File) Warnings() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.warnings...)
}

// Events returns the recording's events (attrs) in file order; a record's
// EventIndex indexes it. In pipe format they are those described before
// the first kernel record. The slice must not be modified.
func (f *File) Events() []Event { return f.events.events }

// Features returns the header features. In pipe format they come from the
// HEADER_FEATURE and HEADER_BUILD_ID records, which the first call reads
// through the whole file.
func (f *File) Features() *Features {
	if f.pipe {
		f.featOnce.Do(f.scanPipeFeatures)
	}
	return f.features
}

// BuildIDs returns the build-id table (BUILD_ID feature, or the
// HEADER_BUILD_ID records of a pipe-format file).
func (f *File) BuildIDs() ([]BuildIDEntry, error) { return f.Features().BuildIDs() }

// Name returns the name the file was opened with ("" for NewFile).
func (f *File) Name() string { return f.name }

// DataRange returns the offset and size of the data section (for a pipe
// format file, the records after the 16-byte header).
func (f *File) DataRange() (off, size int64) { return f.dataOff, f.dataSize }

// RecordsOptions selects how Records delivers records.
type RecordsOptions struct {
	// Ordered delivers kernel records in timestamp order the way perf
	// report does: queued until a FINISHED_ROUND proves no earlier record
	// can follow (docs/perfdata-format.md, "Time order"). Records
	// without a timestamp and perf's own records are delivered as they
	// are read. Memory is bounded by what one round holds.
	Ordered bool

	// SampleHeadersOnly decodes of each SAMPLE record only its
	// RecordHeader (SampleID and EventIndex included) and Fields; every
	// other field is left as it is for a sample of no fields (zero,
	// BranchHWIndex -1). Each sample is still checked to fit its
	// layout, with the error, message and offset, that decoding it
	// whole gives. Counting readers (perfcheck stats and info) then
	// spend per sample little more than reading its bytes.
	SampleHeadersOnly bool

	tune readTuning // what tests change; the zero value is every reader's
}

// Records returns an iterator over the records, from the beginning. Each
// call starts an independent iteration.
func (f *File) Records(opts RecordsOptions) *Records {
	var streams []*stream
	var es *eventSet
	if f.pipe {
		es = &eventSet{}
		sr := io.NewSectionReader(f.r, pipeHeaderSize, f.size-pipeHeaderSize)
		st := newStream(sr, pipeHeaderSize, f.size, f.order, f.name, 0, true, f.warn)
		st.expectSize(f.size)
		streams = append(streams, st)
	} else {
		es = &f.events
		end := f.size
		if !f.dataShort() {
			end = f.dataOff + f.dataSize
		}
		sr := io.NewSectionReader(f.r, f.dataOff, end-f.dataOff)
		st := newStream(sr, f.dataOff, f.size, f.order, f.name, 0, false, f.warn)
		if f.dataShort() {
			st.shortBy = f.dataSize - (f.size - f.dataOff)
		} else if !f.truncated {
			st.expectSize(end)
		}
		st.tolerateTail = f.truncated
		streams = append(streams, st)
		for i, p := range f.parts {
			pst := newStream(io.NewSectionReader(p.r, 0, p.size), 0, p.size, f.order, p.name, i+1, false, f.warn)
			pst.expectSize(p.size)
			streams = append(streams, pst)
		}
	}
	rs := newRecords(streams, es, f.order, f.name, opts)
	if f.pipe {
		rs.p.onUserRecord = pipeHandler(es, nil, f.order)
	}
	prefetchStreams(rs)
	return rs
}

// scanPipeHeader reads the metadata records at the start of a pipe-format
// file (up to the first kernel record) so that Events is known at once.
func (f *File) scanPipeHeader() error {
	f.dataOff, f.dataSize = pipeHeaderSize, f.size-pipeHeaderSize
	f.features = newPipeFeatures(f.order)
	f.features.setName(f.name)
	sr := io.NewSectionReader(f.r, pipeHeaderSize, f.size-pipeHeaderSize)
	st := newStream(sr, pipeHeaderSize, f.size, f.order, f.name, 0, true, func(string) {})
	rs := newRecords([]*stream{st}, &f.events, f.order, f.name, RecordsOptions{})
	rs.p.onUserRecord = pipeHandler(&f.events, nil, f.order)
	for rs.Next() {
		if t := rs.Record().Type(); !t.IsUser() || t == RecordFinishedInit || t == RecordCompressed || t == RecordCompressed2 {
			break
		}
	}
	// Errors are reported when the records are read.
	return nil
}

// scanPipeFeatures reads a pipe-format file through for its
// HEADER_FEATURE and HEADER_BUILD_ID records.
func (f *File) scanPipeFeatures() {
	var es eventSet
	sr := io.NewSectionReader(f.r, pipeHeaderSize, f.size-pipeHeaderSize)
	st := newStream(sr, pipeHeaderSize, f.size, f.order, f.name, 0, true, func(string) {})
	rs := newRecords([]*stream{st}, &es, f.order, f.name, RecordsOptions{})
	rs.p.onUserRecord = pipeHandler(&es, f.features, f.order)
	for rs.Next() {
	}
}

// pipeHandler returns the hook that keeps pipe-mode metadata: attrs and
// event names into es, features and build-ids into fs (when not nil).
func pipeHandler(es *eventSet, fs *Features, order binary.ByteOrder) func(*rawRecord, Record) {
	return func(raw *rawRecord, r Record) {
		switch x := r.(type) {
		case *HeaderAttr:
			es.add(x.Attr, append([]uint64(nil), x.IDs...), "")
		case *EventUpdate:
			if x.UpdateType == EventUpdateName {
				es.setName(x.ID, x.Name)
			}
		case *HeaderFeature:
			if fs != nil && x.FeatureID < featureBits {
				fs.addPipe(Feature(x.FeatureID), x.Data, raw.off+16)
			}
			if x.FeatureID == uint64(FeatureEventDesc) {
				nameFromEventDesc(es, order, x.Data, raw.off+16)
			}
		case *BuildIDRecord:
			if fs != nil {
				fs.addBuildID(x.Entry)
			}
		case *TracingData:
			if fs != nil && x.Data != nil {
				fs.addPipe(FeatureTracingData, x.Data, x.DataOffset)
			}
			if x.Data != nil {
				// Errors are the TraceEvents accessor's to report.
				evs, _ := ParseTracingData(x.Data, x.DataOffset)
				es.nameTracepoints(evs)
			}
		}
	}
}

// nameFromEventDesc names events from a pipe-mode EVENT_DESC payload.
func nameFromEventDesc(es *eventSet, order binary.ByteOrder, data []byte, base int64) {
	fs := newPipeFeatures(order)
	fs.addPipe(FeatureEventDesc, data, base)
	descs, err := fs.EventDesc()
	if err != nil {
		return
	}
	for _, d := range descs {
		for _, id := range d.IDs {
			if d.Name != "" && es.setName(id, d.Name) {
				break
			}
		}
	}
}
