package perfdata

import (
	"encoding/binary"
	"fmt"
	"io"
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

	mu       sync.Mutex
	warnings []string
}

// NewReader reads the 16-byte pipe header from r. A file-format perf.data
// needs seeking (its features follow the data): use Open or NewFile.
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
	if err != nil {
		if err == ErrNotPerfData {
			return nil, &FormatError{File: name, Offset: 0, Msg: fmt.Sprintf("bad magic %q", hdr[:8]), Err: ErrNotPerfData}
		}
		return nil, &FormatError{File: name, Offset: 0, Msg: err.Error(), Err: ErrMalformed}
	}
	if size := order.Uint64(hdr[8:]); size != pipeHeaderSize {
		return nil, &FormatError{File: name, Offset: 8, Msg: fmt.Sprintf("header size %d: a file-format perf.data cannot be read as a stream; use Open or NewFile", size), Err: ErrMalformed}
	}
	pr := &Reader{name: name, order: order, features: newPipeFeatures(order)}
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
	}
	return r.rs
}

// ByteOrder returns the stream's byte order.
func (r *Reader) ByteOrder() binary.ByteOrder { return r.order }

// Events returns the events described so far (HEADER_ATTR records). The
// slice must not be modified.
func (r *Reader) Events() []Event { return r.events.events }

// Features returns the features received so far (HEADER_FEATURE and
// HEADER_BUILD_ID records).
func (r *Reader) Features() *Features { return r.features }

// Warnings returns what was tolerated so far, such as trailing bytes after
// the last record.
func (r *Reader) Warnings() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.warnings...)
}
