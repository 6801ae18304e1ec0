package check

import (
	"context"
	"hash/maphash"
	"runtime"

	"github.com/perfcheck/perfcheck/buildid"
	"github.com/perfcheck/perfcheck/perfdata"
	"github.com/perfcheck/perfcheck/unwind"
)

// Reading a recording and checking its samples are two halves of similar
// cost (decoding and time-ordering the records; resolving and aggregating
// the stacks). session.feed runs them on two goroutines, so that they
// overlap on two cores: the reader converts records into batches, which
// carry copies of what the perfdata iterator reuses (callchains, user
// registers and stack copies), and the session consumes the batches in the
// same order. The order of everything the session sees is exactly the
// serial one, so results are identical; with one CPU (GOMAXPROCS 1) or
// Options.Workers 1 each batch is consumed as soon as it is full, on the
// caller's goroutine.
//
// Options.Progress is called by the reader, which runs on the caller's
// goroutine, never concurrently with itself, and never after Analyze
// returns.
//
// A few batches circulate between the two goroutines (feedBatches), so
// memory in flight is bounded by feedBatches × (feedBatchWords × 8 +
// feedBatchOps × the size of a record's entry + feedBatchBytes) whatever
// the size of the recording. A batch holds many samples, so that handing
// one over, which wakes a goroutine, is rare next to the work on it.
const (
	feedBatches    = 4
	feedBatchOps   = 2048      // records (tests lower it with Options.batchOps)
	feedBatchWords = 128 << 10 // callchain entries and user registers
	feedBatchBytes = 1 << 20   // user stack copies (--call-graph dwarf)
)

// feedOp is one record as the session takes it, kept small (64 bytes, a cache line):
// every sample has one, and they cross from one core to the other. What
// samples rarely have (a user stack copy) and the other records are in
// the batch's side slices.
type feedOp struct {
	time, period, ip uint64
	event            int32
	pid, tid         uint32
	cpu              uint32
	chainLo, chainHi int32  // the callchain in words; chainLo < 0: none (nil)
	chainHash        uint64 // the first half of sampleEvent.chainHash
	// aux indexes users for a sample (-1: no user stack to unwind) and
	// others for the other records.
	aux       int32
	sample    bool // a sample; otherwise the record others[aux]
	mode      perfdata.CPUMode
	stackUser bool // the sample has a user stack copy (sampleEvent.StackUser)
}

// feedUser is a sample's user stack copy (--call-graph dwarf): its
// registers in the batch's words, the copy in its bytes.
type feedUser struct {
	mask                uint64
	regsLo, regs        int32
	stackLo, stackBytes int32
}

// aheadKey is a sample's raw-stack key as apply takes it ahead.
type aheadKey struct {
	chainHash [2]uint64 // the callchain's digest (sampleEvent.chainHash)
	key       rawKey
	pg, kg    uint64
	ok        bool
}

// feedBatch is a run of consecutive records.
type feedBatch struct {
	maxOps int // the most records it holds
	ops    []feedOp
	users  []feedUser
	// others are the records other than samples, copied out of the
	// reader's storage (copyUpdate).
	others []perfdata.Record
	// addrs, when the session keeps them (session.keepAddr), is each
	// sample's PERF_SAMPLE_ADDR, in the order of the sample ops: few
	// runs need it, and the op has no room left in its cache line.
	addrs []uint64
	// branches, with Options.Branches, are the samples' branch
	// addresses, in the order of the sample ops (appendBranchAddrs).
	branches []uint64
	words    []uint64
	bytes    []byte
}

// newFeedBatch returns an empty batch of at most maxOps records.
func newFeedBatch(maxOps int) *feedBatch {
	return &feedBatch{maxOps: maxOps, ops: make([]feedOp, 0, maxOps), words: make([]uint64, 0, feedBatchWords)}
}

func (b *feedBatch) reset() {
	b.ops = b.ops[:0]
	b.users = b.users[:0]
	clear(b.others) // drop the records
	b.others = b.others[:0]
	b.addrs = b.addrs[:0]
	b.branches = b.branches[:0]
	b.words = b.words[:0]
	b.bytes = b.bytes[:0]
}

// full reports whether the batch should be handed over before a record
// needing nw words and nb bytes is added.
func (b *feedBatch) full(nw, nb int) bool {
	return len(b.ops) >= b.maxOps ||
		len(b.ops) > 0 && (len(b.words)+nw > feedBatchWords || len(b.bytes)+nb > feedBatchBytes)
}

// other appends a record other than a sample, which the batch keeps.
func (b *feedBatch) other(r perfdata.Record) {
	b.ops = append(b.ops, feedOp{aux: int32(len(b.others))})
	b.others = append(b.others, r)
}

// feed reads every record of f in time order (perf's ordered delivery) and
// feeds the session.
func (s *session) feed(ctx context.Context, f recording) error {
	defer s.unwindContext(ctx)() // unwinding's lookups (unwind.go)
	maxOps := s.opts.batchOps
	if maxOps <= 0 {
		maxOps = feedBatchOps
	}
	if runtime.GOMAXPROCS(0) < 2 || s.opts.Workers == 1 {
		return s.read(ctx, f, newFeedBatch(maxOps), func(full *feedBatch) *feedBatch {
			s.apply(full)
			full.reset()
			return full
		})
	}
	work := make(chan *feedBatch, feedBatches)
	free := make(chan *feedBatch, feedBatches)
	for range feedBatches {
		free <- newFeedBatch(maxOps)
	}
	if !s.bySignature() {
		s.stackerOps = min(maxOps, stackerOps) // started by stackerDue
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for b := range work {
			s.apply(b)
			b.reset()
			free <- b
		}
	}()
	err := s.read(ctx, f, <-free, func(full *feedBatch) *feedBatch {
		work <- full
		return <-free
	})
	close(work)
	<-done
	s.stopStacker()
	return err
}

// read converts f's records into batches, handing each full one (and the
// last) to handoff, which returns an empty batch to go on with. It runs on
// its own goroutine when feed pipelines: it touches nothing of the session
// but its options and its raw-stack seeds, both fixed when it was made.
func (s *session) read(ctx context.Context, f recording, b *feedBatch, handoff func(*feedBatch) *feedBatch) error {
	events := f.Events()
	// A File's build-id table was taken before reading (addEarlyBuildIDs);
	// a stream's HEADER_BUILD_ID records are taken as they arrive.
	_, stream := f.(*perfdata.Reader)
	rs := f.Records(perfdata.RecordsOptions{Ordered: true})
	n := 0
	for rs.Next() {
		if n++; n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				if len(b.ops) > 0 {
					handoff(b)
				}
				return err
			}
			if s.opts.Progress != nil {
				s.opts.Progress(Progress{Phase: PhaseRead, Offset: rs.Record().Header().Offset})
			}
		}
		if r, ok := rs.Record().(*perfdata.Sample); ok {
			if r.EventIndex >= len(events) {
				// A stream (perfdata.Reader) learns its events from the
				// attr records as they pass, after f.Events was first
				// asked: without them a sample's user registers could
				// not be read and its stack copy would go unwound.
				events = f.Events()
			}
			b = s.addSample(b, r, events, handoff)
			continue
		}
		if r := copyUpdate(rs.Record(), stream); r != nil {
			if b.full(0, 0) {
				b = handoff(b)
			}
			b.other(r)
		}
	}
	if len(b.ops) > 0 {
		handoff(b)
	}
	return rs.Err()
}

// addSample adds sample r to b, or to the batch handoff returns for b
// when b is full; it returns the batch it added to.
func (s *session) addSample(b *feedBatch, r *perfdata.Sample, events []perfdata.Event, handoff func(*feedBatch) *feedBatch) *feedBatch {
	if s.opts.Replay && !s.addrDecided {
		s.decideAddr(events)
	}
	mask, regs, stack, userOK := userStack(r, events)
	if b.full(len(r.Callchain)+len(regs), len(stack)) {
		b = handoff(b)
	}
	op := feedOp{
		sample:    true,
		event:     int32(max(r.EventIndex, 0)),
		pid:       r.PID(),
		tid:       r.TID(),
		cpu:       r.CPU(),
		time:      r.Time(),
		period:    samplePeriod(r, events),
		mode:      r.CPUMode(),
		ip:        r.IP,
		stackUser: len(r.StackUser) > 0,
		chainLo:   -1,
		chainHi:   -1,
		aux:       -1,
	}
	if r.Callchain != nil {
		// The first half of the callchain's digest; apply takes the
		// second, so that the two goroutines' work stays balanced (this
		// one also reads and orders the file). Once the raw-stack
		// cache is off, no digest is needed.
		if !s.rawOffRead.Load() {
			op.chainHash = maphash.Bytes(s.rawSeeds[0], u64Bytes(r.Callchain))
		}
		op.chainLo = int32(len(b.words))
		b.words = append(b.words, r.Callchain...)
		op.chainHi = int32(len(b.words))
	}
	if userOK {
		u := feedUser{mask: mask,
			regsLo: int32(len(b.words)), regs: int32(len(regs)),
			stackLo: int32(len(b.bytes)), stackBytes: int32(len(stack))}
		b.words = append(b.words, regs...)
		b.bytes = append(b.bytes, stack...)
		op.aux = int32(len(b.users))
		b.users = append(b.users, u)
	}
	if s.keepAddr {
		b.addrs = append(b.addrs, r.Addr)
	}
	if s.opts.Branches {
		b.branches = appendBranchAddrs(b.branches, r)
	}
	b.ops = append(b.ops, op)
	return b
}

// samplePeriod is r's period: without PERF_SAMPLE_PERIOD perf uses the
// event's attr.sample_period.
func samplePeriod(r *perfdata.Sample, events []perfdata.Event) uint64 {
	if r.Fields&perfdata.SamplePeriod == 0 && r.EventIndex >= 0 && r.EventIndex < len(events) {
		return events[r.EventIndex].Attr.SamplePeriod
	}
	return r.Period
}

// userStack returns r's 64-bit user stack copy (--call-graph dwarf) with
// its registers and their mask, when it has one its event describes.
func userStack(r *perfdata.Sample, events []perfdata.Event) (mask uint64, regs []uint64, stack []byte, ok bool) {
	if r.RegsUserABI != 2 || len(r.StackUser) == 0 || r.EventIndex < 0 || r.EventIndex >= len(events) {
		return 0, nil, nil, false
	}
	return events[r.EventIndex].Attr.SampleRegsUser, r.RegsUser, r.StackUser[:min(r.StackUserDynSize, uint64(len(r.StackUser)))], true
}

// copyUpdate returns a copy of r, which the reader will reuse, when it is
// a record the session's tracker takes (session.update), or, from a
// stream, a build-id record (streamBuildID); nil otherwise. EXIT records
// are not copied: they change no address space.
func copyUpdate(r perfdata.Record, stream bool) perfdata.Record {
	switch r := r.(type) {
	case *perfdata.BuildIDRecord:
		if !stream {
			return nil
		}
		c := *r
		c.Entry.BuildID = append(buildid.ID(nil), r.Entry.BuildID...)
		return &c
	case *perfdata.Mmap:
		c := *r
		return &c
	case *perfdata.Mmap2:
		c := *r
		if r.HasBuildID() {
			c.BuildID = append(buildid.ID(nil), r.BuildID...)
		}
		return &c
	case *perfdata.Comm:
		c := *r
		return &c
	case *perfdata.Fork:
		c := *r
		return &c
	}
	return nil
}

// apply feeds a batch's records to the session, in order. It first
// completes each callchain's digest (read took the first half), takes the
// raw-stack key of every sample without a user stack copy under the
// maps' generations as they are now and reads the first word of its cache
// slot: those reads do not depend on one another, so their cache misses
// (the raw-stack cache need not fit in the CPU's caches) overlap instead
// of being taken one after the other, sample by sample. A sample
// whose generations changed before it is applied (a map record earlier in
// the batch) has its key taken again.
func (s *session) apply(b *feedBatch) {
	var se sampleEvent
	var us unwind.UserStack
	keys := s.keyBuf[:0]
	var touched uint64
	for i := range b.ops {
		op := &b.ops[i]
		var k aheadKey
		if op.sample && op.chainLo >= 0 && !s.rawOff {
			// Kept here, not written into the op: the reader writes
			// the batch's ops again once it is handed back, and taking
			// back lines this core wrote costs it more.
			k.chainHash = [2]uint64{op.chainHash,
				maphash.Bytes(s.rawSeeds[1], u64Bytes(b.words[op.chainLo:op.chainHi]))}
		}
		if op.sample && op.aux < 0 && !s.rawOff {
			k.pg, k.kg = s.tracker.Generation(op.pid)
			e := sampleEvent{PID: op.pid, Mode: op.mode, IP: op.ip,
				chainHash: k.chainHash, chainHashed: op.chainLo >= 0}
			if op.chainLo >= 0 {
				e.Callchain = b.words[op.chainLo:op.chainHi:op.chainHi]
			}
			k.key, k.ok = s.rawKeyOf(&e, k.pg, k.kg, nil), true
		}
		keys = append(keys, k)
	}
	// A loop of its own, so that many reads are in flight at once.
	for i := range keys {
		if keys[i].ok {
			touched += s.raws.touch(keys[i].key)
		}
	}
	s.keyBuf = keys
	s.touched += touched
	nsample, brAt := 0, 0
	var brs []uint64
	for i := range b.ops {
		op := &b.ops[i]
		if !op.sample {
			if r, ok := b.others[op.aux].(*perfdata.BuildIDRecord); ok {
				s.streamBuildID(r.Entry)
				continue
			}
			s.update(b.others[op.aux])
			continue
		}
		k := &keys[i]
		se = sampleEvent{Event: int(op.event), PID: op.pid, TID: op.tid, CPU: op.cpu, Time: op.time,
			Period: op.period, Mode: op.mode, IP: op.ip, StackUser: op.stackUser,
			key: k.key, keyPG: k.pg, keyKG: k.kg, keyed: k.ok}
		if op.chainLo >= 0 {
			se.Callchain = b.words[op.chainLo:op.chainHi:op.chainHi]
			se.chainHash, se.chainHashed = k.chainHash, true
		}
		if nsample < len(b.addrs) {
			se.Addr = b.addrs[nsample]
		}
		nsample++
		brs, brAt = nextBranchAddrs(b.branches, brAt)
		if op.aux >= 0 {
			u := &b.users[op.aux]
			us = unwind.UserStack{Mask: u.mask,
				Regs:  b.words[u.regsLo : u.regsLo+u.regs : u.regsLo+u.regs],
				Stack: b.bytes[u.stackLo : u.stackLo+u.stackBytes : u.stackLo+u.stackBytes]}
			se.User = &us
		}
		if s.filter != nil && !s.filter.keep(s, &se) {
			continue
		}
		s.sample(&se)
		if s.keepAddr && s.addrNamed[se.Event] {
			s.resolveAddr(&se, se.Addr)
		}
		s.resolveBranches(&se, brs)
	}
}
