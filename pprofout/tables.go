package pprofout

import (
	"strings"

	"github.com/perfcheck/perfcheck/check"
	"github.com/perfcheck/perfcheck/dso"
	"github.com/perfcheck/perfcheck/symbolize"
)

// tables are the parts of a profile that grow with what is distinct in
// the output, not with its stacks: sample types, mappings, locations and
// functions. Write streams the samples and then encodes these; Convert
// turns them into google/pprof's structures. IDs are 1-based and dense: the
// ID of mappings[i], locations[i] and functions[i] is i+1.
type tables struct {
	sampleTypes []valueType
	periodType  *valueType // with one event
	defaultType string

	mappings []mapping
	mapOf    map[*check.DSO]int    // index in mappings
	bases    map[*check.DSO]uint64 // address of offset 0, for file-backed DSOs
	next     uint64                // synthetic base of the next file-backed DSO without a mapping

	// locations[i] is the location of res.Locations[i]; its lines are
	// lines[lineAt[i]:lineAt[i+1]].
	locations []location
	lineAt    []int
	lines     []line

	functions []function
	funcIDs   map[function]uint64   // by value, as pprof's own builders dedup
	labelIDs  map[*check.DSO]uint64 // each DSO's label function, once made
}

// valueType is a pprof ValueType.
type valueType struct{ typ, unit string }

// mapping is a pprof Mapping.
type mapping struct {
	start, limit, offset uint64
	file, buildID        string
	hasFunctions         bool
	hasFilenames         bool
	hasLineNumbers       bool
	hasInlineFrames      bool
}

// location is a pprof Location but for its lines (tables.lines).
type location struct {
	mapping uint64 // ID
	address uint64
}

// line is a pprof Line.
type line struct {
	function     uint64 // ID
	line, column int64
}

// function is a pprof Function without its ID; it is also the key that
// functions are deduplicated by.
type function struct{ name, systemName, filename string }

// buildTables lays out res's mappings, locations and functions and its
// sample types.
func buildTables(res *check.Result) *tables {
	t := &tables{
		mapOf:    map[*check.DSO]int{},
		bases:    map[*check.DSO]uint64{},
		next:     fileBase,
		funcIDs:  map[function]uint64{},
		labelIDs: map[*check.DSO]uint64{},
	}
	t.addSampleTypes(res)
	dsos, spans := usedDSOs(res)
	for _, d := range dsos {
		t.addMapping(res, d, spans[d])
	}
	t.addLocations(res)
	t.pointAtFoundFiles(dsos)
	return t
}

// numEvents is the number of events a profile of res has sample types for:
// at least one.
func numEvents(res *check.Result) int { return max(res.NumEvents(), 1) }

// addSampleTypes gives the profile two sample types per event (samples,
// period) and, with one event, its period type.
func (t *tables) addSampleTypes(res *check.Result) {
	nev := numEvents(res)
	events := res.EventInfo
	for i := 0; i < nev; i++ {
		name := res.EventName(i)
		unit := "count"
		if i < len(events) {
			unit = PeriodUnit(&events[i].Attr)
		}
		samples := "samples"
		if nev > 1 {
			samples = name + "_samples"
		}
		t.sampleTypes = append(t.sampleTypes, valueType{samples, "count"}, valueType{name, unit})
		if i == 0 {
			t.defaultType = name
		}
	}
	if nev == 1 {
		pt := t.sampleTypes[1]
		t.periodType = &pt
	}
}

// addLocations adds a location per location of the check, in its order,
// with its frames when its DSO is trusted.
func (t *tables) addLocations(res *check.Result) {
	t.locations = make([]location, 0, len(res.Locations))
	t.lineAt = make([]int, 0, len(res.Locations)+1)
	t.lines = make([]line, 0, len(res.Locations)) // a line at least per location
	for _, l := range res.Locations {
		mi := t.mapOf[l.DSO]
		pl := location{mapping: uint64(mi + 1), address: l.Offset}
		if !addrKind(l.DSO) {
			pl.address = t.bases[l.DSO] + l.Offset
		}
		t.lineAt = append(t.lineAt, len(t.lines))
		if !refused(l.DSO) {
			t.addLines(&t.mappings[mi], l)
		}
		if len(t.lines) == t.lineAt[len(t.lineAt)-1] {
			// No name may be given here (or none is known): a
			// location without a function vanishes from pprof's stack
			// views (flame graph, peek, traces), its weight drawn as
			// its caller's own. An honest label keeps it in every
			// view; the mapping's Has* flags stay unset, so pprof
			// still symbolizes it when it finds the binary by build-id.
			t.lines = append(t.lines, line{function: t.labelFunction(l.DSO)})
		}
		t.locations = append(t.locations, pl)
	}
	t.lineAt = append(t.lineAt, len(t.lines))
}

// addLines adds the lines of the frames the check named at l, innermost
// first, and sets the Has* flags of m that they justify.
func (t *tables) addLines(m *mapping, l *check.Location) {
	for i := range l.Frames {
		f := &l.Frames[i]
		if f.Name() == "" {
			continue
		}
		t.lines = append(t.lines, line{function: t.function(f), line: int64(f.Line), column: int64(f.Column)})
		m.hasFunctions = true
		if f.File != "" {
			m.hasFilenames = true
		}
		if f.Line > 0 {
			m.hasLineNumbers = true
		}
		if f.Inlined {
			m.hasInlineFrames = true
		}
	}
}

// label is the name pprof shows for the locations of d that have no
// function: "[verdict] base" for a DSO whose names are refused
// ("[mismatch] libfoo.so.1"), "[base]" for memory without a file and for
// addresses a trusted binary has no symbol for ("[libc.so.6]", as pprof
// itself names an unsymbolized mapping; bracketed names such as
// "[kernel.kallsyms]" or "[unknown]" as they are). One label per DSO and
// verdict, not per address: the weight of an untrusted binary stays in one
// node that pprof's graph pruning cannot scatter, as `perfcheck top`
// groups it; the addresses stay in the locations.
func label(d *check.DSO) string {
	base := dso.BaseName(d.Path)
	if refused(d) {
		return "[" + d.Verdict.String() + "] " + base
	}
	if strings.HasPrefix(base, "[") {
		return base
	}
	return "[" + base + "]"
}

// labelFunction returns the ID of the function named label(d), added on
// first use. Its system name is the DSO's full path with the verdict, so
// that two DSOs of one base name stay two functions in the profile.
func (t *tables) labelFunction(d *check.DSO) uint64 {
	if id, ok := t.labelIDs[d]; ok {
		return id
	}
	key := function{name: label(d), systemName: d.Path}
	if refused(d) {
		key.systemName = "[" + d.Verdict.String() + "] " + d.Path
	}
	id := t.addFunction(key)
	t.labelIDs[d] = id
	return id
}

// function returns the ID of the function of frame f, added on first use.
func (t *tables) function(f *symbolize.Frame) uint64 {
	key := function{name: f.Name(), systemName: f.RawName, filename: f.File}
	if key.systemName == "" {
		key.systemName = key.name
	}
	return t.addFunction(key)
}

// addFunction returns the ID of the function equal to key, added with the
// next ID on first use: pprof dedups functions by value.
func (t *tables) addFunction(key function) uint64 {
	if id, ok := t.funcIDs[key]; ok {
		return id
	}
	t.functions = append(t.functions, key)
	id := uint64(len(t.functions))
	t.funcIDs[key] = id
	return id
}

// pointAtFoundFiles makes the mapping of a trusted DSO that was found
// elsewhere than at its path (perf's cache, a debug directory,
// debuginfod) and got no names from us name the verified file, not
// whatever is at the path now.
func (t *tables) pointAtFoundFiles(dsos []*check.DSO) {
	for _, d := range dsos {
		m := &t.mappings[t.mapOf[d]]
		if !refused(d) && !m.hasFunctions && d.Verdict == check.Verified && d.FoundPath != "" && !addrKind(d) {
			m.file = d.FoundPath
		}
	}
}
