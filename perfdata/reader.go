package perfdata

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"sync"
)

// Reader reads a pipe-mode perf.data stream (perf record -o -) from an
// io.Reader. Unlike File it cannot look ahead: Events and Features grow as
// the metadata records stream past (perf sends them first).
type Reader struct {
	name     string
	order    binary.ByteOrder
	events   eventSet
	features *Features
	rs       *Records
	used     bool
	pipe     bool

	mu       sync.Mutex
	warnings []string
}

// NewReader reads a perf.data stream from r: the pipe format perf record -o
// - writes, or a file-format perf.data read sequentially (cat perf.data |
// ...). A file-format stream must have its attrs and ids before its data,
// as perf record writes them (perf inject may write them after: use Open
// or NewFile); its features follow the records and are available once
// Records has reached the end.
func NewReader(r io.Reader) (*Reader, error) {
	return newReader(r, "")
}

func newReader(r io.Reader, name string) (*Reader, error) {
	var hdr [pipeHeaderSize]byte
	if n, err := io.ReadFull(r, hdr[:]); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil, &FormatError{File: name, Offset: int64(n), Msg: "stream too short for a perf.data header", Err: io.ErrUnexpectedEOF}
		}
		return nil, &FormatError{File: name, Offset: int64(n), Msg: "reading the header", Err: err}
	}
	order, err := byteOrder(hdr[:8])
	if bytes.Equal(hdr[:8], magicV1) {
		// A version-1 file: its attr size says the byte order.
		var h24 [24]byte
		copy(h24[:], hdr[:])
		if n, err := io.ReadFull(r, h24[16:]); err != nil {
			return nil, &FormatError{File: name, Offset: int64(16 + n), Msg: "version-1 header cut short", Err: io.ErrUnexpectedEOF}
		}
		if order = v1ByteOrder(h24[16:]); order == nil {
			return nil, &FormatError{File: name, Offset: 16, Msg: fmt.Sprintf("version-1 header: attr size %#x is none perf knows, in either byte order", h24[16:]), Err: ErrMalformed}
		}
		if size := order.Uint64(hdr[8:]); size == fileHeaderSize || size == fileHeaderSizeNoFB {
			return newFileStream(r, name, order, h24[:], int(size))
		}
		return nil, &FormatError{File: name, Offset: 8, Msg: "version-1 header size is neither 104 nor 72", Err: ErrMalformed}
	}
	if err != nil {
		if err == ErrNotPerfData {
			return nil, &FormatError{File: name, Offset: 0, Msg: fmt.Sprintf("bad magic %q", hdr[:8]), Err: ErrNotPerfData}
		}
		return nil, &FormatError{File: name, Offset: 0, Msg: err.Error(), Err: ErrMalformed}
	}
	if size := order.Uint64(hdr[8:]); size != pipeHeaderSize {
		if size == fileHeaderSize || size == fileHeaderSizeNoFB {
			return newFileStream(r, name, order, hdr[:], int(size))
		}
		return nil, &FormatError{File: name, Offset: 8, Msg: fmt.Sprintf("header size %d is none of %d, %d and %d", size, pipeHeaderSize, fileHeaderSize, fileHeaderSizeNoFB), Err: ErrMalformed}
	}
	pr := &Reader{name: name, order: order, features: newPipeFeatures(order), pipe: true}
	pr.features.setName(name)
	st := newStream(r, pipeHeaderSize, -1, order, name, 0, true, pr.warn)
	pr.rs = newRecords([]*stream{st}, &pr.events, order, name, RecordsOptions{})
	pr.rs.p.onUserRecord = pipeHandler(&pr.events, pr.features, order)
	return pr, nil
}

func (r *Reader) warn(msg string) {
	r.mu.Lock()
	r.warnings = append(r.warnings, msg)
	r.mu.Unlock()
}

// Records returns the iterator over the stream. A stream can be read once:
// later calls return the same iterator (with opts ignored).
func (r *Reader) Records(opts RecordsOptions) *Records {
	if !r.used {
		r.used = true
		r.rs.ordered = opts.Ordered
		r.rs.setHeadersOnly(opts.SampleHeadersOnly)
		r.rs.tune = opts.tune
	}
	return r.rs
}

// ByteOrder returns the stream's byte order.
func (r *Reader) ByteOrder() binary.ByteOrder { return r.order }

// Events returns the events described so far (HEADER_ATTR records). The
// slice must not be modified.
func (r *Reader) Events() []Event { return r.events.events }

// Features returns the features received so far: in pipe format, the
// HEADER_FEATURE and HEADER_BUILD_ID records read; for a file-format
// stream, none until Records has reached the end, then the header
// features.
func (r *Reader) Features() *Features {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.features
}

// IsPipe reports whether the stream is in pipe format.
func (r *Reader) IsPipe() bool { return r.pipe }

// Stream limits for file-format streams, which must be buffered where a
// file would be read at offsets: what precedes the data (attrs and ids)
// and what follows it (the feature table and sections).
const (
	maxStreamPrefix = 64 << 20
	maxStreamTail   = 256 << 20
)

// newFileStream reads a file-format perf.data from a stream: the header,
// then everything up to the data section (attrs and ids), then the records;
// at the end of the records, the feature sections.
func newFileStream(r io.Reader, name string, order binary.ByteOrder, start []byte, hsize int) (*Reader, error) {
	ferr := func(off int64, cause error, format string, args ...any) error {
		return &FormatError{File: name, Offset: off, Msg: fmt.Sprintf(format, args...), Err: cause}
	}
	hdr := make([]byte, hsize)
	copy(hdr, start)
	if n, err := io.ReadFull(r, hdr[len(start):]); err != nil {
		return nil, ferr(int64(len(start)+n), io.ErrUnexpectedEOF, "header cut short")
	}
	attrSize := order.Uint64(hdr[16:])
	attrsOff, attrsSize := order.Uint64(hdr[24:]), order.Uint64(hdr[32:])
	dataOff, dataSize := order.Uint64(hdr[40:]), order.Uint64(hdr[48:])
	if dataOff < uint64(hsize) || dataOff > maxStreamPrefix || dataSize > 1<<62 {
		return nil, ferr(40, ErrMalformed, "data section at %d: a stream can have at most %d bytes before its data", dataOff, maxStreamPrefix)
	}
	if attrsSize > 0 && (attrsOff < uint64(hsize) || attrsOff > dataOff || attrsSize > dataOff-attrsOff) {
		return nil, ferr(24, ErrMalformed, "attrs section [%d,+%d) is not between the header and the data (%d): read such a file with Open or NewFile", attrsOff, attrsSize, dataOff)
	}
	// The buffer grows as the bytes arrive (doubling from 64 KiB, as
	// internal/saferio reads in chunks), so a short stream that claims a
	// distant data section costs what it sent, not what it claims.
	prefix := make([]byte, hsize, min(dataOff, 64<<10))
	copy(prefix, hdr)
	for uint64(len(prefix)) < dataOff {
		if len(prefix) == cap(prefix) {
			prefix = slices.Grow(prefix, int(min(uint64(cap(prefix)), dataOff-uint64(cap(prefix)))))
		}
		n, err := io.ReadFull(r, prefix[len(prefix):min(uint64(cap(prefix)), dataOff)])
		prefix = prefix[:len(prefix)+n]
		if err != nil {
			return nil, ferr(int64(len(prefix)), io.ErrUnexpectedEOF, "stream ends before its data section at %d", dataOff)
		}
	}
	// Decode the attrs with the file code, over the bytes before the data.
	f := &File{name: name, r: bytes.NewReader(prefix), size: int64(len(prefix)), order: order}
	if err := f.readAttrs(attrSize, int64(attrsOff), int64(attrsSize)); err != nil {
		return nil, err
	}
	pr := &Reader{name: name, order: order, features: newPipeFeatures(order)}
	pr.features.setName(name)
	pr.events = f.events
	var st *stream
	if dataSize == 0 {
		// perf record rewrites the header when it exits: it was killed
		// first, and the records go to the end of the stream; or the
		// size alone was zeroed since, and they end where the feature
		// section table begins (File's findFeatureTable, met here on
		// the way instead of looked for from the end).
		st = newStream(r, int64(dataOff), -1, order, name, 0, false, pr.warn)
		st.tolerateTail = true
		st.onEnd = func() error {
			pr.warn("the header's data size is 0: perf record did not exit cleanly (it was killed before it rewrote the header); reading records to the end of the stream; header features are missing")
			return nil
		}
		if hsize == fileHeaderSize {
			bitmap := hdr[72:104]
			st.tableEntries = len(f.featureBits(bitmap))
			st.onTable = func(off int64, rest io.Reader) error {
				pr.warn(fmt.Sprintf("the header's data size is 0, but the feature section table follows the records at offset %d: reading the %d bytes of records before it", off, off-int64(dataOff)))
				return pr.readStreamFeatures(rest, f, bitmap, int64(dataOff), off-int64(dataOff))
			}
		}
	} else {
		st = newStream(io.LimitReader(r, int64(dataSize)), int64(dataOff), int64(dataOff+dataSize), order, name, 0, false, pr.warn)
		st.expectEnd = int64(dataOff + dataSize)
		if hsize == fileHeaderSize {
			bitmap := hdr[72:104]
			st.onEnd = func() error { return pr.readStreamFeatures(r, f, bitmap, int64(dataOff), int64(dataSize)) }
		}
	}
	pr.rs = newRecords([]*stream{st}, &pr.events, order, name, RecordsOptions{})
	// simpleperf's TRACING_DATA record names tracepoints as the pipe
	// form's does.
	pr.rs.p.onUserRecord = pipeHandler(&pr.events, nil, order)
	return pr, nil
}

// readStreamFeatures reads what follows the data section of a file-format
// stream and makes it the Reader's features.
func (r *Reader) readStreamFeatures(in io.Reader, f *File, bitmap []byte, dataOff, dataSize int64) error {
	tail, err := io.ReadAll(io.LimitReader(in, maxStreamTail+1))
	if err != nil {
		return &FormatError{File: r.name, Offset: dataOff + dataSize, Msg: "reading the feature sections", Err: err}
	}
	if len(tail) > maxStreamTail {
		r.warn(fmt.Sprintf("more than %d bytes of feature sections follow the data: header features are not read", maxStreamTail))
		return nil
	}
	end := dataOff + dataSize
	ff := &File{name: r.name, r: tailReaderAt{base: end, b: tail}, size: end + int64(len(tail)), order: r.order,
		dataOff: dataOff, dataSize: dataSize}
	fs, err := ff.readFeatureTable(bitmap)
	for _, w := range ff.warnings {
		r.warn(w)
	}
	if err != nil {
		return err
	}
	fs.setName(r.name)
	// Name the events from EVENT_DESC, as File does.
	ff.features = fs
	ff.events = r.events
	ff.nameEvents()
	ff.nameTracepoints()
	r.events = ff.events
	r.mu.Lock()
	r.features = fs
	r.mu.Unlock()
	return nil
}

// tailReaderAt serves the bytes of a stream from offset base on.
type tailReaderAt struct {
	base int64
	b    []byte
}

func (t tailReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off < t.base || off-t.base > int64(len(t.b)) {
		return 0, io.ErrUnexpectedEOF
	}
	n := copy(p, t.b[off-t.base:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Warnings returns what was tolerated so far, such as trailing bytes after
// the last record.
func (r *Reader) Warnings() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.warnings...)
}
