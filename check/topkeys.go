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
// report --no-children --sort KEYS, with the total figures of perf report
// --children --sort KEYS when ranked ByTotal.
type KeyedEntry struct {
	Comm string // SortComm, SortPID
	TID  uint32 // SortPID
	DSO  *DSO   // SortDSO, SortSym
	// Sym is the function; "" with SortSym for the DSO's unnamed frames,
	// grouped as Top groups them.
	Sym         string
	Self        uint64
	SelfSamples uint64
	// Total and TotalSamples count, ranked ByTotal, the samples with the
	// entry's keys anywhere in their stack (a frame's own DSO and
	// function, the sample's comm and thread), once per sample; zero
	// ranked BySelf.
	Total        uint64
	TotalSamples uint64
	// Graph is the call graph of the entry's stacks when the options ask
	// for one, as TopEntry.Graph, and GraphRest as TopEntry.GraphRest.
	Graph     []*GraphNode
	GraphRest uint64

	graph *GraphNode        // the whole graph while TopKeyed builds it
	comms map[string]uint64 // SortPID without SortComm: the samples it counts (Total ranked ByTotal, else Self) by comm
	seen  int               // 1 + the aggregate that last counted it in Total
	drawn int               // 1 + the aggregate that last added to its graph
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
// period, ordered by self; ranked ByTotal, as perf report --children
// --sort KEYS does, each entry also counts the samples with its keys
// anywhere in their stack (iter_add_next_cumulative_entry in
// tools/perf/util/hist.c: each frame of the chain as an entry of the
// sample's thread, once per sample), ordered by total, and entries
// with no self time are kept. Each entry's call graph of its stacks is
// drawn as perf report -g --sort KEYS draws it when opts.Graph asks for
// one (opts' By, Graph, GraphMode, MaxStack and GraphLimit, as Top
// takes them; the others do not apply). It works on Aggregates, so it
// needs no per-sample data.
func TopKeyed(r *Result, keys []SortKey, opts TopOptions) []KeyedTable {
	kc := keyedCounter{keys: keys, sums: map[keyedKey]*KeyedEntry{}, byEvent: map[int]int{}}
	var path []topKey
	for ai, ag := range r.Aggregates() {
		t := kc.table(r, ag.Event)
		t.Samples += ag.Samples
		t.Period += ag.Period
		locs := ag.Stack.Locations()
		if len(locs) == 0 {
			continue
		}
		lo, hi := keptFrames(len(locs), opts)
		leaf := kc.entry(&ag, topKeyOf(locs[0]))
		leaf.Self += ag.Period
		leaf.SelfSamples += ag.Samples
		if opts.By == ByTotal {
			kc.countTotal(leaf, ai, &ag)
			for i := max(lo, 1); i < hi; i++ {
				kc.countTotal(kc.entry(&ag, topKeyOf(locs[i])), ai, &ag)
			}
		} else if kc.has(SortPID) && !kc.has(SortComm) {
			leaf.noteComm(ag.Comm, ag.Samples)
		}
		if opts.Graph == NoGraph {
			continue
		}
		path = graphPath(path[:0], locs[lo:hi], opts)
		leaf.draw(ai, path, &ag)
		if opts.By == ByTotal {
			// As cumulativeGraphs: each other entry the path passes
			// through gets the path from its first place on.
			for i, k := range path {
				kc.entry(&ag, k).draw(ai, path[i:], &ag)
			}
		}
	}
	return kc.finish(opts)
}

// keyedKey identifies a KeyedEntry: its event and the values of the keys
// asked for.
type keyedKey struct {
	ev   int
	comm string
	tid  uint32
	dso  *DSO
	sym  string
}

// keyedCounter adds up TopKeyed's entries.
type keyedCounter struct {
	keys    []SortKey
	sums    map[keyedKey]*KeyedEntry
	tables  []KeyedTable
	byEvent map[int]int // event -> index in tables
}

func (kc *keyedCounter) has(k SortKey) bool { return slices.Contains(kc.keys, k) }

// table returns the table of event ev, made when new.
func (kc *keyedCounter) table(r *Result, ev int) *KeyedTable {
	ti, ok := kc.byEvent[ev]
	if !ok {
		ti = len(kc.tables)
		kc.byEvent[ev] = ti
		kc.tables = append(kc.tables, KeyedTable{Event: r.EventName(ev), ev: ev})
	}
	return &kc.tables[ti]
}

// entry returns the entry of a frame f of a sample of ag, made when new.
func (kc *keyedCounter) entry(ag *Aggregate, f topKey) *KeyedEntry {
	k := keyedKey{ev: ag.Event}
	if kc.has(SortComm) {
		k.comm = ag.Comm
	}
	if kc.has(SortPID) {
		k.tid = ag.TID
	}
	if kc.has(SortDSO) || kc.has(SortSym) {
		k.dso = f.dso
	}
	if kc.has(SortSym) {
		k.sym = f.name
	}
	e := kc.sums[k]
	if e == nil {
		e = &KeyedEntry{Comm: k.comm, TID: k.tid, DSO: k.dso, Sym: k.sym}
		kc.sums[k] = e
	}
	return e
}

// countTotal counts ag, the aggregate numbered ai, in e's Total, once,
// and, keyed by thread but not comm, in the comms that name e.
func (kc *keyedCounter) countTotal(e *KeyedEntry, ai int, ag *Aggregate) {
	if e.seen == ai+1 {
		return
	}
	e.seen = ai + 1
	e.Total += ag.Period
	e.TotalSamples += ag.Samples
	if kc.has(SortPID) && !kc.has(SortComm) {
		e.noteComm(ag.Comm, ag.Samples)
	}
}

// draw adds path, a stack of ag (the aggregate numbered ai), to e's
// graph, unless a part of that stack was already added to it.
func (e *KeyedEntry) draw(ai int, path []topKey, ag *Aggregate) {
	if e.drawn == ai+1 {
		return
	}
	e.drawn = ai + 1
	if e.graph == nil {
		e.graph = &GraphNode{}
	}
	e.graph.add(path, ag.Period, ag.Samples)
}

// finish prunes the entries' graphs as opts says and orders the entries
// and tables.
func (kc *keyedCounter) finish(opts TopOptions) []KeyedTable {
	for k, e := range kc.sums {
		t := &kc.tables[kc.byEvent[k.ev]]
		if e.graph != nil {
			setBase(e.graph, e.graph.Period, true)
			e.Graph = pruneGraph(e.graph, uint64(float64(t.Period)*opts.GraphLimit/100), opts)
			e.GraphRest = e.graph.Rest
			e.graph = nil
		}
		t.Entries = append(t.Entries, *e)
	}
	for i := range kc.tables {
		es := kc.tables[i].Entries
		sort.Slice(es, func(a, b int) bool {
			if opts.By == ByTotal && es[a].Total != es[b].Total {
				return es[a].Total > es[b].Total
			}
			if es[a].Self != es[b].Self {
				return es[a].Self > es[b].Self
			}
			return es[a].Label(kc.keys) < es[b].Label(kc.keys)
		})
	}
	sort.Slice(kc.tables, func(a, b int) bool { return kc.tables[a].ev < kc.tables[b].ev })
	return kc.tables
}

// graphPath appends to path the frames locs of a stack (leaf first) that
// a call graph draws, each as its Top entry, in the graph's order.
func graphPath(path []topKey, locs []*Location, opts TopOptions) []topKey {
	for _, l := range locs {
		path = append(path, topKeyOf(l))
	}
	if opts.Graph == Callers {
		slices.Reverse(path)
	}
	return path
}
