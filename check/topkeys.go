package check

import (
	"fmt"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// SortKey is one of perf report's --sort keys that TopKeyed groups by.
type SortKey uint8

// The keys, with perf's names.
const (
	SortComm SortKey = iota + 1 // "comm": the thread's command name
	SortPID                     // "pid": the thread, perf's "TID:comm" (one entry per thread, whatever its comm)
	SortDSO                     // "dso": the DSO of the sample's IP
	SortSym                     // "sym": the function at the sample's IP (with its DSO)
)

var sortKeyNames = map[string]SortKey{"comm": SortComm, "pid": SortPID, "dso": SortDSO, "sym": SortSym, "symbol": SortSym}

// ParseSortKeys parses perf's comma-separated --sort list ("dso,sym").
func ParseSortKeys(s string) ([]SortKey, error) {
	var keys []SortKey
	for _, n := range strings.Split(s, ",") {
		k, ok := sortKeyNames[strings.TrimSpace(n)]
		if !ok {
			return nil, fmt.Errorf("unknown sort key %q (the keys are comm, pid, dso, sym)", n)
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// KeyedEntry is one line of a TopKeyed table: the values of the keys
// asked for (the others are zero) and the self figures, as a line of perf
// report --no-children --sort KEYS.
type KeyedEntry struct {
	Comm string // SortComm, SortPID
	TID  uint32 // SortPID
	DSO  *DSO   // SortDSO, SortSym
	// Sym is the function; "" with SortSym for the DSO's unnamed frames,
	// grouped as Top groups them.
	Sym         string
	Self        uint64
	SelfSamples uint64
	// Graph is the call graph of the entry's stacks when the options ask
	// for one, as TopEntry.Graph.
	Graph []*GraphNode

	graph *GraphNode        // the whole graph while TopKeyed builds it
	comms map[string]uint64 // SortPID without SortComm: the thread's samples by comm
}

// noteComm counts n samples of the entry's thread under comm, and names
// the entry by the comm with most: perf names a thread by its comm when
// the report is made, the last one it took, which is the one most of an
// exec'd thread's samples have; the recording's order is not kept in the
// aggregates to say which came last.
func (e *KeyedEntry) noteComm(comm string, n uint64) {
	if e.comms == nil {
		e.comms = map[string]uint64{}
	}
	e.comms[comm] += n
	if best := e.comms[e.Comm]; e.Comm == "" || e.comms[comm] > best || e.comms[comm] == best && comm > e.Comm {
		e.Comm = comm
	}
}

// Label is the entry as perf prints its keys, in the order keys gives,
// two spaces apart: "7527:cshared  libhot.so  lib_mix"; an unnamed
// group's symbol is "[verdict] dso" as in Top.
func (e *KeyedEntry) Label(keys []SortKey) string {
	var parts []string
	for _, k := range keys {
		switch k {
		case SortComm:
			parts = append(parts, e.Comm)
		case SortPID:
			parts = append(parts, strconv.FormatUint(uint64(e.TID), 10)+":"+e.Comm)
		case SortDSO:
			parts = append(parts, path.Base(e.DSO.Path))
		case SortSym:
			te := TopEntry{Name: e.Sym, DSO: e.DSO}
			if te.Group() {
				parts = append(parts, te.Label())
			} else {
				parts = append(parts, e.Sym)
			}
		}
	}
	return strings.Join(parts, "  ")
}

// KeyedTable is the TopKeyed table of one event.
type KeyedTable struct {
	Event   string
	Samples uint64
	Period  uint64
	Entries []KeyedEntry // by self period, largest first

	ev int // the event's index, which orders the tables
}

// TopKeyed groups each event's samples by keys as perf report
// --no-children --sort KEYS does, by the sample's leaf, weighted by
// period, with each entry's call graph of its stacks as perf report -g
// --sort KEYS draws it when opts.Graph asks for one (opts' Graph,
// GraphMode, MaxStack and GraphLimit, as Top takes them; the others do
// not apply). It works on Aggregates, so it needs no per-sample data.
func TopKeyed(r *Result, keys []SortKey, opts TopOptions) []KeyedTable {
	type ekey struct {
		ev   int
		comm string
		tid  uint32
		dso  *DSO
		sym  string
	}
	has := func(k SortKey) bool {
		for _, x := range keys {
			if x == k {
				return true
			}
		}
		return false
	}
	sums := map[ekey]*KeyedEntry{}
	var tables []KeyedTable
	byEvent := map[int]int{}
	for _, ag := range r.Aggregates() {
		ti, ok := byEvent[ag.Event]
		if !ok {
			ti = len(tables)
			byEvent[ag.Event] = ti
			tables = append(tables, KeyedTable{Event: r.EventName(ag.Event), ev: ag.Event})
		}
		tables[ti].Samples += ag.Samples
		tables[ti].Period += ag.Period
		locs := ag.Stack.Locations()
		if len(locs) == 0 {
			continue
		}
		leaf := topKeyOf(locs[0])
		k := ekey{ev: ag.Event}
		if has(SortComm) {
			k.comm = ag.Comm
		}
		if has(SortPID) {
			k.tid = ag.TID
		}
		if has(SortDSO) || has(SortSym) {
			k.dso = leaf.dso
		}
		if has(SortSym) {
			k.sym = leaf.name
		}
		e := sums[k]
		if e == nil {
			e = &KeyedEntry{Comm: k.comm, TID: k.tid, DSO: k.dso, Sym: k.sym}
			sums[k] = e
		}
		e.Self += ag.Period
		e.SelfSamples += ag.Samples
		if has(SortPID) && !has(SortComm) {
			e.noteComm(ag.Comm, ag.Samples)
		}
		if opts.Graph != NoGraph {
			if e.graph == nil {
				e.graph = &GraphNode{}
			}
			e.graph.add(graphPath(locs, opts), ag.Period, ag.Samples)
		}
	}
	for k, e := range sums {
		t := &tables[byEvent[k.ev]]
		if e.graph != nil {
			setBase(e.graph, e.graph.Period, true)
			e.Graph = pruneGraph(e.graph, uint64(float64(t.Period)*opts.GraphLimit/100), opts)
			e.graph = nil
		}
		t.Entries = append(t.Entries, *e)
	}
	for i := range tables {
		es := tables[i].Entries
		sort.Slice(es, func(a, b int) bool {
			if es[a].Self != es[b].Self {
				return es[a].Self > es[b].Self
			}
			return es[a].Label(keys) < es[b].Label(keys)
		})
	}
	sort.Slice(tables, func(a, b int) bool { return tables[a].ev < tables[b].ev })
	return tables
}

// graphPath is the path of a stack in a call graph: the frames opts
// keeps (keptFrames), each as its Top entry, in the graph's order.
func graphPath(locs []*Location, opts TopOptions) []topKey {
	lo, hi := keptFrames(len(locs), opts)
	path := make([]topKey, 0, hi-lo)
	for _, l := range locs[lo:hi] {
		path = append(path, topKeyOf(l))
	}
	if opts.Graph == Callers {
		slices.Reverse(path)
	}
	return path
}
