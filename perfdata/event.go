package perfdata

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// Event is one perf_event_attr of the recording with the sample ids that
// belong to it and its name.
type Event struct {
	Attr Attr
	IDs  []uint64
	// Name is the event name perf prints ("cycles:ppp", "cpu-clock"): from
	// the EVENT_DESC feature, a pipe-mode EVENT_UPDATE, for a tracepoint
	// the tracing data ("sched:sched_switch"), or, when the file names
	// none, derived from the attr as perf's evsel__name does.
	Name string
	// AttrName is the name derived from the attr alone, as perf's
	// evsel__name does for events it has no recorded name for ("cycles:uH").
	// perf 6.1 prints this name for pipe-mode streams even when they carry
	// EVENT_UPDATE or EVENT_DESC names.
	AttrName string
}

// eventSet holds the events of a recording and what is needed to find the
// event of a record (evlist__event2evsel in tools/perf/util/evlist.c).
type eventSet struct {
	events  []Event
	layouts []sampleLayout // of each event's SAMPLE records
	ids     map[uint64]int
	// From the first event, as perf's evlist keeps them.
	sampleIDAll bool
	idPos       int // u64 index of the id in a SAMPLE payload, -1 if none
	isPos       int // u64 index of the id counted from the end of other records, -1 if none
	named       []bool
}

func (es *eventSet) add(a Attr, ids []uint64, name string) {
	idx := len(es.events)
	attrName := defaultEventName(&a)
	if name == "" {
		name = attrName
	}
	es.events = append(es.events, Event{Attr: a, IDs: ids, Name: name, AttrName: attrName})
	es.layouts = append(es.layouts, newSampleLayout(a.SampleType))
	es.named = append(es.named, false)
	if es.ids == nil {
		es.ids = make(map[uint64]int)
	}
	for _, id := range ids {
		if _, dup := es.ids[id]; !dup {
			es.ids[id] = idx
		}
	}
	if idx == 0 {
		es.sampleIDAll = a.SampleIDAll()
		es.idPos = idPos(a.SampleType)
		es.isPos = isPos(a.SampleType)
	}
}

// setName names the event that has sample id id (EVENT_UPDATE NAME,
// EVENT_DESC); it reports whether one was found.
func (es *eventSet) setName(id uint64, name string) bool {
	i, ok := es.ids[id]
	if !ok {
		return false
	}
	es.events[i].Name = name
	es.named[i] = true
	return true
}

// idPos is __evsel__calc_id_pos (tools/perf/util/evsel.c).
func idPos(st SampleType) int {
	if st&SampleIdentifier != 0 {
		return 0
	}
	if st&SampleID == 0 {
		return -1
	}
	n := 0
	for _, b := range [...]SampleType{SampleIP, SampleTID, SampleTime, SampleAddr} {
		if st&b != 0 {
			n++
		}
	}
	return n
}

// isPos is __evsel__calc_is_pos (tools/perf/util/evsel.c).
func isPos(st SampleType) int {
	if st&SampleIdentifier != 0 {
		return 1
	}
	if st&SampleID == 0 {
		return -1
	}
	n := 1
	if st&SampleCPU != 0 {
		n++
	}
	if st&SampleStreamID != 0 {
		n++
	}
	return n
}

// lookup returns the index of the event that the kernel record rec (header
// included) belongs to, or -1 when there are no events.
func (es *eventSet) lookup(typ RecordType, rec []byte, order binary.ByteOrder) int {
	switch len(es.events) {
	case 0:
		return -1
	case 1:
		return 0
	}
	if typ != RecordSample && !es.sampleIDAll {
		return 0
	}
	var id uint64
	if typ == RecordSample {
		if es.idPos < 0 {
			return 0
		}
		off := 8 + 8*es.idPos
		if off+8 > len(rec) {
			return 0
		}
		id = order.Uint64(rec[off:])
	} else {
		if es.isPos < 0 {
			return 0
		}
		n := (len(rec) - 8) / 8
		if n-es.isPos < 0 {
			return 0
		}
		id = order.Uint64(rec[8+8*(n-es.isPos):])
	}
	if id == 0 {
		// Records perf synthesizes carry id 0: the first event.
		return 0
	}
	if i, ok := es.ids[id]; ok {
		return i
	}
	// perf drops records whose id it cannot map; keep them, on the first
	// event, so that counts stay whole.
	return 0
}

// Names of the generic events (evsel__hw_names, evsel__sw_names and
// evsel__hw_cache* in tools/perf/util/evsel.c).
var (
	hwEventNames = [...]string{"cycles", "instructions", "cache-references", "cache-misses",
		"branches", "branch-misses", "bus-cycles", "stalled-cycles-frontend",
		"stalled-cycles-backend", "ref-cycles"}
	swEventNames = [...]string{"cpu-clock", "task-clock", "page-faults", "context-switches",
		"cpu-migrations", "minor-faults", "major-faults", "alignment-faults",
		"emulation-faults", "dummy", "bpf-output", "cgroup-switches"}
	hwCacheNames   = [...]string{"L1-dcache", "L1-icache", "LLC", "dTLB", "iTLB", "branch", "node"}
	hwCacheOps     = [...]string{"load", "store", "prefetch"}
	hwCacheResults = [...]string{"refs", "misses"}
)

// defaultEventName names an event from its attr when the file does not, as
// evsel__name does for events without a recorded name.
func defaultEventName(a *Attr) string {
	var base string
	switch a.Type {
	case AttrTypeHardware:
		if a.Config < uint64(len(hwEventNames)) {
			base = hwEventNames[a.Config]
		} else {
			base = fmt.Sprintf("unknown-hardware:%#x", a.Config)
		}
	case AttrTypeSoftware:
		if a.Config < uint64(len(swEventNames)) {
			base = swEventNames[a.Config]
		} else {
			base = fmt.Sprintf("unknown-software:%#x", a.Config)
		}
	case AttrTypeHWCache:
		c, op, res := a.Config&0xff, a.Config>>8&0xff, a.Config>>16&0xff
		if c < uint64(len(hwCacheNames)) && op < uint64(len(hwCacheOps)) && res < uint64(len(hwCacheResults)) {
			if res == 0 {
				base = hwCacheNames[c] + "-" + hwCacheOps[op] + "s"
			} else {
				base = hwCacheNames[c] + "-" + hwCacheOps[op] + "-" + hwCacheResults[res]
			}
		} else {
			base = "invalid-cache"
		}
	case AttrTypeRaw:
		base = fmt.Sprintf("raw 0x%x", a.Config)
	case AttrTypeBreakpoint:
		base = fmt.Sprintf("mem:0x%x", a.Config1)
	case AttrTypeTracepoint:
		return fmt.Sprintf("tracepoint:%d", a.Config)
	default:
		return fmt.Sprintf("unknown attr type: %d", a.Type)
	}
	return base + eventModifiers(a)
}

// eventModifiers is evsel__add_modifiers (tools/perf/util/evsel.c): ":u",
// ":k", ":ppp", ":H"... from the attr's exclude and precise bits.
func eventModifiers(a *Attr) string {
	var b strings.Builder
	f := a.Flags
	excludeGuestDefault := false
	put := func(excluded bool, c byte) {
		if !excluded {
			b.WriteByte(c)
		}
	}
	if f&(FlagExcludeKernel|FlagExcludeUser|FlagExcludeHV) != 0 {
		put(f&FlagExcludeKernel != 0, 'k')
		put(f&FlagExcludeUser != 0, 'u')
		put(f&FlagExcludeHV != 0, 'h')
		excludeGuestDefault = true
	}
	if p := a.PreciseIP(); p > 0 {
		b.WriteString("ppp"[:p])
		excludeGuestDefault = true
	}
	if f&FlagExcludeHost != 0 || (f&FlagExcludeGuest != 0) == excludeGuestDefault {
		put(f&FlagExcludeHost != 0, 'H')
		put(f&FlagExcludeGuest != 0, 'G')
	}
	if b.Len() == 0 {
		return ""
	}
	return ":" + b.String()
}
