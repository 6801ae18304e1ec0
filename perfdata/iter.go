package perfdata

import (
	"encoding/binary"
	"errors"
	"io"
	"iter"
)

// Records iterates over the records of a recording:
//
//	rs := f.Records(perfdata.RecordsOptions{})
//	for rs.Next() {
//		switch r := rs.Record().(type) {
//		case *perfdata.Sample:
//			...
//		}
//	}
//	if err := rs.Err(); err != nil { ... }
type Records struct {
	p       parser
	streams []*stream
	cur     int
	name    string
	rec     Record
	err     error
	done    bool
	raw     rawRecord // the record being decoded (a field so it does not escape per call)

	ordered bool
	oq      orderQueue
	// inPlace is set for a little-endian reading in file order with
	// SampleHeadersOnly: Next tries nextSampleInPlace first.
	inPlace bool
	// In ordered mode with several streams (perf.data directory), each is
	// read for about readerBudget bytes in turn, as perf's
	// __perf_session__process_dir_events reads READER_MAX_SIZE from each.
	budgetStart int64

	// stopPrefetch, when set, ends the read-ahead goroutines.
	stopPrefetch func()

	tune readTuning
}

const readerBudget = 2 << 20

func newRecords(streams []*stream, es *eventSet, order binary.ByteOrder, name string, opts RecordsOptions) *Records {
	rs := &Records{streams: streams, name: name, ordered: opts.Ordered, tune: opts.tune}
	rs.p.order = order
	rs.p.little = order == binary.LittleEndian
	rs.p.name = name
	rs.p.events = es
	rs.setHeadersOnly(opts.SampleHeadersOnly)
	return rs
}

// setHeadersOnly sets RecordsOptions.SampleHeadersOnly, after Ordered.
func (rs *Records) setHeadersOnly(on bool) {
	rs.p.headersOnly = on
	rs.inPlace = on && !rs.ordered && rs.p.little
}

// Next advances to the next record and reports whether there is one. It
// returns false at the end of the input and after the first error (see
// Err), and never yields a nil Record.
//
// The Record returned by Record, and every slice and BuildID in it, is valid
// only until the next call to Next: the iterator reuses one struct per
// record type and grows its slices in place, so that reading a recording
// allocates nothing per record in steady state. Copy what you keep.
// (Strings are ordinary immutable strings and may be kept.)
func (rs *Records) Next() bool {
	if rs.err != nil || rs.done {
		rs.rec = nil
		return false
	}
	if rs.inPlace {
		// Most records of such a reading, without the general path's
		// calls and copies.
		if s := rs.nextSampleInPlace(); s != nil {
			if rs.p.join.pending != nil {
				rs.p.join.apply(s, false)
			}
			rs.rec = s
			return true
		}
	}
	var (
		rec Record
		err error
	)
	if rs.ordered {
		rec, err = rs.nextOrdered()
	} else {
		rec, err = rs.nextUnordered()
	}
	if err != nil {
		rs.rec = nil
		if rs.stopPrefetch != nil {
			rs.stopPrefetch()
		}
		if err == io.EOF {
			rs.done = true
			return false
		}
		var fe *FormatError
		if errors.As(err, &fe) && fe.File == "" {
			fe.File = rs.name
		}
		rs.err = err
		return false
	}
	switch r := rec.(type) {
	case *SimpleperfCallchain:
		rs.p.join.take(r)
	case *Sample:
		if rs.p.join.pending != nil {
			rs.p.join.apply(r, !rs.p.headersOnly)
		}
	}
	rs.rec = rec
	return true
}

// Events returns the events the records of this iteration refer to by
// RecordHeader.EventIndex: File.Events for a file-format recording; for a
// pipe stream, those its HEADER_ATTR records have described so far (a
// superset of File.Events when attrs arrive late).
func (rs *Records) Events() []Event {
	if rs.p.events == nil {
		return nil
	}
	return rs.p.events.events
}

// Record returns the current record (see Next for how long it is valid).
func (rs *Records) Record() Record { return rs.rec }

// Err returns the first error met, or nil at a clean end. A *FormatError
// gives the byte offset; truncation unwraps to io.ErrUnexpectedEOF.
func (rs *Records) Err() error { return rs.err }

// All returns the records as an iter.Seq2 for range loops. The pair's error
// is non-nil only for the last pair, whose record is then nil. The reuse
// rule of Next applies.
func (rs *Records) All() iter.Seq2[Record, error] {
	return func(yield func(Record, error) bool) {
		for rs.Next() {
			if !yield(rs.rec, nil) {
				return
			}
		}
		if rs.err != nil {
			yield(nil, rs.err)
		}
	}
}

// nextRaw reads the next raw record from the streams in order.
func (rs *Records) nextRaw() (rawRecord, error) {
	for rs.cur < len(rs.streams) {
		rec, err := rs.streams[rs.cur].next()
		if err == io.EOF {
			rs.cur++
			continue
		}
		return rec, err
	}
	return rawRecord{}, io.EOF
}

func (rs *Records) nextUnordered() (Record, error) {
	raw, err := rs.nextRaw()
	if err != nil {
		return nil, err
	}
	return rs.decode(raw)
}

// decode decodes raw through a field of rs, so that no copy escapes.
func (rs *Records) decode(raw rawRecord) (Record, error) {
	rs.raw = raw
	return rs.p.decode(&rs.raw)
}

// nextSampleInPlace decodes the next record's header where it lies when
// it is a SAMPLE of little-endian input held whole in the current stream's
// buffer or decompressed output, and it fits its layout: most records of
// a recording read with SampleHeadersOnly. It skips the general path's
// copies of the raw record and its header, which cost more than the
// rest of such a reading. Anything else, a sample that does not fit
// included, returns nil having consumed nothing, and the general path
// reads it (and gives its error).
func (rs *Records) nextSampleInPlace() *Sample {
	if rs.cur >= len(rs.streams) {
		return nil
	}
	st := rs.streams[rs.cur]
	if st.err != nil {
		return nil
	}
	if st.z != nil {
		return rs.nextCompressedSampleInPlace(st)
	}
	b := st.buf[st.start:st.end]
	if len(b) < 8 || RecordType(binary.LittleEndian.Uint32(b)) != RecordSample {
		return nil
	}
	size := int(binary.LittleEndian.Uint16(b[6:]))
	if size < 8 || size > len(b) {
		return nil
	}
	if !rs.p.decodeSampleHeader(b[:size:size], st.pos, false, st.part) {
		return nil
	}
	st.start += size
	st.pos += int64(size)
	return &rs.p.sample
}

// nextCompressedSampleInPlace is nextSampleInPlace inside compressed
// data: the record's bytes are in the decompressed output, once the
// records the decompressor read past (the stash) are delivered, since
// they come first.
func (rs *Records) nextCompressedSampleInPlace(st *stream) *Sample {
	z := st.z
	if z.stashPos < len(z.stash) || z.start == z.end {
		return nil // at the end, the general path reads on, and may leave the compressed data
	}
	b := z.out[z.start:z.end]
	if len(b) < 8 || RecordType(binary.LittleEndian.Uint32(b)) != RecordSample {
		return nil
	}
	size := int(binary.LittleEndian.Uint16(b[6:]))
	if size < 8 || size > len(b) {
		return nil
	}
	if !rs.p.decodeSampleHeader(b[:size:size], z.recOff, true, st.part) {
		return nil
	}
	z.start += size
	return &rs.p.sample
}
