package check

// rawTable is the raw-stack cache (session.stackOf): open addressing with
// linear probing over 64-byte slots, one raw stack each, so that a sample
// whose raw stack was seen before touches one cache line for everything it
// needs: its resolved stack, the aggregate it feeds, and the counts it adds
// to it, where a Go map of indexes into a slice of entries, each pointing
// to its aggregate, touches several unrelated cache lines a sample.
//
// The counts of a raw stack's samples are kept in its slot and added to
// its aggregate when the slot starts feeding another one (a thread or comm
// of the process changed), when the table starts over, and by flush before
// the aggregates are read (session.finish).
type rawTable struct {
	slots []rawSlot // len is a power of two, or 0
	n     int       // slots in use
	aggs  *aggTable // where the slots' aggregates are
}

// rawSlot is one raw stack in the table; 64 bytes, so that a slot never
// straddles two cache lines (the slot array, a large allocation, starts
// on a page).
type rawSlot struct {
	key             rawKey // the zero key marks an empty slot
	stack           int32  // the resolved stack's id
	event, comm     int32  // with tid, the aggregate the slot feeds
	tid             uint32
	agg             int32  // its position in the aggTable + 1; 0: none yet
	samples, period uint64 // counted here, not yet added to agg
	_               [8]byte
}

// flushCounts adds the slot's counts to its aggregate.
func (t *rawTable) flushCounts(sl *rawSlot) {
	if sl.agg != 0 {
		a := t.aggs.at(sl.agg - 1)
		a.samples += sl.samples
		a.period += sl.period
	}
	sl.samples, sl.period = 0, 0
}

// find returns the slot of key, or nil.
func (t *rawTable) find(key rawKey) *rawSlot {
	if len(t.slots) == 0 {
		return nil
	}
	key = nonZero(key)
	mask := uint64(len(t.slots) - 1)
	for i := key[0] & mask; ; i = (i + 1) & mask {
		sl := &t.slots[i]
		if sl.key == key {
			return sl
		}
		if sl.key == (rawKey{}) {
			return nil
		}
	}
}

// touch reads the first word of the slot where a lookup of key starts and
// returns it, for the caller to keep (so the read is not dropped): run over
// the next samples before they are looked up, it has their slots' cache
// misses overlap instead of being taken one at a time.
func (t *rawTable) touch(key rawKey) uint64 {
	if len(t.slots) == 0 {
		return 0
	}
	return t.slots[nonZero(key)[0]&uint64(len(t.slots)-1)].key[0]
}

// insert adds key, which is not in the table, with the resolved stack id
// and returns its slot. Past max raw stacks the table starts over (it is
// only a shortcut), after adding every slot's counts to its aggregate.
func (t *rawTable) insert(key rawKey, stack int32, max int) *rawSlot {
	key = nonZero(key)
	if t.n >= max {
		t.startOver()
	}
	if (t.n+1)*4 > len(t.slots)*3 {
		t.grow()
	}
	mask := uint64(len(t.slots) - 1)
	i := key[0] & mask
	for t.slots[i].key != (rawKey{}) {
		i = (i + 1) & mask
	}
	t.n++
	t.slots[i] = rawSlot{key: key, stack: stack}
	return &t.slots[i]
}

// grow doubles the table, keeping every slot as it is.
func (t *rawTable) grow() {
	old := t.slots
	t.slots = make([]rawSlot, max(2*len(old), 1024))
	mask := uint64(len(t.slots) - 1)
	for k := range old {
		sl := &old[k]
		if sl.key == (rawKey{}) {
			continue
		}
		i := sl.key[0] & mask
		for t.slots[i].key != (rawKey{}) {
			i = (i + 1) & mask
		}
		t.slots[i] = *sl
	}
}

// startOver empties the table, after adding every slot's counts to its
// aggregate.
func (t *rawTable) startOver() {
	t.flush()
	clear(t.slots)
	t.n = 0
}

// flush adds every slot's counts to its aggregate.
func (t *rawTable) flush() {
	for k := range t.slots {
		t.flushCounts(&t.slots[k])
	}
}

// nonZero maps the one digest that would read as an empty slot to another.
func nonZero(k rawKey) rawKey {
	if k == (rawKey{}) {
		k[0] = 1
	}
	return k
}
