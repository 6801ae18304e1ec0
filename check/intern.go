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
// stacks themselves stay in the session's chunks. A slot holds a stack's
// id with the high half of its hash, whose top bits chose the slot: a
// lookup compares the content only of a stack whose half matches (almost
// always the one; the bits under the slot's choose among neighbours), and
// the table grows from those halves, kept per stack, without reading the
// stacks again.
type stackTable struct {
	slots []uint64 // hash>>32<<32 | id+1; 0: empty
	hi    []uint32 // per stack id, its hash>>32
	shift uint     // 32 - log2(len(slots))
	seed  maphash.Seed
}

func newStackTable() stackTable { return stackTable{seed: maphash.MakeSeed()} }

func (t *stackTable) hash(refs []int32) uint64 { return maphash.Bytes(t.seed, i32Bytes(refs)) }

// find returns the id of the stack refs, whose hash is h, in stacks (the
// session's stacks, which the table indexes), or -1 and the slot to pass
// to insert.
func (t *stackTable) find(h uint64, refs []int32, stacks [][]int32) (id int32, slot int) {
	if (len(t.hi)+1)*4 > len(t.slots)*3 {
		t.grow()
	}
	mask := len(t.slots) - 1
	hi := h >> 32
	for i := int(hi >> t.shift); ; i = (i + 1) & mask {
		v := t.slots[i]
		if v == 0 {
			return -1, i
		}
		if v>>32 == hi && slices.Equal(stacks[uint32(v)-1], refs) {
			return int32(uint32(v) - 1), i
		}
	}
}

// touch reads the slot where a lookup of hash h starts and returns it, for
// the caller to keep (so that the read is not dropped): see stacker.apply.
func (t *stackTable) touch(h uint64) uint64 {
	if len(t.slots) == 0 {
		return 0
	}
	return t.slots[int(h>>32>>t.shift)&(len(t.slots)-1)]
}

// insert puts stack id, the next one, whose hash is h, in slot, which
// find returned.
func (t *stackTable) insert(slot int, h uint64, id int32) {
	t.slots[slot] = h>>32<<32 | uint64(id+1)
	t.hi = append(t.hi, uint32(h>>32))
}

// grow doubles the table (to 4,096 slots at first).
func (t *stackTable) grow() {
	t.slots, t.shift = placeAll(t.slots, func(yield func(hi uint32) bool) {
		for _, hi := range t.hi {
			if !yield(hi) {
				return
			}
		}
	})
}

// placeAll returns a table twice the size of slots (4,096 slots at
// first) and its shift, with the entries whose hashes' high halves each
// yields, in order of position, placed in it.
func placeAll(slots []uint64, each func(yield func(hi uint32) bool)) ([]uint64, uint) {
	n := max(2*len(slots), 1<<12)
	slots = make([]uint64, n)
	shift := uint(32 - bits.TrailingZeros(uint(n)))
	mask := n - 1
	p := uint64(0)
	for hi := range each {
		p++
		i := int(hi >> shift)
		for slots[i] != 0 {
			i = (i + 1) & mask
		}
		slots[i] = uint64(hi)<<32 | p
	}
	return slots, shift
}

// aggTable holds the aggregates (one per distinct stack, event, pid, tid
// and comm) in order of first use, in blocks that are never copied (a
// slice grown by append would hold the old and the new array at once,
// at the peak), indexed by an open-addressing table of their positions
// laid out as stackTable's, so that a lookup reads an aggregate only when
// the high half of its hash matches (a new aggregate, the common case
// where stacks rarely repeat, reads none). A raw-stack slot names its
// aggregate by position (rawSlot.agg).
type aggTable struct {
	blocks [][]aggEntry // each of aggBlock entries but the last
	n      int          // aggregates held
	slots  []uint64     // hash>>32<<32 | position+1; 0: empty
	shift  uint         // 32 - log2(len(slots))
	seed   maphash.Seed
}

// aggBlock is the number of aggregates in a block (160 KiB).
const aggBlock = 4096

// aggEntry is one aggregate's key and counts, with the high half of the
// key's hash (in what would be padding), from which the table grows.
type aggEntry struct {
	key             aggKey
	hi              uint32
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
		t.slots, t.shift = placeAll(t.slots, func(yield func(hi uint32) bool) {
			for _, b := range t.blocks {
				for i := range b {
					if !yield(b[i].hi) {
						return
					}
				}
			}
		})
	}
	mask := len(t.slots) - 1
	hi := maphash.Comparable(t.seed, k) >> 32
	for i := int(hi >> t.shift); ; i = (i + 1) & mask {
		v := t.slots[i]
		if v == 0 {
			if t.n%aggBlock == 0 {
				t.blocks = append(t.blocks, make([]aggEntry, 0, aggBlock))
			}
			b := &t.blocks[len(t.blocks)-1]
			*b = append(*b, aggEntry{key: k, hi: uint32(hi)})
			t.n++
			t.slots[i] = hi<<32 | uint64(t.n)
			return int32(t.n - 1)
		}
		if v>>32 == hi && t.at(int32(uint32(v)-1)).key == k {
			return int32(uint32(v) - 1)
		}
	}
}
