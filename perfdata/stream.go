package perfdata

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
)

// rawRecord is one undecoded record.
type rawRecord struct {
	typ  RecordType
	misc uint16
	size uint16
	// data is the record, header included: header.size bytes (more for a
	// COMPRESSED2 whose u16 size wrapped). It aliases a buffer that the
	// next read reuses.
	data       []byte
	off        int64 // offset of the record, or of its compressed record
	compressed bool
	part       int
	// extraOff and extraSize locate the payload that AUXTRACE and
	// TRACING_DATA carry after header.size (already skipped).
	extraOff  int64
	extraSize int64
	extra     []byte // the TRACING_DATA payload, when kept
	// stable is set when data lies in chunk of its stream (chunked
	// mode), at bufAt, where it stays until the chunk is released: the
	// ordered queue then keeps its position, not a copy.
	stable bool
	chunk  int32
	bufAt  int
}

const (
	readChunk = 256 << 10 // bytes asked of the underlying reader at a time
	// maxRecord bounds one record: header.size is a u16; COMPRESSED2 may
	// exceed it by at most the wrap described in docs/perfdata-format.md
	// ("Compression").
	maxRecord = 1 << 17
	// garbageLimit is how far past an impossible record header a pipe
	// stream may go on before the rest is an error rather than trailing
	// text (perf record -o - mixes its stderr into the stream when both go
	// to one file).
	garbageLimit = 64 << 10
)

// stream reads records sequentially from one input (a file's data section,
// a pipe, a data.N file), expanding compressed records in place.
type stream struct {
	r     io.Reader
	order binary.ByteOrder
	name  string // input name for errors
	part  int
	pipe  bool  // pipe format: read to EOF, tolerate trailing garbage
	limit int64 // bytes the stream may hold (-1: unknown); bounds lengths
	warn  func(string)

	buf        []byte
	start, end int   // unread bytes are buf[start:end]
	pos        int64 // absolute offset of buf[start]
	eof        bool  // r returned io.EOF
	err        error // sticky
	done       bool  // ordered directory reading: this stream has ended

	z *zstream // decompression state, created at the first compressed record

	// tolerateTail makes a record cut short by the end of the input a
	// warning and a clean end: perf record was killed (data size 0).
	tolerateTail bool

	// shortBy is how many bytes of the declared data section the file
	// lacks: reaching the end is then truncation, not a clean end.
	shortBy int64
	// sized says that expectEnd is the end of a file as its size was
	// when opened (File), not what a header says (file-format stream).
	sized bool
	// expectEnd, when > 0, is the offset at which the input must end (the
	// end of the data section of a file-format stream).
	expectEnd int64
	// onEnd, when set, runs once when the input ends cleanly (or, with
	// tolerateTail, in a record cut short).
	onEnd func() error
	// tableEntries, when > 0, is the length of the feature section table
	// that the header of a file-format stream announces while its data
	// size is 0: the records end where such a table begins (atTable),
	// and onTable then reads it and what follows from rest.
	tableEntries int
	onTable      func(off int64, rest io.Reader) error

	recCopy, extraBuf []byte // readExtra's buffers

	// chunked mode (ordered iteration): buf is chunks[cur].b, and bytes
	// once read never move while a queued record refers to them
	// (chunks[i].refs > 0); when buf is full, reading goes on in another
	// chunk and only the unread tail is copied there. Records of the
	// input itself are thus always whole in one chunk.
	chunked bool
	chunks  []chunk
	cur     int32
	free    []int32 // chunks that nothing refers to
}

// chunk is one read buffer of a chunked stream.
type chunk struct {
	b    []byte
	refs int32 // queued records in it
	live int   // their bytes
}

const (
	// chunkSize is the size of a chunked stream's read buffers.
	chunkSize = 1 << 20
	// minRead is the least room a chunked stream reads into; with less
	// left in its chunk it moves on to another.
	minRead = 64 << 10
)

// startChunked puts the stream in chunked mode; what it has read so far
// becomes its first chunk.
func (s *stream) startChunked() {
	if s.chunked {
		return
	}
	s.chunked = true
	if s.buf != nil {
		s.chunks = append(s.chunks, chunk{b: s.buf})
		s.cur = 0
	}
}

// nextChunk makes room for want more bytes after the unread ones in a
// chunked stream: in place when nothing refers to the current chunk,
// else in a free or new chunk, to which the unread tail is copied.
func (s *stream) nextChunk(want int) {
	tail := s.end - s.start
	if len(s.chunks) > 0 {
		c := &s.chunks[s.cur]
		if c.refs == 0 && len(s.buf)-tail >= want {
			copy(s.buf, s.buf[s.start:s.end])
			s.start, s.end = 0, tail
			return
		}
		if c.refs == 0 {
			s.free = append(s.free, s.cur)
		}
	}
	need := tail + want
	size := chunkSize
	if s.limit >= 0 {
		// Small inputs get small buffers.
		size = int(min(s.limit-s.pos, chunkSize)) + 8
	}
	size = max(size, need)
	ci := int32(-1)
	for i := len(s.free) - 1; i >= 0; i-- {
		if f := s.free[i]; f != s.cur && len(s.chunks[f].b) >= need {
			ci = f
			s.free = append(s.free[:i], s.free[i+1:]...)
			break
		}
	}
	if ci < 0 {
		ci = int32(len(s.chunks))
		s.chunks = append(s.chunks, chunk{b: make([]byte, size)})
	}
	nb := s.chunks[ci].b
	copy(nb, s.buf[s.start:s.end])
	s.buf, s.cur = nb, ci
	s.start, s.end = 0, tail
}

// unref drops a queued record's hold on chunk ci; a chunk nothing refers
// to any more is reused, unless it is the one being read into.
func (s *stream) unref(ci int32, n int) {
	c := &s.chunks[ci]
	c.refs--
	c.live -= n
	if c.refs == 0 && ci != s.cur {
		s.free = append(s.free, ci)
	}
}

func newStream(r io.Reader, base int64, limit int64, order binary.ByteOrder, name string, part int, pipe bool, warn func(string)) *stream {
	return &stream{r: r, pos: base, limit: limit, order: order, name: name, part: part, pipe: pipe, warn: warn}
}

// expectSize makes an end of the input before end an error: a file that
// shrinks while it is read (a recording rewritten, a log rotated) would
// otherwise end early, and cleanly when the cut falls between records.
func (s *stream) expectSize(end int64) {
	s.expectEnd, s.sized = end, true
}

func (s *stream) formatErr(off int64, cause error, format string, args ...any) error {
	return &FormatError{File: s.name, Offset: off, Msg: fmt.Sprintf(format, args...), Err: cause}
}

// fill makes at least n unread bytes available unless the input ends first;
// it reports whether they are.
func (s *stream) fill(n int) bool {
	for s.end-s.start < n {
		if s.eof {
			return false
		}
		if s.chunked {
			// Go on reading in this chunk while a useful read fits.
			need := n - (s.end - s.start)
			room := max(need, minRead)
			if s.limit >= 0 {
				room = max(need, min(minRead, int(min(s.limit-s.pos, minRead))+8))
			}
			if len(s.buf)-s.end < room {
				s.nextChunk(room)
			}
		} else if s.start > 0 && (len(s.buf)-s.end < readChunk || s.start == s.end) {
			copy(s.buf, s.buf[s.start:s.end])
			s.end -= s.start
			s.start = 0
		}
		want := max(n, readChunk)
		if s.limit >= 0 {
			// Small inputs get small buffers.
			want = max(n, min(readChunk, int(min(s.limit-s.pos, readChunk))+8))
		} else if len(s.buf) == 0 {
			want = max(n, readChunk/4)
		}
		if !s.chunked && len(s.buf)-s.start < want {
			nb := make([]byte, max(want, 2*len(s.buf)))
			copy(nb, s.buf[s.start:s.end])
			s.end -= s.start
			s.start = 0
			s.buf = nb
		}
		m, err := s.r.Read(s.buf[s.end:])
		s.end += m
		if err == io.EOF {
			s.eof = true
		} else if err != nil {
			s.err = s.formatErr(s.pos+int64(s.end-s.start), err, "read error")
			return false
		}
	}
	return true
}

// discard skips n bytes of the input (AUXTRACE and TRACING_DATA payloads).
func (s *stream) discard(n int64) bool {
	if avail := int64(s.end - s.start); n <= avail {
		s.start += int(n)
		s.pos += n
		return true
	}
	n -= int64(s.end - s.start)
	s.pos += int64(s.end - s.start)
	if s.chunked {
		// Queued records may lie before start: keep them.
		s.start = s.end
	} else {
		s.start, s.end = 0, 0
	}
	if sk, ok := s.r.(io.Seeker); ok && !s.eof {
		cur, err := sk.Seek(0, io.SeekCurrent)
		if err == nil {
			end, err := sk.Seek(0, io.SeekEnd)
			if err == nil && cur+n <= end {
				if _, err := sk.Seek(cur+n, io.SeekStart); err == nil {
					s.pos += n
					return true
				}
			}
			if err == nil {
				// Shorter than the payload: truncated.
				s.pos += end - cur
				s.eof = true
				return false
			}
		}
	}
	m, err := io.CopyN(io.Discard, s.r, n)
	s.pos += m
	if m < n {
		if err != nil && err != io.EOF {
			s.err = s.formatErr(s.pos, err, "read error")
		}
		s.eof = true
		return false
	}
	return true
}

// next returns the next record, io.EOF at a clean end, or an error.
func (s *stream) next() (rawRecord, error) {
	if s.err != nil {
		return rawRecord{}, s.err
	}
	if s.z != nil {
		rec, ok, err := s.z.next()
		if err != nil {
			s.err = err
			return rawRecord{}, err
		}
		if ok {
			return rec, nil
		}
	}
	rec, err := s.nextOuter()
	if err != nil {
		if err == io.EOF && s.z != nil {
			if err2 := s.z.finish(); err2 != nil {
				err = err2
			}
		}
		s.err = err
		return rawRecord{}, err
	}
	if rec.typ == RecordCompressed || rec.typ == RecordCompressed2 {
		if err := s.startDecompress(rec); err != nil {
			s.err = err
			return rawRecord{}, err
		}
	}
	return rec, nil
}

// header decodes a record header (perf_event_header: type, misc, size) in
// the stream's byte order; the usual little-endian order goes without the
// ByteOrder interface's calls (a few percent of reading a recording).
func (s *stream) header(h []byte) (typ RecordType, misc, size uint16) {
	if s.order == binary.LittleEndian {
		return RecordType(binary.LittleEndian.Uint32(h)), binary.LittleEndian.Uint16(h[4:]), binary.LittleEndian.Uint16(h[6:])
	}
	return RecordType(s.order.Uint32(h)), s.order.Uint16(h[4:]), s.order.Uint16(h[6:])
}

// nextOuter reads the next record of the input itself (not of a
// compressed stream).
func (s *stream) nextOuter() (rawRecord, error) {
	if s.err != nil {
		return rawRecord{}, s.err
	}
	off := s.pos
	if !s.fill(8) {
		return rawRecord{}, s.endErr(off)
	}
	if s.tableEntries > 0 && s.atTable(off) {
		return rawRecord{}, s.endAtTable(off)
	}
	typ, misc, size := s.header(s.buf[s.start : s.start+8])
	if s.pipe && (typ == 0 || typ > 0xffff) && size != 0 {
		// No perf record has such a type: if only a little input is left
		// it is text perf wrote after the last record (its stderr sharing
		// the output file), not a record.
		if s.trailingGarbage(off) {
			return rawRecord{}, io.EOF
		}
		return rawRecord{}, s.formatErr(off, ErrMalformed, "invalid record type %d", uint32(typ))
	}
	if size < 8 {
		return rawRecord{}, s.formatErr(off, ErrMalformed, "%v record size %d is smaller than its 8-byte header", typ, size)
	}
	n := int(size)
	if typ == RecordCompressed2 {
		// data_size decides the length (docs/perfdata-format.md,
		// "Compression"): align8(16+data_size) can exceed a u16, which
		// header.size then holds wrapped.
		if !s.fill(16) {
			return rawRecord{}, s.truncated(off, 16)
		}
		ds := s.order.Uint64(s.buf[s.start+8:])
		if want := (16 + ds + 7) &^ 7; ds < maxRecord && want > uint64(n) && want&0xffff == uint64(n) {
			n = int(want)
		}
	}
	if !s.fill(n) {
		if s.err != nil {
			return rawRecord{}, s.err
		}
		return rawRecord{}, s.truncated(off, n)
	}
	rec := rawRecord{typ: typ, misc: misc, size: size, data: s.buf[s.start : s.start+n : s.start+n], off: off, part: s.part,
		stable: s.chunked, chunk: s.cur, bufAt: s.start}
	s.start += n
	s.pos += int64(n)
	// AUXTRACE and TRACING_DATA carry a payload after header.size
	// (perf_session__process_user_event returns its size to skip).
	var extra int64
	switch typ {
	case RecordAuxtrace:
		if n >= 16 {
			extra = int64(s.order.Uint64(rec.data[8:]))
		}
	case RecordTracingData:
		if n >= 12 {
			extra = int64(s.order.Uint32(rec.data[8:]))
		}
		if n > 12 && int64(n) >= 12+extra {
			// simpleperf writes the payload inside the record, with
			// header.size = 12 + the payload padded (TracingDataRecord
			// in system/extras/simpleperf/record.cpp); perf's record is
			// 12 bytes with the payload after it. header.size decides,
			// as simpleperf's reader walks by it.
			rec.extraOff, rec.extraSize = off+12, extra
			rec.extra = rec.data[12 : 12+extra]
			extra = 0
		}
	}
	if extra != 0 {
		if err := s.payload(&rec, extra); err != nil {
			return rawRecord{}, err
		}
	}
	return rec, nil
}

// endErr is what nextOuter returns when no record header follows at off:
// the stream's error, io.EOF at a clean end (after onEnd), or the error
// for input that ends too early.
func (s *stream) endErr(off int64) error {
	if s.err != nil {
		return s.err
	}
	if s.end != s.start {
		return s.truncated(off, 8)
	}
	if s.shortBy > 0 {
		return s.formatErr(off, io.ErrUnexpectedEOF, "data section cut short: the file ends %d bytes before the header says", s.shortBy)
	}
	if s.expectEnd > 0 && off < s.expectEnd {
		if s.sized {
			return s.formatErr(off, io.ErrUnexpectedEOF, "data cut short: the file ends %d bytes before offset %d, where it ended when opened (it shrank while being read)", s.expectEnd-off, s.expectEnd)
		}
		return s.formatErr(off, io.ErrUnexpectedEOF, "data section cut short: the stream ends %d bytes before the header says", s.expectEnd-off)
	}
	if s.onEnd != nil {
		end := s.onEnd
		s.onEnd = nil
		if err := end(); err != nil {
			return err
		}
	}
	return io.EOF
}

// payload reads (TRACING_DATA, up to maxTracingData) or skips the extra
// bytes of payload that follow rec, which nextOuter has just consumed.
func (s *stream) payload(rec *rawRecord, extra int64) error {
	typ, off := rec.typ, rec.off
	if extra < 0 || (s.limit >= 0 && extra > s.limit) {
		return s.formatErr(off, ErrMalformed, "%v payload of %d bytes exceeds the input", typ, uint64(extra))
	}
	rec.extraOff, rec.extraSize = s.pos, extra
	if typ == RecordTracingData && extra <= maxTracingData {
		// Keep the tracing data (tracepoint formats, kallsyms): it
		// is the pipe-mode form of the TRACING_DATA feature.
		if !s.readExtra(rec, extra) {
			if s.err != nil {
				return s.err
			}
			return s.formatErr(rec.extraOff, io.ErrUnexpectedEOF, "%v payload of %d bytes cut short", typ, extra)
		}
		return nil
	}
	// The record's bytes stay valid: discard never moves them
	// unless it empties the buffer, and then it only resets indexes.
	if !s.discard(extra) {
		if s.err != nil {
			return s.err
		}
		return s.formatErr(rec.extraOff, io.ErrUnexpectedEOF, "%v payload of %d bytes cut short", typ, extra)
	}
	return nil
}

// maxTracingData bounds the TRACING_DATA payload kept in memory; a larger
// one is skipped like an AUXTRACE payload.
const maxTracingData = 64 << 20

// readExtra reads the n-byte payload that follows rec into a buffer the
// stream reuses, growing it only as the bytes arrive.
func (s *stream) readExtra(rec *rawRecord, n int64) bool {
	// Reading on may move the buffer under rec.data: keep a copy.
	s.recCopy = append(s.recCopy[:0], rec.data...)
	rec.data = s.recCopy
	rec.stable = false
	buf := s.extraBuf[:0]
	for int64(len(buf)) < n {
		if s.end == s.start && !s.fill(1) {
			return false
		}
		take := min(int64(s.end-s.start), n-int64(len(buf)))
		buf = append(buf, s.buf[s.start:s.start+int(take)]...)
		s.start += int(take)
		s.pos += take
	}
	s.extraBuf = buf
	rec.extra = buf
	return true
}

func (s *stream) truncated(off int64, n int) error {
	if s.tolerateTail && s.err == nil {
		if s.warn != nil {
			s.warn(fmt.Sprintf("the last record, at offset %d, is cut short (%d of %d bytes): perf record was stopped while writing it", off, s.end-s.start, n))
		}
		s.pos += int64(s.end - s.start)
		s.start = s.end
		if end := s.onEnd; end != nil {
			s.onEnd = nil
			if err := end(); err != nil {
				return err
			}
		}
		return io.EOF
	}
	return s.formatErr(off, io.ErrUnexpectedEOF, "record of %d bytes cut short: %d bytes left", n, s.end-s.start)
}

// atTable reports whether the feature section table of a file-format
// stream whose data size is 0 begins at off, the start of the unread
// bytes: s.tableEntries {offset, size} entries whose sections follow one
// another, the first after the table's room (tableRoom). No record can
// look like that: a record's first eight bytes hold its size, at least 8,
// in their top (little-endian) or bottom 16 bits with its type above, so
// read as an offset they are beyond 2^51, or, big-endian, beyond 4 GiB
// and then followed by no such chain.
func (s *stream) atTable(off int64) bool {
	n := s.tableEntries
	first := s.order.Uint64(s.buf[s.start:])
	if !tableRoom(first, off, n) || !s.fill(16*n) {
		return false
	}
	t := s.buf[s.start : s.start+16*n]
	next := first
	for i := range n {
		o, sz := s.order.Uint64(t[16*i:]), s.order.Uint64(t[16*i+8:])
		if o != next || sz > maxStreamTail {
			return false
		}
		next += sz
	}
	return true
}

// endAtTable ends the records at off, where atTable found the feature
// section table, and hands the table and what follows to onTable.
func (s *stream) endAtTable(off int64) error {
	rest := io.MultiReader(bytes.NewReader(s.buf[s.start:s.end]), s.r)
	s.pos += int64(s.end - s.start)
	s.start = s.end
	s.eof = true
	s.onEnd = nil
	if err := s.onTable(off, rest); err != nil {
		return err
	}
	return io.EOF
}

// trailingGarbage consumes what is left of a pipe stream after an
// impossible record header at off and reports whether it ended within
// garbageLimit bytes.
func (s *stream) trailingGarbage(off int64) bool {
	s.fill(garbageLimit + 1)
	if s.err != nil || !s.eof || s.end-s.start > garbageLimit {
		return false
	}
	n := s.end - s.start
	s.start = s.end
	s.pos += int64(n)
	if s.warn != nil {
		s.warn(fmt.Sprintf("%d bytes after the last record at offset %d are not perf records (ignored)", n, off))
	}
	return true
}

// errCount is the cause for a count or length that does not fit in what
// remains of its record.
var errCount = ErrMalformed
