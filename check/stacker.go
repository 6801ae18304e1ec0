package check

// Where stacks rarely repeat (a build: many short processes, stacks walked
// through garbage frame pointers), the session's goroutine does most of
// the work of a reading that keeps stacks (top, pprof): for each sample
// not in the raw-stack cache it resolves every frame, then interns the
// stack and finds its aggregate, in tables far larger than the CPU's
// caches. The two halves touch disjoint state: resolving needs the
// address spaces, the location memo and the raw-stack cache; interning
// and aggregating need the stacks and the aggregates. So, when feed
// pipelines, samples are counted by stack and the raw-stack cache misses
// (stackerDue), a third goroutine, the stacker, does the second half: the
// session's goroutine hands it, in batches and in order, each sample's
// raw-stack number (the cache numbers the raw stacks it takes in order,
// from 0 each time it starts over), with the resolved stack when the raw
// stack is new, and what names its aggregate. Stacks and aggregates are then made in
// the order of the samples, as on one goroutine, so that their ids and
// the results are the same (TestFeedSameAsDirect).

const (
	stackerBatches = 4
	stackerOps     = 4096    // samples a batch holds (tests lower it with Options.batchOps)
	stackerRefs    = 1 << 18 // location ids of new stacks a batch holds
)

// stackerOp is one sample for the stacker.
type stackerOp struct {
	raw    int32 // the raw stack's number in the cache (the slot's stack field)
	nrefs  int32 // the new raw stack's location ids in the batch's refs; -1: a known raw stack
	key    aggKey
	period uint64
}

// stackerBatch is a run of samples, in order.
type stackerBatch struct {
	ops  []stackerOp
	refs []int32
}

// stacker interns stacks and counts aggregates on its own goroutine.
type stacker struct {
	s      *session
	maxOps int
	cur    *stackerBatch
	work   chan *stackerBatch
	free   chan *stackerBatch
	done   chan struct{}
	// raws is, by raw-stack number, what the raw-stack cache's slot
	// holds when the session keeps stacks on its own goroutine: the
	// stack, the aggregate it fed last and the counts not yet added to
	// it. Only the stacker touches it.
	raws []rawSlot
	// hashes are the hashes of a batch's new stacks; touched is what
	// apply's reads of their slots read (kept so they stay).
	hashes  []uint64
	touched uint64
}

// stackerDue reports whether the stacker should take over from now on,
// and starts it when so. Where raw stacks repeat (a few threads' deep
// stacks), a sample is mostly a hit in the raw-stack cache, whose slot
// does the counting on the session's goroutine at the cost of one cache
// line: handing every sample over would cost more than it saves. So, as
// rawCacheOff judges the cache, the stacker starts once, over rawProbe
// samples, under half of them hit the cache. The cache then starts over
// (its slots name stacks, the stacker's name raw-stack numbers), which
// changes nothing but what is resolved again.
func (s *session) stackerDue() bool {
	probe := uint64(rawProbe)
	if s.opts.rawProbe > 0 {
		probe = s.opts.rawProbe
	}
	if s.rawTries++; s.rawTries < probe {
		return false
	}
	if s.rawHits*2 >= s.rawTries {
		s.rawTries, s.rawHits = 0, 0
		return false
	}
	s.raws.startOver()
	s.startStacker(s.stackerOps)
	return true
}

// startStacker starts the stacker; maxOps bounds a batch's samples.
func (s *session) startStacker(maxOps int) {
	k := &stacker{s: s, maxOps: maxOps, work: make(chan *stackerBatch, stackerBatches),
		free: make(chan *stackerBatch, stackerBatches), done: make(chan struct{})}
	for range stackerBatches {
		k.free <- &stackerBatch{ops: make([]stackerOp, 0, maxOps), refs: make([]int32, 0, stackerRefs)}
	}
	k.cur = <-k.free
	go func() {
		defer close(k.done)
		for b := range k.work {
			k.apply(b)
			b.ops, b.refs = b.ops[:0], b.refs[:0]
			k.free <- b
		}
		k.flush()
	}()
	s.stacker = k
}

// stopStacker hands over the last batch and waits for the stacker to
// have applied every sample; the session's stacks and aggregates are then
// complete.
func (s *session) stopStacker() {
	s.stackerOps = 0
	k := s.stacker
	if k == nil {
		return
	}
	s.stacker = nil
	if len(k.cur.ops) > 0 {
		k.work <- k.cur
	}
	close(k.work)
	<-k.done
}

// add hands the stacker sample raw's aggregate key and period, with refs,
// its resolved stack, when the raw stack is new (else nil).
func (k *stacker) add(raw int32, refs []int32, key aggKey, period uint64) {
	b := k.cur
	if len(b.ops) >= k.maxOps || len(b.refs)+len(refs) > stackerRefs && len(b.ops) > 0 {
		k.work <- b
		b = <-k.free
		k.cur = b
	}
	op := stackerOp{raw: raw, nrefs: -1, key: key, period: period}
	if refs != nil {
		op.nrefs = int32(len(refs))
		b.refs = append(b.refs, refs...)
	}
	b.ops = append(b.ops, op)
}

// apply interns the batch's new stacks and counts its samples, as
// session.sample does with the raw-stack cache's slots. It first hashes
// every new stack of the batch and reads the stack table's slot where its
// lookup starts: those reads do not depend on one another, so their cache
// misses (the table is far larger than the caches where stacks rarely
// repeat) overlap instead of being taken one after the other.
func (k *stacker) apply(b *stackerBatch) {
	s := k.s
	k.hashes = k.hashes[:0]
	var touched uint64
	next := 0
	for i := range b.ops {
		if n := int(b.ops[i].nrefs); n >= 0 {
			h := s.stackIdx.hash(b.refs[next : next+n])
			next += n
			k.hashes = append(k.hashes, h)
		}
	}
	// A loop of its own, so that many reads are in flight at once.
	for _, h := range k.hashes {
		touched += s.stackIdx.touch(h)
	}
	k.touched += touched
	next = 0
	nh := 0
	for i := range b.ops {
		op := &b.ops[i]
		if int(op.raw) >= len(k.raws) {
			k.raws = append(k.raws, make([]rawSlot, int(op.raw)+1-len(k.raws))...)
		}
		sl := &k.raws[op.raw]
		if op.nrefs >= 0 {
			// The cache gave the number to a new raw stack: the
			// one it named before (if any) is gone from it.
			s.raws.flushCounts(sl)
			refs := b.refs[next : next+int(op.nrefs)]
			next += int(op.nrefs)
			*sl = rawSlot{stack: s.internHashed(refs, k.hashes[nh])}
			nh++
		}
		key := op.key
		key.stack = sl.stack
		if sl.agg == 0 || sl.event != key.event || sl.tid != key.tid || sl.comm != key.comm {
			s.raws.flushCounts(sl)
			sl.agg = s.aggs.find(key) + 1
			sl.event, sl.tid, sl.comm = key.event, key.tid, key.comm
		}
		sl.samples++
		sl.period += op.period
	}
}

// flush adds every raw stack's counts to its aggregate.
func (k *stacker) flush() {
	for i := range k.raws {
		k.s.raws.flushCounts(&k.raws[i])
	}
}

// stackedSample is session.sample's counting when the stacker interns:
// it finds e's raw stack in the cache, resolves it when new, and hands
// the rest to the stacker.
func (s *session) stackedSample(e *sampleEvent) {
	pg, kg := s.tracker.Generation(e.PID)
	user := s.userFrames(e)
	var key rawKey
	if e.keyed && e.User == nil && e.keyPG == pg && e.keyKG == kg {
		key = e.key
	} else {
		key = s.rawKeyOf(e, pg, kg, user)
	}
	var refs []int32
	sl := s.raws.find(key)
	if sl != nil {
		s.rawHits++
	} else {
		refs = s.locsOf(e, user, pg, kg, s.refBuf[:0])
		s.refBuf = refs
		sl = s.raws.insert(key, 0, s.rawEntries())
		// Numbers are the cache's count of raw stacks: they start
		// over with it, and a number is given again only to a new raw
		// stack, which comes with its refs.
		sl.stack = int32(s.raws.n - 1)
	}
	comm := s.commID(s.tracker.ThreadComm(e.TID))
	s.stacker.add(sl.stack, refs, aggKey{event: int32(e.Event), pid: e.PID, tid: e.TID, comm: comm}, e.Period)
}
