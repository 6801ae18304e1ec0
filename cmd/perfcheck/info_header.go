package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/perfcheck/perfcheck/perfdata"
)

// infoHeader is what info shows of the header features that describe the
// machine and the session: CPU and NUMA topology, caches, PMUs, event
// groups, the clock. The text prints them in perf report --header-only
// -I's words and order, so that the two can be compared line by line.
type infoHeader struct {
	CPUTopology *infoCPUTopologyJSON `json:"cpu_topology,omitempty"`
	NUMA        []infoNUMANodeJSON   `json:"numa_topology,omitempty"`
	PMUMappings []infoPMUMappingJSON `json:"pmu_mappings,omitempty"`
	Groups      []infoGroupJSON      `json:"groups,omitempty"`
	Caches      []infoCacheJSON      `json:"caches,omitempty"`
	// ClockResNS is CLOCKID: the resolution of the sampling clock.
	ClockResNS uint64           `json:"clock_resolution_ns,omitempty"`
	Clock      *infoClockJSON   `json:"clock_data,omitempty"`
	Hybrid     []infoHybridJSON `json:"hybrid_topology,omitempty"`
	// PMUCaps are the capabilities per PMU; "cpu" is CPU_PMU_CAPS.
	PMUCaps []infoPMUCapsJSON `json:"pmu_caps,omitempty"`
	// cpuCaps tells that CPU_PMU_CAPS was there, even empty.
	cpuCaps bool
}

type infoCPUTopologyJSON struct {
	Sockets []string      `json:"sockets"` // CPU lists of each socket
	Dies    []string      `json:"dies,omitempty"`
	Threads []string      `json:"threads"` // CPU lists of each core
	CPUs    []infoCPUJSON `json:"cpus,omitempty"`
}

type infoCPUJSON struct {
	CPU      int   `json:"cpu"`
	CoreID   int32 `json:"core_id"`
	DieID    int32 `json:"die_id"` // -1 when not recorded
	SocketID int32 `json:"socket_id"`
}

type infoNUMANodeJSON struct {
	Node       uint32 `json:"node"`
	MemTotalKB uint64 `json:"mem_total_kb"`
	MemFreeKB  uint64 `json:"mem_free_kb"`
	CPUs       string `json:"cpus"`
}

type infoPMUMappingJSON struct {
	Type uint32 `json:"type"`
	Name string `json:"name"`
}

type infoGroupJSON struct {
	Name    string   `json:"name,omitempty"` // "" for perf's {anon_group}
	Leader  uint32   `json:"leader"`         // index into events
	Members []string `json:"members"`        // event names, the leader first
}

type infoCacheJSON struct {
	Level    uint32 `json:"level"`
	Type     string `json:"type"`
	Size     string `json:"size"`
	LineSize uint32 `json:"line_size"`
	Sets     uint32 `json:"sets"`
	Ways     uint32 `json:"ways"`
	CPUs     string `json:"cpus"`
}

type infoClockJSON struct {
	ClockID     uint32 `json:"clockid"`
	Name        string `json:"name"`
	WallClockNS uint64 `json:"wall_clock_ns"`
	ClockNS     uint64 `json:"clock_ns"` // the sampling clock at the same instant
}

type infoHybridJSON struct {
	PMU  string `json:"pmu"`
	CPUs string `json:"cpus"`
}

type infoPMUCapsJSON struct {
	PMU  string   `json:"pmu"`
	Caps []string `json:"caps"` // "name=value", in the recorded order
}

// readHeader fills in the machine and session features.
func (in *infoJSON) readHeader(fs *perfdata.Features, events []perfdata.Event) {
	h, keep := &in.infoHeader, in.keep
	if t, err := fs.CPUTopology(); keep(perfdata.FeatureCPUTopology, err) && t != nil {
		ct := &infoCPUTopologyJSON{Sockets: t.CoreSiblings, Dies: t.DieSiblings, Threads: t.ThreadSiblings}
		for i, c := range t.CPUs {
			ct.CPUs = append(ct.CPUs, infoCPUJSON{CPU: i, CoreID: c.CoreID, DieID: c.DieID, SocketID: c.SocketID})
		}
		h.CPUTopology = ct
	}
	if nodes, err := fs.NUMATopology(); keep(perfdata.FeatureNUMATopology, err) {
		for _, n := range nodes {
			h.NUMA = append(h.NUMA, infoNUMANodeJSON{Node: n.Node, MemTotalKB: n.MemTotal, MemFreeKB: n.MemFree, CPUs: n.CPUs})
		}
	}
	if ms, err := fs.PMUMappings(); keep(perfdata.FeaturePMUMappings, err) {
		h.PMUMappings = []infoPMUMappingJSON{}
		for _, m := range ms {
			h.PMUMappings = append(h.PMUMappings, infoPMUMappingJSON{Type: m.Type, Name: m.Name})
		}
	}
	if gs, err := fs.GroupDesc(); keep(perfdata.FeatureGroupDesc, err) {
		h.Groups = infoGroups(gs, events)
	}
	if cs, err := fs.Cache(); keep(perfdata.FeatureCache, err) {
		h.Caches = []infoCacheJSON{}
		for _, c := range cs {
			h.Caches = append(h.Caches, infoCacheJSON{Level: c.Level, Type: c.Type, Size: c.Size,
				LineSize: c.LineSize, Sets: c.Sets, Ways: c.Ways, CPUs: c.Map})
		}
	}
	if res, err := fs.ClockID(); keep(perfdata.FeatureClockID, err) {
		h.ClockResNS = res
	}
	if cd, err := fs.ClockData(); keep(perfdata.FeatureClockData, err) {
		h.Clock = &infoClockJSON{ClockID: cd.ClockID, Name: clockName(cd.ClockID), WallClockNS: cd.WallClockNS, ClockNS: cd.ClockIDNS}
	}
	if hs, err := fs.HybridTopology(); keep(perfdata.FeatureHybridTopology, err) {
		for _, n := range hs {
			h.Hybrid = append(h.Hybrid, infoHybridJSON{PMU: n.PMUName, CPUs: n.CPUs})
		}
	}
	if caps, err := fs.CPUPMUCaps(); keep(perfdata.FeatureCPUPMUCaps, err) {
		h.cpuCaps = true
		h.PMUCaps = append(h.PMUCaps, infoPMUCapsJSON{PMU: "cpu", Caps: capStrings(caps)})
	}
	if ps, err := fs.PMUCaps(); keep(perfdata.FeaturePMUCaps, err) {
		for _, p := range ps {
			h.PMUCaps = append(h.PMUCaps, infoPMUCapsJSON{PMU: p.PMU, Caps: capStrings(p.Caps)})
		}
	}
}

// infoGroups names each group's events: a group is its leader and the
// events that follow it.
func infoGroups(gs []perfdata.GroupDesc, events []perfdata.Event) []infoGroupJSON {
	out := []infoGroupJSON{}
	for _, g := range gs {
		ig := infoGroupJSON{Leader: g.Leader, Members: []string{}}
		if g.Name != "{anon_group}" {
			ig.Name = g.Name
		}
		for i := uint64(g.Leader); i < uint64(g.Leader)+uint64(g.NrMembers) && i < uint64(len(events)); i++ {
			ig.Members = append(ig.Members, events[i].Name)
		}
		out = append(out, ig)
	}
	return out
}

func capStrings(caps []perfdata.PMUCap) []string {
	out := []string{}
	for _, c := range caps {
		out = append(out, c.Name+"="+c.Value)
	}
	return out
}

// clockName is perf's name of a clock id (clockid_name in builtin-record.c).
func clockName(id uint32) string {
	switch id {
	case 0:
		return "realtime"
	case 1:
		return "monotonic"
	case 4:
		return "monotonic_raw"
	case 7:
		return "boottime"
	case 11:
		return "tai"
	}
	return "(not found)"
}

// writeHeaderText prints the features in perf report --header-only -I's
// lines, without its "# ", indented under a heading.
func writeHeaderText(w io.Writer, h *infoHeader) {
	var lines []string
	add := func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }
	if t := h.CPUTopology; t != nil {
		for _, s := range t.Sockets {
			add("sibling sockets : %s", s)
		}
		for _, s := range t.Dies {
			add("sibling dies    : %s", s)
		}
		for _, s := range t.Threads {
			add("sibling threads : %s", s)
		}
		switch {
		case len(t.CPUs) > 0:
		case len(t.Dies) > 0:
			add("Core ID, Die ID and Socket ID information is not available")
		default:
			add("Core ID and Socket ID information is not available")
		}
		for _, c := range t.CPUs {
			if len(t.Dies) > 0 {
				add("CPU %d: Core ID %d, Die ID %d, Socket ID %d", c.CPU, c.CoreID, c.DieID, c.SocketID)
			} else {
				add("CPU %d: Core ID %d, Socket ID %d", c.CPU, c.CoreID, c.SocketID)
			}
		}
	}
	for _, n := range h.NUMA {
		add("node%d meminfo  : total = %d kB, free = %d kB", n.Node, n.MemTotalKB, n.MemFreeKB)
		add("node%d cpu list : %s", n.Node, n.CPUs)
	}
	if h.PMUMappings != nil {
		var ms []string
		for _, m := range h.PMUMappings {
			ms = append(ms, fmt.Sprintf("%s = %d", m.Name, m.Type))
		}
		add("pmu mappings: %s", strings.Join(ms, ", "))
	}
	for _, g := range h.Groups {
		if len(g.Members) > 1 {
			add("group: %s{%s}", g.Name, strings.Join(g.Members, ","))
		}
	}
	if h.Caches != nil {
		add("CPU cache info:")
		for _, c := range h.Caches {
			add(" L%d %-15s %8s [%s]", c.Level, c.Type, c.Size, c.CPUs)
		}
	}
	if h.ClockResNS != 0 {
		// perf's figure, the resolution times 1000, labelled MHz.
		add("clockid frequency: %d MHz", h.ClockResNS*1000)
	}
	caps := h.PMUCaps
	if h.cpuCaps {
		// CPU_PMU_CAPS comes between CLOCKID and CLOCK_DATA in perf's order, the
		// other PMUs' (PMU_CAPS) after it.
		add("%s", pmuCapsLine(caps[0]))
		caps = caps[1:]
	}
	if c := h.Clock; c != nil {
		tod := time.Unix(0, int64(c.WallClockNS)).UTC()
		add("clockid: %s (%d)", c.Name, c.ClockID)
		add("reference time: %s = %d.%06d (TOD) = %d.%09d (%s)", tod.Format("2006-01-02 15:04:05.000000"),
			tod.Unix(), tod.Nanosecond()/1000, c.ClockNS/1e9, c.ClockNS%1e9, c.Name)
	}
	if len(h.Hybrid) > 0 {
		add("hybrid cpu system:")
		for _, n := range h.Hybrid {
			add("%s cpu list : %s", n.PMU, n.CPUs)
		}
	}
	for _, p := range caps {
		add("%s", pmuCapsLine(p))
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintln(w, "header features (as perf report --header-only -I):")
	for _, l := range lines {
		fmt.Fprintln(w, "  "+l)
	}
}

func pmuCapsLine(p infoPMUCapsJSON) string {
	if len(p.Caps) == 0 {
		return p.PMU + " pmu capabilities: not available"
	}
	return p.PMU + " pmu capabilities: " + strings.Join(p.Caps, ", ")
}
