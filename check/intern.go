package check

import (
	"hash/maphash"
	"math/bits"
	"math/rand/v2"
	"slices"
)

// The session interns every distinct location (a DSO and an offset in it)
// and every distinct stack (a run of location ids). On recordings whose
// stacks rarely repeat (a build: many short-lived processes, stacks
// without frame pointers) every frame of most samples is looked up in the
// first table and every sample's stack in the second, so both are open
// addressing over flat arrays, which a lookup touches in one place (the
// slots are 16 and 8 bytes): a Go map's lookup reads a group's control
// word and then its slots, two cache misses on tables far larger than the
// caches. Both are hashed with seeds drawn per session, so that input
// cannot aim its keys at one run of slots.

// mix is a seeded 64-bit hash of two words (the multiply-and-fold of
// wyhash), good enough to spread keys over a power-of-two table by its
// high bits.
func mix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// locTable interns locations: (DSO index, offset) → location id.
type locTable struct {
	slots []locSlot // len a power of two, or 0
	n     int
	shift uint // 64 - log2(len(slots))
	seed  [2]uint64
}

// locSlot is one location; id is the location id + 1 (0: empty).
type locSlot struct {
	off uint64
	dso int32
	id  int32
}

func newLocTable() locTable {
	return locTable{seed: [2]uint64{rand.Uint64() | 1, rand.Uint64() | 1}}
}

func (t *locTable) hash(r frameRef) uint64 {
	return mix(r.off^t.seed[0], uint64(uint32(r.dso))^t.seed[1])
}

// find returns r's id, or the id next (which becomes r's) when r is new;
// new reports which.
func (t *locTable) find(r frameRef, next int32) (id int32, added bool) {
	if (t.n+1)*4 > len(t.slots)*3 {
		t.grow()
	}
	mask := uint64(len(t.slots) - 1)
	for i := t.hash(r) >> t.shift; ; i = (i + 1) & mask {
		sl := &t.slots[i]
		if sl.id == 0 {
			*sl = locSlot{off: r.off, dso: r.dso, id: next + 1}
			t.n++
			return next, true
		}
		if sl.off == r.off && sl.dso == r.dso {
			return sl.id - 1, false
		}
	}
}

// grow doubles the table (to 4,096 slots at first).
func (t *locTable) grow() {
	old := t.slots
	n := max(2*len(old), 1<<12)
	t.slots = make([]locSlot, n)
	t.shift = uint(64 - bits.TrailingZeros(uint(n)))
	mask := uint64(n - 1)
	for _, sl := range old {
		if sl.id == 0 {
			continue
		}
		i := t.hash(frameRef{dso: sl.dso, off: sl.off}) >> t.shift
		for t.slots[i].id != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = sl
	}
}

// stackTable interns stacks by a seeded hash of their location ids; the
// stacks themselves stay in the session's chunks, and a slot holds the
// stack's id with the hash's low half as a tag (the high bits choose the
// slot), so that a lookup compares the content only of a stack whose tag
// matches: almost always the one.
type stackTable struct {
	slots []uint64 // tag<<32 | id+1; 0: empty
	n     int
	shift uint
	seed  maphash.Seed
}

func newStackTable() stackTable { return stackTable{seed: maphash.MakeSeed()} }

func (t *stackTable) hash(refs []int32) uint64 { return maphash.Bytes(t.seed, i32Bytes(refs)) }

// find returns the id of the stack refs, whose hash is h, in stacks (the
// session's stacks, which the table indexes), or -1 and the slot to pass
// to insert.
func (t *stackTable) find(h uint64, refs []int32, stacks [][]int32) (id int32, slot int) {
	if (t.n+1)*4 > len(t.slots)*3 {
		t.grow(stacks)
	}
	mask := len(t.slots) - 1
	tag := h & 0xffffffff
	for i := int(h >> t.shift); ; i = (i + 1) & mask {
		v := t.slots[i]
		if v == 0 {
			return -1, i
		}
		if v>>32 == tag && slices.Equal(stacks[uint32(v)-1], refs) {
			return int32(uint32(v) - 1), i
		}
	}
}

// insert puts stack id, whose hash is h, in slot, which find returned.
func (t *stackTable) insert(slot int, h uint64, id int32) {
	t.slots[slot] = h<<32 | uint64(id+1)
	t.n++
}

// grow doubles the table (to 4,096 slots at first). Hashes are not kept,
// so each stack's is taken again, reading the stacks in the order they
// were stored.
func (t *stackTable) grow(stacks [][]int32) {
	n := max(2*len(t.slots), 1<<12)
	t.slots = make([]uint64, n)
	t.shift = uint(64 - bits.TrailingZeros(uint(n)))
	mask := n - 1
	for id := range t.n {
		h := t.hash(stacks[id])
		i := int(h >> t.shift)
		for t.slots[i] != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = h<<32 | uint64(id+1)
	}
}

// aggTable holds the aggregates (one per distinct stack, event, pid, tid
// and comm) in order of first use, in blocks that are never copied (a
// slice grown by append would hold the old and the new array at once,
// at the peak), indexed by an open-addressing table of their positions
// with the key's hash's low half as a tag, so that a lookup reads an
// aggregate only when its tag matches (a new aggregate, the common case
// where stacks rarely repeat, reads none). A raw-stack slot names its
// aggregate by position (rawSlot.agg).
type aggTable struct {
	blocks [][]aggEntry // each of aggBlock entries but the last
	n      int          // aggregates held
	slots  []uint64     // tag<<32 | position+1; 0: empty
	shift  uint
	seed   maphash.Seed
}

// aggBlock is the number of aggregates in a block (160 KiB).
const aggBlock = 4096

// aggEntry is one aggregate's key and counts.
type aggEntry struct {
	key             aggKey
	samples, period uint64
}

func newAggTable() aggTable { return aggTable{seed: maphash.MakeSeed()} }

// at returns the aggregate at position p.
func (t *aggTable) at(p int32) *aggEntry { return &t.blocks[p/aggBlock][p%aggBlock] }

// each calls f with every aggregate, in order of position.
func (t *aggTable) each(f func(*aggEntry)) {
	for _, b := range t.blocks {
		for i := range b {
			f(&b[i])
		}
	}
}

// find returns the position of k's aggregate, adding it when new.
func (t *aggTable) find(k aggKey) int32 {
	if (t.n+1)*4 > len(t.slots)*3 {
		t.grow()
	}
	mask := len(t.slots) - 1
	h := maphash.Comparable(t.seed, k)
	for i := int(h >> t.shift); ; i = (i + 1) & mask {
		v := t.slots[i]
		if v == 0 {
			if t.n%aggBlock == 0 {
				t.blocks = append(t.blocks, make([]aggEntry, 0, aggBlock))
			}
			b := &t.blocks[len(t.blocks)-1]
			*b = append(*b, aggEntry{key: k})
			t.n++
			t.slots[i] = h<<32 | uint64(t.n)
			return int32(t.n - 1)
		}
		if v>>32 == h&0xffffffff && t.at(int32(uint32(v)-1)).key == k {
			return int32(uint32(v) - 1)
		}
	}
}

// grow doubles the table (to 4,096 slots at first).
func (t *aggTable) grow() {
	n := max(2*len(t.slots), 1<<12)
	t.slots = make([]uint64, n)
	t.shift = uint(64 - bits.TrailingZeros(uint(n)))
	mask := n - 1
	p := 0
	t.each(func(a *aggEntry) {
		p++
		h := maphash.Comparable(t.seed, a.key)
		i := int(h >> t.shift)
		for t.slots[i] != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = h<<32 | uint64(p)
	})
}
