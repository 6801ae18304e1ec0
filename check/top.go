package check

import (
	"math"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"sync"

	"github.com/perfcheck/perfcheck/perfdata"
)

// TopEntry is one line of a top table: a named function of a DSO, or, when
// Name is "", the group of all the frames of DSO that have no name —
// refused ones (mismatch, missing, replaced), file-less memory, or
// addresses a trusted binary has no symbol for. Unnamed frames are grouped,
// never guessed.
type TopEntry struct {
	Name         string // the function (outermost at the address, perf report's sym key); "" for a group
	DSO          *DSO
	Self         uint64 // period of the samples whose leaf is here
	Total        uint64 // period of the samples with this entry anywhere in the stack, once per sample
	SelfSamples  uint64
	TotalSamples uint64
	// Graph is the entry's call graph when TopOptions.Graph asks for one:
	// its roots, the outermost callers (Callers) or the entry itself
	// (Callees).
	Graph []*GraphNode
	// GraphRest is, in GraphFractal mode, the part of the entry's stacks
	// that the roots Graph keeps do not account for (GraphNode.Rest).
	GraphRest uint64

	graph *GraphNode // Graph while addGraphs builds it
}

// Group reports whether the entry stands for a DSO's unnamed frames.
func (e *TopEntry) Group() bool { return e.Name == "" }

// Label is the entry as `perfcheck top` prints it: "function (dso)", with
// " [verdict]" for a DSO that is not verified; "[verdict] dso" for a group,
// "[no symbol] dso" for a trusted binary's addresses without a symbol.
func (e *TopEntry) Label() string {
	v := e.DSO.Verdict
	if e.Group() {
		if v.Trusted() && v != NoFile {
			return "[no symbol] " + e.DSO.Path
		}
		return "[" + v.String() + "] " + e.DSO.Path
	}
	s := e.Name + " (" + e.DSO.Path + ")"
	if v != Verified && v != NoFile {
		s += " [" + v.String() + "]"
	}
	return s
}

// TopTable is the top of one event: periods of different events do not
// add up, so perf report shows each apart.
type TopTable struct {
	Event   string         // the event's name ("event3" when the recording names none)
	Attr    *perfdata.Attr // the event's attributes (its period's unit); nil when unknown
	Samples uint64         // samples of the event
	Period  uint64         // sum of their periods: 100% of self and of total
	Entries []TopEntry
	Omitted int // entries beyond TopOptions.N
}

// TopOrder is what a top table is ordered by.
type TopOrder uint8

// Orders of a top table.
const (
	BySelf  TopOrder = iota // self period first, as perf report --no-children
	ByTotal                 // total period first, as perf report --children
)

// TopOptions tune Top. The zero value ranks by self, keeps every entry,
// trusted or not.
type TopOptions struct {
	By TopOrder
	// N keeps the first N entries of each table; 0 keeps all.
	N int
	// TrustedOnly leaves out the entries of DSOs that are not trusted
	// (Verdict.Trusted). The table's Samples and Period still count every
	// sample of the event, so percentages stay those of the whole.
	TrustedOnly bool
	// Graph adds each entry's call graph.
	Graph GraphOrder
	// GraphMode is what the graph's shares are of, and what GraphLimit
	// leaves out.
	GraphMode GraphMode
	// MaxStack cuts each stack to its first MaxStack frames in the
	// graph's order (the outermost callers with Callers, or with NoGraph,
	// perf's order under --children; the leaf and its callers with
	// Callees), as perf report --max-stack cuts each call chain when it
	// resolves the sample (thread__resolve_callchain_sample in
	// tools/perf/util/machine.c); 0 keeps all, and a negative value none,
	// as perf's --max-stack 0 (or below) keeps none: graphs are then
	// empty and Total is Self. The frames cut off count in no entry's
	// Total and in no graph. The leaf always counts, for its Self and its
	// Total, as perf counts the sample's own address apart from its
	// chain.
	MaxStack int
	// GraphLimit leaves out the graph's nodes under GraphLimit percent of
	// the event's period (or as GraphMode says).
	GraphLimit float64
}

// Percent is v as a percentage of the table's period.
func (t *TopTable) Percent(v uint64) float64 {
	if t.Period == 0 {
		return 0
	}
	return float64(v) * 100 / float64(t.Period)
}

// Top ranks the functions of each event that has samples, as `perf report
// --no-children --sort sym` (BySelf) or `--children` (ByTotal) does,
// weighted by period, and keeps the first N entries of each. Ordered by
// self, entries without self time are left out, as perf does. A named
// location counts for its outermost function (inlined callees are not
// split out, as perf report without --inline); Total counts each entry
// once per sample however often recursion repeats it. It works on
// Aggregates, so it needs no per-sample data.
func Top(r *Result, opts TopOptions) []TopTable {
	c := newTopCounter(r)
	if opts.Graph != NoGraph || !c.countIndexes(opts) {
		c.count(r.Aggregates(), opts)
	}
	var out []TopTable
	var events []int
	for ev, m := range c.per {
		if m == nil {
			continue
		}
		t := TopTable{Event: r.EventName(ev), Samples: c.samples[ev], Period: c.period[ev]}
		if ev < len(r.EventInfo) {
			t.Attr = &r.EventInfo[ev].Attr
		}
		t.Entries = c.entries(m, opts)
		sortTop(t.Entries, opts.By == ByTotal)
		if opts.N > 0 && len(t.Entries) > opts.N {
			t.Omitted = len(t.Entries) - opts.N
			t.Entries = t.Entries[:opts.N]
		}
		out = append(out, t)
		events = append(events, ev)
	}
	if opts.Graph != NoGraph {
		c.addGraphs(out, events, opts)
	}
	return out
}

// EventName is the name of event i, as EventInfo has it, or "event<i>"
// when the recording names none (or has no event i: a sample can name an
// event past the recording's attrs).
func (r *Result) EventName(i int) string {
	if i >= 0 && i < len(r.EventInfo) && r.EventInfo[i].Name != "" {
		return r.EventInfo[i].Name
	}
	return "event" + strconv.Itoa(i)
}

// NumEvents is the number of events: those of the recording, and any a
// sample names past them (an event index without an attr).
func (r *Result) NumEvents() int {
	n := len(r.EventInfo)
	if r.eachAggregate(func(_, event int32, _, _ uint64) { n = max(n, int(event)+1) }) {
		return n
	}
	for _, ag := range r.Aggregates() {
		n = max(n, ag.Event+1)
	}
	return n
}

// YesNo is how reports print a truth: "yes" or "no".
func YesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// topAcc is what Top adds up for one entry of one event.
type topAcc struct {
	self, total, selfN, totalN uint64
	seen                       int // 1 + the aggregate that last counted it in total
}

// topCounter adds up the aggregates per event and entry. Entries get
// dense indexes, and each location the index of its entry, once: the loop
// over every frame of every aggregate (millions on a large recording) then
// only indexes slices.
type topCounter struct {
	r        *Result
	keys     []topKey
	keyIdx   map[topKey]int32
	locEntry []int32 // by Location.ID-1
	per      [][]topAcc
	samples  []uint64
	period   []uint64
}

func newTopCounter(r *Result) *topCounter {
	nev := r.NumEvents()
	c := &topCounter{r: r, keyIdx: map[topKey]int32{}, locEntry: make([]int32, len(r.Locations)),
		per: make([][]topAcc, nev), samples: make([]uint64, nev), period: make([]uint64, nev)}
	for i, l := range r.Locations {
		c.locEntry[i] = c.entryOf(l)
	}
	return c
}

// entryOf returns the index of l's entry, made when new.
func (c *topCounter) entryOf(l *Location) int32 {
	k := topKeyOf(l)
	i, ok := c.keyIdx[k]
	if !ok {
		i = int32(len(c.keys))
		c.keys = append(c.keys, k)
		c.keyIdx[k] = i
	}
	return i
}

// entry is entryOf through the index made for r.Locations.
func (c *topCounter) entry(l *Location) int32 {
	if i := l.ID - 1; i >= 0 && i < len(c.r.Locations) && c.r.Locations[i] == l {
		return c.locEntry[i]
	}
	return c.entryOf(l) // a Location not in r.Locations (not made by finish)
}

// count adds up aggs: self for each leaf, total once per aggregate for
// the leaf and each entry its stack, cut as opts.MaxStack says, passes
// through.
func (c *topCounter) count(aggs []Aggregate, opts TopOptions) {
	for ai, ag := range aggs {
		c.samples[ag.Event] += ag.Samples
		c.period[ag.Event] += ag.Period
		m := c.per[ag.Event]
		locs := ag.Stack.Locations()
		lo, hi := keptFrames(len(locs), opts)
		for i, l := range locs {
			if i > 0 && (i < lo || i >= hi) {
				continue
			}
			k := c.entry(l)
			if int(k) >= len(m) {
				m = append(m, make([]topAcc, len(c.keys)-len(m))...)
				c.per[ag.Event] = m
			}
			e := &m[k]
			if i == 0 {
				e.self += ag.Period
				e.selfN += ag.Samples
			}
			if e.seen != ai+1 {
				e.seen = ai + 1
				e.total += ag.Period
				e.totalN += ag.Samples
			}
		}
		if c.per[ag.Event] == nil {
			c.per[ag.Event] = []topAcc{} // the event has samples
		}
	}
}

// countIndexes is count over the session's aggregates and the stacks'
// location indexes, when the Result has both (it was made by finish and
// no Stack.Locations has dropped the indexes): it builds neither the
// sorted Aggregates nor every stack's location pointers, which the
// counting does not need, and reads 4 bytes a frame instead of 8. The
// aggregates are counted in parts, one per CPU up to topParts, each into
// sums of its own that are then added up: the sums do not depend on the
// order. It reports whether it counted.
func (c *topCounter) countIndexes(opts TopOptions) bool {
	r := c.r
	if len(r.Stacks) == 0 || r.Stacks[0].set == nil {
		return false
	}
	set := r.Stacks[0].set
	set.mu.RLock()
	defer set.mu.RUnlock()
	if set.refs == nil || len(set.refs) != len(r.Stacks) || len(set.locs) != len(r.Locations) {
		return false
	}
	for i := range set.locs {
		if r.Locations[i] != &set.locs[i] {
			return false
		}
	}
	parts := min(runtime.GOMAXPROCS(0), topParts)
	sums := make([]*topSums, parts)
	ok := make([]bool, parts)
	var wg sync.WaitGroup
	for p := range parts {
		sums[p] = c.newSums()
		wg.Go(func() { ok[p] = sums[p].count(r, set.refs, c.locEntry, p, parts, opts) })
	}
	wg.Wait()
	if slices.Contains(ok, false) {
		return false
	}
	for _, t := range sums {
		c.add(t)
	}
	return true
}

// topParts bounds the parts countIndexes counts at once.
const topParts = 4

// topSums is what topCounter adds up, for one part of the aggregates.
type topSums struct {
	nkeys   int
	per     [][]topAcc
	samples []uint64
	period  []uint64
}

func (c *topCounter) newSums() *topSums {
	return &topSums{nkeys: len(c.keys), per: make([][]topAcc, len(c.per)),
		samples: make([]uint64, len(c.samples)), period: make([]uint64, len(c.period))}
}

// count adds up part of parts of r's aggregates, whose stacks' location
// indexes are refs, locEntry giving each location's entry.
func (t *topSums) count(r *Result, refs [][]int32, locEntry []int32, part, parts int, opts TopOptions) bool {
	ai := 0
	return r.eachAggregatePart(part, parts, func(stack, event int32, samples, period uint64) {
		ai++
		t.samples[event] += samples
		t.period[event] += period
		m := t.per[event]
		st := refs[stack]
		lo, hi := keptFrames(len(st), opts)
		for i, l := range st {
			if i > 0 && (i < lo || i >= hi) {
				continue
			}
			k := locEntry[l]
			if int(k) >= len(m) {
				m = append(m, make([]topAcc, t.nkeys-len(m))...)
				t.per[event] = m
			}
			e := &m[k]
			if i == 0 {
				e.self += period
				e.selfN += samples
			}
			if e.seen != ai {
				e.seen = ai
				e.total += period
				e.totalN += samples
			}
		}
		if t.per[event] == nil {
			t.per[event] = []topAcc{} // the event has samples
		}
	})
}

// add adds the sums of t to c's.
func (c *topCounter) add(t *topSums) {
	for ev, m := range t.per {
		if m == nil {
			continue
		}
		c.samples[ev] += t.samples[ev]
		c.period[ev] += t.period[ev]
		cm := c.per[ev]
		if cm == nil {
			cm = []topAcc{}
		}
		if len(cm) < len(m) {
			cm = append(cm, make([]topAcc, len(m)-len(cm))...)
		}
		for k := range m {
			v, e := &m[k], &cm[k]
			if v.seen == 0 {
				continue
			}
			e.self += v.self
			e.selfN += v.selfN
			e.total += v.total
			e.totalN += v.totalN
			e.seen = 1 // counted (entries keeps what some aggregate counted)
		}
		c.per[ev] = cm
	}
}

// keptFrames is the part [lo, hi) of a stack of n frames, leaf first,
// that opts.MaxStack keeps: the first MaxStack frames in the graph's
// order, which, but for Callees, is from the outermost caller; none when
// MaxStack is negative.
func keptFrames(n int, opts TopOptions) (lo, hi int) {
	if opts.MaxStack < 0 {
		return 0, 0
	}
	if opts.MaxStack == 0 || n <= opts.MaxStack {
		return 0, n
	}
	if opts.Graph == Callees {
		return 0, opts.MaxStack
	}
	return n - opts.MaxStack, n
}

// entries are the entries of one event's sums m that opts keeps.
func (c *topCounter) entries(m []topAcc, opts TopOptions) []TopEntry {
	var out []TopEntry
	for k := range m {
		v := &m[k]
		if v.seen == 0 || opts.By != ByTotal && v.self == 0 {
			continue
		}
		key := c.keys[k]
		if opts.TrustedOnly && !key.dso.Trusted() {
			continue
		}
		out = append(out, TopEntry{Name: key.name, DSO: key.dso, Self: v.self, Total: v.total,
			SelfSamples: v.selfN, TotalSamples: v.totalN})
	}
	return out
}

// sortTop orders entries by self (or total first, byTotal), then by
// total, then by label.
func sortTop(entries []TopEntry, byTotal bool) {
	sort.SliceStable(entries, func(i, j int) bool {
		x, y := &entries[i], &entries[j]
		if byTotal && x.Total != y.Total {
			return x.Total > y.Total
		}
		if x.Self != y.Self {
			return x.Self > y.Self
		}
		if x.Total != y.Total {
			return x.Total > y.Total
		}
		return x.Label() < y.Label()
	})
}

// topKey identifies an entry: a named function of a DSO, or a DSO's group.
type topKey struct {
	name string
	dso  *DSO
}

func topKeyOf(l *Location) topKey {
	if n := len(l.Frames); n > 0 {
		if name := l.Frames[n-1].Name(); name != "" {
			return topKey{name: name, dso: l.DSO}
		}
	}
	return topKey{dso: l.DSO}
}

// GraphOrder is the direction of a top entry's call graph.
type GraphOrder uint8

// Call graph directions, as perf report -g caller and -g callee.
const (
	NoGraph GraphOrder = iota
	Callers            // from the outermost caller down to the entry
	Callees            // from the entry out to its outermost caller
)

// GraphMode is what a call graph's shares are of, and so what
// TopOptions.GraphLimit leaves out, as the first field of perf report -g
// (callchain_param.mode in tools/perf/util/callchain.h).
type GraphMode uint8

// Call graph modes.
const (
	// GraphAbsolute (perf's graph, its default): a node's share is of
	// the event's period (Period); nodes under GraphLimit percent of it
	// are left out.
	GraphAbsolute GraphMode = iota
	// GraphFractal (perf's fractal): a node's share is of its parent's
	// callees (Base); nodes under GraphLimit percent of them are left
	// out.
	GraphFractal
	// GraphFlat (perf's flat and folded): the graph is a list of call
	// chains, each node whose Ends is not zero ending one; chains under
	// GraphLimit percent of the event's period are left out (their Ends
	// made zero), and the nodes that lead to no chain kept.
	GraphFlat
)

// GraphNode is a function in a top entry's call graph: a named function
// of a DSO or, when Name is "", the DSO's unnamed frames, as TopEntry.
// Period and Samples count the stacks of the entry that pass through
// this path of the graph.
type GraphNode struct {
	Name     string
	DSO      *DSO
	Period   uint64
	Samples  uint64
	Children []*GraphNode // by period, largest first
	// Ends is the period of the entry's stacks whose path ends at this
	// node: the weight of the call chain from the graph's root to it.
	Ends uint64
	// Base is the period the node's fractal share is of: its parent's
	// callees (the parent's Period less its Ends); for a node that only
	// goes on with its parent's chain (the parent's one callee, where no
	// stack ends), its parent's Base, as perf prints one share for a
	// chain; for a root, and for the callees of the graph's only root
	// chain, the entry's stacks (its Self, or Total with ByTotal), as
	// perf does.
	Base uint64
	// Rest is, in GraphFractal mode, the part of the Base of the node's
	// callees that the callees the graph keeps do not account for: the
	// callees under GraphLimit, and, below the graph's only root chain,
	// the stacks that end on it. perf report -g fractal prints it as a
	// "[...]" line after the callees (__callchain__fprintf_graph in
	// tools/perf/ui/stdio/hist.c) where they branch, when it is not zero
	// and some callee is kept; Rest is zero elsewhere.
	Rest uint64
}

// Label is the node as `perfcheck top` prints it, the same as an entry's.
func (n *GraphNode) Label() string { return (&TopEntry{Name: n.Name, DSO: n.DSO}).Label() }

// child returns n's child for key k, made when new.
func (n *GraphNode) child(k topKey) *GraphNode {
	for _, c := range n.Children {
		if c.Name == k.name && c.DSO == k.dso {
			return c
		}
	}
	c := &GraphNode{Name: k.name, DSO: k.dso}
	n.Children = append(n.Children, c)
	return c
}

// add adds the stack along path under n.
func (n *GraphNode) add(path []topKey, period, samples uint64) {
	n.Period += period
	n.Samples += samples
	for _, k := range path {
		n = n.child(k)
		n.Period += period
		n.Samples += samples
	}
	n.Ends += period
}

// addGraphs fills the Graph of each entry of tables, as perf report -g
// caller (or callee) builds its call chains: one node per frame,
// recursion kept, the frames opts.MaxStack keeps (keptFrames).
// Ranked by self (perf's --no-children), an entry's stacks are those
// whose leaf it is; ranked by total (--children), they are also the part
// of each stack from the entry on (cumulativeGraphs).
func (c *topCounter) addGraphs(tables []TopTable, events []int, opts TopOptions) {
	byEvent := map[int]map[topKey]*GraphNode{}
	for ti, ev := range events {
		m := map[topKey]*GraphNode{}
		for i := range tables[ti].Entries {
			e := &tables[ti].Entries[i]
			e.graph = &GraphNode{}
			m[topKey{name: e.Name, dso: e.DSO}] = e.graph
		}
		byEvent[ev] = m
	}
	var path []topKey
	for _, ag := range c.r.Aggregates() {
		locs := ag.Stack.Locations()
		if len(locs) == 0 {
			continue
		}
		path = path[:0]
		lo, hi := keptFrames(len(locs), opts)
		for _, l := range locs[lo:hi] {
			path = append(path, c.keys[c.entry(l)])
		}
		if opts.Graph == Callers {
			slices.Reverse(path)
		}
		m := byEvent[ag.Event]
		leaf := c.keys[c.entry(locs[0])]
		if root := m[leaf]; root != nil {
			root.add(path, ag.Period, ag.Samples)
		}
		if opts.By == ByTotal {
			cumulativeGraphs(m, path, leaf, ag)
		}
	}
	for ti := range tables {
		least := uint64(float64(tables[ti].Period) * opts.GraphLimit / 100)
		for i := range tables[ti].Entries {
			e := &tables[ti].Entries[i]
			setBase(e.graph, e.graph.Period, true)
			e.Graph = pruneGraph(e.graph, least, opts)
			e.GraphRest = e.graph.Rest
			e.graph = nil
		}
	}
}

// cumulativeGraphs adds to the graph of each entry of m that path passes
// through, other than its leaf's, the part of path from the entry on, as
// perf report --children does (iter_add_next_cumulative_entry in
// tools/perf/util/hist.c): from the entry to the leaf with Callers, from
// the entry to the outermost caller with Callees; an entry met more than
// once (recursion) from its first place in the graph's order.
func cumulativeGraphs(m map[topKey]*GraphNode, path []topKey, leaf topKey, ag Aggregate) {
	for i, k := range path {
		if k == leaf || slices.Contains(path[:i], k) {
			continue
		}
		if root := m[k]; root != nil {
			root.add(path[i:], ag.Period, ag.Samples)
		}
	}
}

// setBase sets the Base of n's children and so on down (see
// GraphNode.Base); base is n's. single is set while n is on the graph's
// only root chain, whose callees perf gives shares of the entry's stacks,
// not of the chain's callees (callchain__fprintf_graph in
// tools/perf/ui/stdio/hist.c).
func setBase(n *GraphNode, base uint64, single bool) {
	for _, c := range n.Children {
		switch {
		case len(n.Children) == 1 && n.Ends == 0:
			c.Base = base // c goes on with n's chain
			setBase(c, base, single)
		case single:
			c.Base = base
			setBase(c, base, false)
		default:
			c.Base = n.Period - n.Ends
			setBase(c, c.Base, false)
		}
	}
}

// pruneGraph returns the children of n that opts keeps, as perf's
// call-graph threshold does in its mode (sort_chain_graph_abs,
// sort_chain_graph_rel and sort_chain_flat in tools/perf/util/callchain.c),
// ordered by period; least is GraphLimit percent of the event's period.
func pruneGraph(n *GraphNode, least uint64, opts TopOptions) []*GraphNode {
	// perf's callees branch where the chain does not just go on (setBase);
	// they all have one Base.
	branch := len(n.Children) > 0 && (len(n.Children) > 1 || n.Ends > 0)
	var base uint64
	if branch {
		base = n.Children[0].Base
	}
	kept := n.Children[:0]
	for _, c := range n.Children {
		switch opts.GraphMode {
		case GraphFractal:
			if c.Period == 0 || float64(c.Period) < math.Ceil(float64(n.Period-n.Ends)*opts.GraphLimit/100) {
				continue
			}
		case GraphFlat:
			if c.Ends < least {
				c.Ends = 0
			}
		default:
			if c.Period < least || c.Period == 0 {
				continue
			}
		}
		c.Children = pruneGraph(c, least, opts)
		if opts.GraphMode == GraphFlat && c.Ends == 0 && len(c.Children) == 0 {
			continue
		}
		kept = append(kept, c)
	}
	if opts.GraphMode == GraphFractal && branch {
		rest := base
		for _, c := range kept {
			rest -= c.Period
		}
		if rest != base {
			n.Rest = rest
		}
	}
	sort.SliceStable(kept, func(i, j int) bool {
		if kept[i].Period != kept[j].Period {
			return kept[i].Period > kept[j].Period
		}
		return kept[i].Label() < kept[j].Label()
	})
	return kept
}
