package check

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// The interning tables give ids in order of first use and the same id to
// the same key, across their growth, as the maps they replace did.
func TestLocTableInterns(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	tab := newLocTable()
	want := map[frameRef]int32{}
	for range 100000 {
		// Few DSOs and offsets, so keys repeat; offsets that differ by
		// the DSO alone, so the DSO counts in the key.
		k := frameRef{dso: int32(r.IntN(5)), off: uint64(r.IntN(30000)) * 0x10}
		next := int32(len(want))
		id, added := tab.find(k, next)
		if w, ok := want[k]; ok {
			require.False(t, added, "key %+v", k)
			require.Equal(t, w, id, "key %+v", k)
		} else {
			require.True(t, added, "key %+v", k)
			require.Equal(t, next, id, "key %+v", k)
			want[k] = id
		}
	}
	require.Equal(t, len(want), tab.n)
}

func TestStackTableInterns(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	tab := newStackTable()
	var stacks [][]int32
	for range 50000 {
		refs := make([]int32, 1+r.IntN(4))
		for i := range refs {
			refs[i] = int32(r.IntN(6))
		}
		h := tab.hash(refs)
		id, slot := tab.find(h, refs, stacks)
		if id < 0 {
			id = int32(len(stacks))
			stacks = append(stacks, refs)
			tab.insert(slot, h, id)
		}
		require.Equal(t, refs, stacks[id])
	}
	// Every distinct stack of up to 4 frames over 6 locations appears.
	require.Equal(t, 6+36+216+1296, len(stacks))
	for id, st := range stacks {
		got, _ := tab.find(tab.hash(st), st, stacks)
		require.Equal(t, int32(id), got)
	}
}

func TestAggTableInterns(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 6))
	tab := newAggTable()
	want := map[aggKey]int32{}
	for range 100000 {
		k := aggKey{stack: int32(r.IntN(5000)), event: int32(r.IntN(2)), pid: 7, tid: uint32(r.IntN(3)), comm: int32(r.IntN(2))}
		p := tab.find(k)
		if w, ok := want[k]; ok {
			require.Equal(t, w, p)
		} else {
			require.Equal(t, int32(len(want)), p)
			want[k] = p
		}
		require.Equal(t, k, tab.at(p).key)
	}
	require.Equal(t, len(want), tab.n)
	p := int32(0)
	tab.each(func(a *aggEntry) {
		require.Equal(t, want[a.key], p)
		p++
	})
}
