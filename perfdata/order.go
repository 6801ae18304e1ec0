package perfdata

import (
	"cmp"
	"encoding/binary"
	"io"
	"slices"
)

// orderQueue is the time-ordered queue of RecordsOptions.Ordered, after
// perf's ordered_events (tools/perf/util/ordered-events.c) and
// perf_event__process_finished_round (session.c): kernel records with a
// timestamp are queued; at each FINISHED_ROUND the queue is flushed up to
// the largest timestamp seen by the end of the previous round; at the end
// everything is flushed. Equal timestamps keep input order.
//
// Queued records are kept as raw bytes in an arena and decoded when
// delivered, so the decoded structs can still be reused. After each flush
// the records left are compacted into a second arena: memory stays bounded
// by what one round holds.
type orderQueue struct {
	// items are the queued records: sorted by time (stably, so equal
	// times keep input order) when a flush starts; records queued later
	// are appended. perf keeps a list it inserts into from the tail, which
	// is cheap for the nearly sorted per-CPU runs of a round; sorting each
	// round's records once at its flush is the same work in Go.
	items        []queued
	scratch      []queued // sortItems' merge buffer
	runs, runs2  []int    // sortItems' run boundaries
	arena, spare []byte
	bytes        int // bytes of the queued records
	// streams are the iteration's streams: a record of a memory-mapped
	// one is kept as its position there, not copied into the arena.
	streams []*stream

	maxTS     uint64 // largest timestamp queued so far
	nextFlush uint64 // limit for the next FINISHED_ROUND flush
	limit     uint64 // limit of the flush in progress
	flushing  bool
	sorted    bool  // items sorted for the flush in progress
	pos, end  int   // items[pos:end] are still to be delivered by the flush
	final     bool  // end of input: flush everything
	finalErr  error // the error that ended the input, returned after the flush

	inPlace int // records pushInPlace queued, for tests

	// The FINISHED_ROUND record that started the flush, delivered after it.
	hasPending bool
	pending    rawRecord
	pendingBuf [8]byte
}

// queued is one queued record, kept small since sorting moves it.
type queued struct {
	ts         uint64
	off        int64
	at         int    // start of its bytes in the arena, or in its chunk
	n          uint32 // its length
	typ        RecordType
	misc, size uint16
	part       int32
	st         int32 // index of the stream whose chunk holds it; -1: the arena
	chunk      int32
	compressed bool
}

// push queues raw, read from stream st.
func (q *orderQueue) push(ts uint64, raw *rawRecord, st int) {
	it := queued{ts: ts, n: uint32(len(raw.data)), st: -1,
		off: raw.off, typ: raw.typ, misc: raw.misc, size: raw.size, part: int32(raw.part), compressed: raw.compressed}
	if raw.stable {
		it.at, it.st, it.chunk = raw.bufAt, int32(st), raw.chunk
	} else {
		if q.arena == nil {
			q.arena = make([]byte, 0, 128<<10)
		}
		it.at = len(q.arena)
		q.arena = append(q.arena, raw.data...)
	}
	q.add(it)
}

// add queues it, holding its chunk when it lies in one.
func (q *orderQueue) add(it queued) {
	if q.items == nil {
		// A round of a busy recording holds thousands of records:
		// start there rather than growing from nothing.
		q.items = make([]queued, 0, 1024)
	}
	if it.st >= 0 {
		c := &q.streams[it.st].chunks[it.chunk]
		c.refs++
		c.live += int(it.n)
	}
	q.items = append(q.items, it)
	q.bytes += int(it.n)
	if it.ts > q.maxTS {
		q.maxTS = it.ts
	}
}

// pushInPlace queues the next record of the only stream where it lies in
// the stream's chunk when it is a kernel record of little-endian input,
// whole in the chunk, with a timestamp: most records of a recording. It
// queues what the general path (nextRawOrdered, timestamp, push) would,
// without building the raw record that path passes along, which cost more
// than queueing it. Anything else returns false having consumed nothing,
// and the general path reads it (and gives its error).
func (rs *Records) pushInPlace() bool {
	if len(rs.streams) != 1 || rs.cur != 0 || rs.p.order != binary.LittleEndian {
		return false
	}
	st := rs.streams[0]
	if !st.chunked || st.z != nil || st.err != nil || st.tableEntries > 0 {
		return false
	}
	b := st.buf[st.start:st.end]
	if len(b) < 8 {
		return false
	}
	typ := RecordType(binary.LittleEndian.Uint32(b))
	size := binary.LittleEndian.Uint16(b[6:])
	if typ == 0 || typ.IsUser() || size < 8 || int(size) > len(b) {
		return false
	}
	ts, ok := rs.timestamp(typ, b[:size])
	if !ok {
		return false
	}
	rs.oq.add(queued{ts: ts, off: st.pos, at: st.start, n: uint32(size), typ: typ,
		misc: binary.LittleEndian.Uint16(b[4:]), size: size, part: int32(st.part), st: 0, chunk: st.cur})
	st.start += int(size)
	st.pos += int64(size)
	rs.oq.inPlace++
	return true
}

// cmpQueued orders queued records by time.
func cmpQueued(a, b queued) int { return cmp.Compare(a.ts, b.ts) }

// sortItems sorts the queue by time, stably. A round's records are a few
// runs already in time order (one per CPU ring buffer perf drained, and
// what the previous flush left), so it merges those runs, as a natural
// merge sort does: O(n log runs) moves instead of the O(n log² n) of an
// in-place stable sort, which was a sixth of reading in time order.
//
// The merge needs a second array as long as the queue; it is used only for
// a queue of at most maxMergeItems records in at most maxMergeRuns runs
// (a round of any real recording); one already in order is left as it is. A larger queue (a file without
// FINISHED_ROUND reaching the queue's limit) or one of many short runs
// (hostile input) is sorted in place, as it always was, so memory stays
// what the queued records justify.
func (q *orderQueue) sortItems() {
	src := q.items
	// bounds[i] is where run i starts; the last entry is len(src).
	bounds := q.runs[:0]
	for i := range src {
		if i == 0 || src[i].ts < src[i-1].ts {
			if i > 0 && (len(bounds) == maxMergeRuns || len(src) > maxMergeItems) {
				q.runs = bounds[:0]
				slices.SortStableFunc(src, cmpQueued)
				return
			}
			bounds = append(bounds, i)
		}
	}
	if len(bounds) <= 1 {
		q.runs = bounds[:0]
		return
	}
	bounds = append(bounds, len(src))
	next := q.runs2[:0]
	defer func() { q.runs, q.runs2 = bounds[:0], next[:0] }()
	if cap(q.scratch) < len(src) {
		q.scratch = make([]queued, len(src))
	}
	dst := q.scratch[:len(src)]
	for len(bounds) > 2 {
		nb := append(next[:0], 0)
		for r := 0; r+1 < len(bounds); r += 2 {
			lo, mid := bounds[r], bounds[r+1]
			if r+2 >= len(bounds) {
				// An odd run out: carried over as it is.
				copy(dst[lo:mid], src[lo:mid])
				nb = append(nb, mid)
				continue
			}
			hi := bounds[r+2]
			mergeQueued(dst[lo:hi], src[lo:mid], src[mid:hi])
			nb = append(nb, hi)
		}
		bounds, next = nb, bounds
		src, dst = dst, src
	}
	if &src[0] != &q.items[0] {
		// The sorted queue is in the merge buffer: swap the two rather
		// than copy it back.
		q.items, q.scratch = src, q.items
	}
}

// The limits of sortItems' merge: 4096 runs (a round holds one per CPU
// buffer perf drained, and what the last flush left), 1 << 16 records
// (a 3.5 MiB merge array; a round of a busy recording holds thousands).
const (
	maxMergeRuns  = 4096
	maxMergeItems = 1 << 16
)

// mergeQueued merges the sorted runs a and b into dst, taking from a first
// on equal times (so that equal times keep input order).
func mergeQueued(dst, a, b []queued) {
	i, j, k := 0, 0, 0
	for i < len(a) && j < len(b) {
		if b[j].ts < a[i].ts {
			dst[k] = b[j]
			j++
		} else {
			dst[k] = a[i]
			i++
		}
		k++
	}
	k += copy(dst[k:], a[i:])
	copy(dst[k:], b[j:])
}

// startFlush sorts the queue and finds the records the flush delivers.
func (q *orderQueue) startFlush() {
	q.sortItems()
	q.sorted = true
	q.pos = 0
	if q.final {
		q.end = len(q.items)
		return
	}
	q.end, _ = slices.BinarySearchFunc(q.items, q.limit+1, func(it queued, t uint64) int { return cmp.Compare(it.ts, t) })
	if q.limit == ^uint64(0) {
		q.end = len(q.items)
	}
}

// item sets raw to queued record i with its bytes.
func (q *orderQueue) item(i int, raw *rawRecord) {
	it := &q.items[i]
	end := it.at + int(it.n)
	src := q.arena
	if it.st >= 0 {
		src = q.streams[it.st].chunks[it.chunk].b
	}
	*raw = rawRecord{typ: it.typ, misc: it.misc, size: it.size, off: it.off, part: int(it.part),
		compressed: it.compressed, data: src[it.at:end:end]}
}

// endFlush drops the delivered records and moves the bytes of those still
// queued to the spare arena.
func (q *orderQueue) endFlush() {
	for i := range q.items[:q.end] {
		if it := &q.items[i]; it.st >= 0 {
			q.streams[it.st].unref(it.chunk, int(it.n))
		}
	}
	n := copy(q.items, q.items[q.end:])
	q.items = q.items[:n]
	q.sorted = false
	q.pos, q.end = 0, 0
	q.bytes = 0
	if len(q.items) == 0 {
		q.arena = q.arena[:0]
		return
	}
	q.spare = q.spare[:0]
	for i := range q.items {
		it := &q.items[i]
		q.bytes += int(it.n)
		if it.st >= 0 {
			st := q.streams[it.st]
			if c := &st.chunks[it.chunk]; it.chunk == st.cur || c.live >= len(c.b)/8 {
				continue
			}
			// A few records left behind (their timestamps run ahead of
			// the rest) would hold a whole chunk: copy them out, so that
			// memory stays bounded by the bytes queued.
			at := len(q.spare)
			q.spare = append(q.spare, st.chunks[it.chunk].b[it.at:it.at+int(it.n)]...)
			st.unref(it.chunk, int(it.n))
			it.at, it.st = at, -1
			continue
		}
		at := len(q.spare)
		q.spare = append(q.spare, q.arena[it.at:it.at+int(it.n)]...)
		it.at = at
	}
	q.arena, q.spare = q.spare, q.arena
}

// timestamp returns the time the kernel record of type typ and bytes data
// is ordered by: the sample's
// TIME, or the TIME of the sample_id trailer. ok is false when it has none,
// or it is 0 or all ones: perf delivers those at once (-ETIME in
// ordered_events__queue's callers).
func (rs *Records) timestamp(typ RecordType, data []byte) (uint64, bool) {
	es := rs.p.events
	if es == nil {
		return 0, false
	}
	idx := es.lookup(typ, data, rs.p.order)
	if idx < 0 {
		return 0, false
	}
	a := &es.events[idx].Attr
	st := a.SampleType
	if st&SampleTime == 0 || st >= sampleTypeMax {
		return 0, false
	}
	var off int
	if typ == RecordSample {
		off = 8
		if st&SampleIdentifier != 0 {
			off += 8
		}
		if st&SampleIP != 0 {
			off += 8
		}
		if st&SampleTID != 0 {
			off += 8
		}
	} else {
		if !a.SampleIDAll() {
			return 0, false
		}
		off = len(data) - idHeaderSize(st)
		if off < 8 {
			return 0, false
		}
		if st&SampleTID != 0 {
			off += 8
		}
	}
	if off+8 > len(data) {
		return 0, false
	}
	var ts uint64
	if rs.p.order == binary.LittleEndian {
		ts = binary.LittleEndian.Uint64(data[off:])
	} else {
		ts = rs.p.order.Uint64(data[off:])
	}
	if ts == 0 || ts == ^uint64(0) {
		return 0, false
	}
	return ts, true
}

func (rs *Records) nextOrdered() (Record, error) {
	q := &rs.oq
	if q.streams == nil {
		q.streams = rs.streams
		for _, st := range rs.streams {
			if !rs.tune.copyQueued {
				st.startChunked()
			}
		}
	}
	for {
		if q.flushing {
			if !q.sorted {
				q.startFlush()
			}
			if q.pos < q.end {
				// Decoded from rs.raw, which decode would copy it to.
				q.item(q.pos, &rs.raw)
				q.pos++
				return rs.p.decode(&rs.raw)
			}
			q.flushing = false
			q.endFlush()
			if q.hasPending {
				q.hasPending = false
				raw := q.pending
				raw.data = q.pendingBuf[:]
				return rs.decode(raw)
			}
			if q.final {
				if q.finalErr != nil {
					return nil, q.finalErr
				}
				return nil, io.EOF
			}
		}
		if rs.pushInPlace() {
			if q.bytes > rs.tune.queueLimit() {
				q.flushHalf()
			}
			continue
		}
		raw, err := rs.nextRawOrdered()
		if err != nil {
			// Deliver what is queued, then the error (or the end).
			q.final, q.flushing = true, true
			if err != io.EOF {
				q.finalErr = err
			}
			continue
		}
		if raw.typ == RecordFinishedRound && len(raw.data) == 8 {
			q.limit = q.nextFlush
			q.nextFlush = q.maxTS
			q.flushing = true
			q.hasPending = true
			q.pending = raw
			copy(q.pendingBuf[:], raw.data)
			continue
		}
		if raw.typ.IsUser() {
			return rs.decode(raw)
		}
		ts, ok := rs.timestamp(raw.typ, raw.data)
		if !ok {
			return rs.decode(raw)
		}
		q.push(ts, &raw, rs.cur)
		if q.bytes > rs.tune.queueLimit() {
			q.flushHalf()
		}
	}
}

// flushHalf starts delivering the earlier half of the queue: with no
// FINISHED_ROUND for too long (perf before 3.x wrote none, nor do the
// data.N files of perf record --threads) the queue reached its limit, and
// perf's OE_FLUSH__HALF does the same.
func (q *orderQueue) flushHalf() {
	q.sortItems()
	q.limit = q.items[len(q.items)/2].ts
	q.flushing = true
}

// maxQueueBytes bounds the records the ordered queue holds.
const maxQueueBytes = 64 << 20

// readTuning is what tests change of one iteration, so that they can
// compare two ways of reading side by side; its zero value is what every
// reader gets.
type readTuning struct {
	// copyQueued makes the ordered queue copy every record, as it did
	// before streams kept their chunks (the reference the chunks are
	// compared with).
	copyQueued bool
	// maxQueueBytes, when not 0, replaces the const maxQueueBytes (a
	// small limit makes a fixture overflow the queue).
	maxQueueBytes int
	// readAhead chooses the streams read ahead (see prefetchStreams).
	readAhead readAhead
}

// readAhead chooses the streams a time-ordered iteration reads ahead.
type readAhead uint8

const (
	readAheadLarge  readAhead = iota // streams of at least prefetchMin bytes
	readAheadAlways                  // every stream of known size
	readAheadNever
)

func (t readTuning) queueLimit() int {
	if t.maxQueueBytes != 0 {
		return t.maxQueueBytes
	}
	return maxQueueBytes
}

// nextRawOrdered reads the next raw record; with several streams (a
// perf.data directory) it reads each for readerBudget bytes in turn.
func (rs *Records) nextRawOrdered() (rawRecord, error) {
	if len(rs.streams) <= 1 {
		return rs.nextRaw()
	}
	for {
		live := false
		for _, st := range rs.streams {
			if !st.done {
				live = true
				break
			}
		}
		if !live {
			return rawRecord{}, io.EOF
		}
		st := rs.streams[rs.cur]
		if st.done || st.pos-rs.budgetStart >= readerBudget {
			rs.cur = (rs.cur + 1) % len(rs.streams)
			rs.budgetStart = rs.streams[rs.cur].pos
			continue
		}
		rec, err := st.next()
		if err == io.EOF {
			st.done = true
			continue
		}
		return rec, err
	}
}
