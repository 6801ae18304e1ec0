package check

import "sort"

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
	Event   int    // index in Result.Events
	Samples uint64 // samples of the event
	Period  uint64 // sum of their periods: 100% of self and of total
	Entries []TopEntry
	Omitted int // entries beyond n
}

// Percent is v as a percentage of the table's period.
func (t *TopTable) Percent(v uint64) float64 {
	if t.Period == 0 {
		return 0
	}
	return float64(v) * 100 / float64(t.Period)
}

// Top ranks the functions of each event that has samples, as `perf report
// --no-children --sort sym` (self, the default) or `--children` (byTotal)
// does, weighted by period, and keeps the first n entries of each (all
// when n is 0). Ordered by self, entries without self time are left out,
// as perf does. A named location counts for its outermost function
// (inlined callees are not split out, as perf report without --inline);
// Total counts each entry once per sample however often recursion repeats
// it. It works on Aggregates, so it needs no per-sample data.
func Top(r *Result, byTotal bool, n int) []TopTable {
	type acc struct {
		self, total, selfN, totalN uint64
		seen                       int // 1 + the aggregate that last counted it in total
	}
	aggs := r.Aggregates()
	nev := len(r.Events)
	for _, ag := range aggs {
		if ag.Event >= nev {
			nev = ag.Event + 1
		}
	}
	// Entries get dense indexes, and each location the index of its
	// entry, once: the loop over every frame of every aggregate (millions
	// on a large recording) then only indexes slices.
	var keys []topKey
	keyIdx := map[topKey]int32{}
	entryOf := func(l *Location) int32 {
		k := topKeyOf(l)
		i, ok := keyIdx[k]
		if !ok {
			i = int32(len(keys))
			keys = append(keys, k)
			keyIdx[k] = i
		}
		return i
	}
	locEntry := make([]int32, len(r.Locations))
	for i, l := range r.Locations {
		locEntry[i] = entryOf(l)
	}
	entry := func(l *Location) int32 {
		if i := l.ID - 1; i >= 0 && i < len(r.Locations) && r.Locations[i] == l {
			return locEntry[i]
		}
		return entryOf(l) // a Location not in r.Locations (not made by Finish)
	}
	per := make([][]acc, nev)
	samples := make([]uint64, nev)
	period := make([]uint64, nev)
	for ai, ag := range aggs {
		samples[ag.Event] += ag.Samples
		period[ag.Event] += ag.Period
		m := per[ag.Event]
		for i, l := range ag.Stack.Locations() {
			k := entry(l)
			if int(k) >= len(m) {
				m = append(m, make([]acc, len(keys)-len(m))...)
				per[ag.Event] = m
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
		if per[ag.Event] == nil {
			per[ag.Event] = []acc{} // the event has samples
		}
	}
	var out []TopTable
	for ev, m := range per {
		if m == nil {
			continue
		}
		t := TopTable{Event: ev, Samples: samples[ev], Period: period[ev]}
		for k := range m {
			v := &m[k]
			if v.seen == 0 || !byTotal && v.self == 0 {
				continue
			}
			t.Entries = append(t.Entries, TopEntry{Name: keys[k].name, DSO: keys[k].dso, Self: v.self, Total: v.total,
				SelfSamples: v.selfN, TotalSamples: v.totalN})
		}
		sort.SliceStable(t.Entries, func(i, j int) bool {
			x, y := &t.Entries[i], &t.Entries[j]
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
		if n > 0 && len(t.Entries) > n {
			t.Omitted = len(t.Entries) - n
			t.Entries = t.Entries[:n]
		}
		out = append(out, t)
	}
	return out
}

// topKey identifies an entry: a named function of a DSO, or a DSO's group.
type topKey struct {
	name string
	dso  *DSO
}

func topKeyOf(l *Location) topKey {
	if n := len(l.Frames); n > 0 {
		f := l.Frames[n-1]
		name := f.Function
		if name == "" {
			name = f.RawName
		}
		if name != "" {
			return topKey{name: name, dso: l.DSO}
		}
	}
	return topKey{dso: l.DSO}
}
