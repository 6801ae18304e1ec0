package perfdata

import (
	"container/heap"
	"io"
)

// orderQueue is the time-ordered queue of RecordsOptions.Ordered, after
// perf's ordered_events (tools/perf/util/ordered-events.c) and
// perf_event__process_finished_round (session.c): kernel records with a
// timestamp are queued; at each FINISHED_ROUND the queue is flushed up to
// the largest timestamp seen by the end of the previous round; at the end
// everything is flushed. Equal timestamps keep input order (seq).
//
// Queued records are kept as raw bytes in an arena and decoded when
// delivered, so the decoded structs can still be reused. After each flush
// the records left are compacted into a second arena: memory stays bounded
// by what one round holds.
type orderQueue struct {
	items        queueHeap
	arena, spare []byte
	seq          uint64

	maxTS     uint64 // largest timestamp queued so far
	nextFlush uint64 // limit for the next FINISHED_ROUND flush
	limit     uint64 // limit of the flush in progress
	flushing  bool
	final     bool  // end of input: flush everything
	finalErr  error // the error that ended the input, returned after the flush

	// The FINISHED_ROUND record that started the flush, delivered after it.
	hasPending bool
	pending    rawRecord
	pendingBuf [8]byte
}

type queued struct {
	ts    uint64
	seq   uint64
	at, n int // bytes in the arena
	raw   rawRecord
}

type queueHeap []queued

func (h queueHeap) Len() int { return len(h) }
func (h queueHeap) Less(i, j int) bool {
	if h[i].ts != h[j].ts {
		return h[i].ts < h[j].ts
	}
	return h[i].seq < h[j].seq
}
func (h queueHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *queueHeap) Push(x any)   { *h = append(*h, x.(queued)) }
func (h *queueHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (q *orderQueue) push(ts uint64, raw rawRecord) {
	it := queued{ts: ts, seq: q.seq, at: len(q.arena), n: len(raw.data)}
	q.seq++
	q.arena = append(q.arena, raw.data...)
	raw.data = nil
	it.raw = raw
	// heap.Push boxes its argument; append and fix up by hand instead.
	q.items = append(q.items, it)
	heap.Fix(&q.items, len(q.items)-1)
	if ts > q.maxTS {
		q.maxTS = ts
	}
}

// popRaw removes the earliest record and returns it with its bytes.
func (q *orderQueue) popRaw() rawRecord {
	it := q.items[0]
	last := len(q.items) - 1
	q.items[0] = q.items[last]
	q.items = q.items[:last]
	if last > 0 {
		heap.Fix(&q.items, 0)
	}
	raw := it.raw
	raw.data = q.arena[it.at : it.at+it.n : it.at+it.n]
	return raw
}

// compact moves the records still queued to the spare arena.
func (q *orderQueue) compact() {
	if len(q.items) == 0 {
		q.arena = q.arena[:0]
		return
	}
	q.spare = q.spare[:0]
	for i := range q.items {
		it := &q.items[i]
		at := len(q.spare)
		q.spare = append(q.spare, q.arena[it.at:it.at+it.n]...)
		it.at = at
	}
	q.arena, q.spare = q.spare, q.arena
}

// timestamp returns the time a kernel record is ordered by: the sample's
// TIME, or the TIME of the sample_id trailer. ok is false when it has none,
// or it is 0 or all ones: perf delivers those at once (-ETIME in
// ordered_events__queue's callers).
func (rs *Records) timestamp(raw *rawRecord) (uint64, bool) {
	es := rs.p.events
	if es == nil {
		return 0, false
	}
	idx := es.lookup(raw.typ, raw.data, rs.p.order)
	if idx < 0 {
		return 0, false
	}
	a := &es.events[idx].Attr
	st := a.SampleType
	if st&SampleTime == 0 || st >= sampleTypeMax {
		return 0, false
	}
	var off int
	if raw.typ == RecordSample {
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
		off = len(raw.data) - idHeaderSize(st)
		if off < 8 {
			return 0, false
		}
		if st&SampleTID != 0 {
			off += 8
		}
	}
	if off+8 > len(raw.data) {
		return 0, false
	}
	ts := rs.p.order.Uint64(raw.data[off:])
	if ts == 0 || ts == ^uint64(0) {
		return 0, false
	}
	return ts, true
}

func (rs *Records) nextOrdered() (Record, error) {
	q := &rs.oq
	for {
		if q.flushing {
			if len(q.items) > 0 && (q.final || q.items[0].ts <= q.limit) {
				raw := q.popRaw()
				return rs.decode(raw)
			}
			q.flushing = false
			q.compact()
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
		ts, ok := rs.timestamp(&raw)
		if !ok {
			return rs.decode(raw)
		}
		q.push(ts, raw)
	}
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
