package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/perfcheck/perfcheck/addrspace"
	"github.com/perfcheck/perfcheck/buildid"
	"github.com/perfcheck/perfcheck/dso"
	"github.com/perfcheck/perfcheck/perfdata"
)

func init() {
	register(&command{
		name:    "buildids",
		usage:   "perfcheck buildids [--json] FILE",
		summary: "\"<build-id> <path>\" lines, as perf buildid-list -i",
		run:     runBuildIDs,
	})
}

// buildIDJSON is one line of perfcheck buildids --json (docs/commands.md).
type buildIDJSON struct {
	BuildID string `json:"build_id"` // "" when none is known
	Path    string `json:"path"`
	// Machine is "host", or "guest:PID" for a guest's DSOs.
	Machine string `json:"machine"`
	// Source says where the build-id came from: "header" (the BUILD_ID
	// table or HEADER_BUILD_ID records), "mmap2" (perf record
	// --buildid-mmap), or "" when there is none.
	Source string `json:"source"`
}

type buildIDsJSON struct {
	File string `json:"file"`
	// FromSamples is true when, as perf does for recordings without a
	// build-id table (pipe mode, perf record -z, --buildid-mmap), the list
	// is of the DSOs that samples hit rather than the table.
	FromSamples bool          `json:"from_samples"`
	DSOs        []buildIDJSON `json:"dsos"`
	Error       string        `json:"error,omitempty"`
}

func runBuildIDs(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	const name = "buildids"
	var withHits bool
	file, jsonOut, code := parseFileArgs(name, "perfcheck buildids [--json] [-H] FILE",
		"Prints what perf buildid-list -i FILE prints: a build-id, a space, the path.", args, stdin, stderr,
		func(fs *flag.FlagSet) {
			fs.BoolVar(&withHits, "with-hits", false, "only the DSOs that samples hit (perf buildid-list -H)")
			fs.BoolVar(&withHits, "H", false, "same as --with-hits")
		})
	if code >= 0 {
		return code
	}
	f, err := openRecording(file, stdin)
	if err != nil {
		return errorf(stderr, name, "%v", err)
	}
	defer f.Close()
	list, rerr := listBuildIDs(f, withHits)
	if jsonOut {
		out := buildIDsJSON{File: file, FromSamples: list.fromSamples, DSOs: []buildIDJSON{}}
		for _, d := range list.dsos {
			out.DSOs = append(out.DSOs, buildIDJSON{BuildID: d.bid.String(), Path: d.name, Machine: machineName(d.machine), Source: d.source})
		}
		if rerr != nil {
			out.Error = rerr.Error()
		}
		if err := writeJSON(stdout, out); err != nil {
			return errorf(stderr, name, "%v", err)
		}
	} else {
		for _, d := range list.dsos {
			// perf pads with spaces to 40 columns, so DSOs without a
			// build-id print as blanks and short ones are left-aligned
			// (__dsos__fprintf_buildid in tools/perf/util/dsos.c).
			fmt.Fprintf(stdout, "%-40s %s\n", d.bid.String(), d.name)
		}
	}
	if rerr != nil {
		return errorf(stderr, name, "%v", rerr)
	}
	return exitOK
}

func machineName(pid int32) string {
	if pid == -1 {
		return "host"
	}
	return fmt.Sprintf("guest:%d", pid)
}

// dsoList is what perf buildid-list prints.
type dsoList struct {
	fromSamples bool
	dsos        []*bidDSO
}

// listBuildIDs reproduces perf buildid-list -i (perf 6.1,
// tools/perf/builtin-buildid-list.c). A file-mode recording with a
// BUILD_ID table lists the table: one line per DSO, DSOs of the same
// name in one machine merged into the first line with the last
// build-id, host first, then guests by pid. Otherwise (pipe mode, no
// table) perf reads the records as its build_id__mark_dso_hit_ops tool
// does and lists the DSOs, in the order their maps were created, that a
// sample's IP fell in; their build-ids come from HEADER_BUILD_ID records
// and MMAP2 records that carry one (perf record --buildid-mmap), and are
// blank when neither gives one.
//
// withHits is perf's -H: the DSOs samples hit even when there is a table
// (the table's DSOs come first, with their build-ids, then those the
// records add).
func listBuildIDs(f *recording, withHits bool) (*dsoList, error) {
	t := newHitTracker()
	if !f.IsPipe() && f.Features().Has(perfdata.FeatureAuxtrace) {
		// perf lists the whole table of AUX-area recordings, -H or
		// not: it does not decode the trace to learn what was hit.
		withHits = false
	}
	if !f.IsPipe() && f.Features().Has(perfdata.FeatureBuildID) {
		es, err := f.Features().BuildIDs()
		if err != nil {
			return &dsoList{}, err
		}
		for _, e := range es {
			t.addTableEntry(e)
		}
		if !withHits {
			return &dsoList{dsos: t.ms.all(func(*bidDSO) bool { return true })}, nil
		}
	}
	rs := f.Records(perfdata.RecordsOptions{Ordered: true})
	for rs.Next() {
		t.record(rs.Record())
	}
	return &dsoList{fromSamples: true, dsos: t.ms.all(func(d *bidDSO) bool { return d.hit })}, rs.Err()
}

// bidDSO is a DSO as perf's struct dso holds it for buildid-list.
type bidDSO struct {
	name    string
	short   string // module DSOs are found by "[name]" (kmod_path__parse_name)
	id      dsoID
	bid     buildid.ID
	source  string
	hit     bool
	machine int32
	// fromHeader: the build-id came from the table or a HEADER_BUILD_ID
	// record (perf's dso->header_build_id).
	fromHeader bool
}

// dsoID is perf's struct dso_id: the MMAP2 device and inode numbers. perf
// 6.1 fills it from the MMAP2 union whatever its form, so for the build-id
// form it holds the build-id's bytes; bid stands for those.
type dsoID struct {
	maj, min, ino, gen uint64
	bid                string
}

// machine is one perf machine: its DSOs in creation order.
type machine struct {
	pid    int32
	dsos   []*bidDSO
	byName map[string][]*bidDSO // the same DSOs by name, in creation order
}

func (m *machine) add(d *bidDSO) {
	m.dsos = append(m.dsos, d)
	if m.byName == nil {
		m.byName = map[string][]*bidDSO{}
	}
	m.byName[d.name] = append(m.byName[d.name], d)
}

// findnew returns the DSO called name, creating it at the end of the list
// (machine__findnew_dso_id and dso_id__cmp in tools/perf/util/dsos.c). A
// DSO of that name matches unless both it and id have device/inode
// numbers and they differ; a DSO without them takes id's. perf 6.1 fills
// the id from the MMAP2 union whatever its form, so a build-id MMAP2 has
// a non-empty id made of the build-id: a later MMAP2 of the same path
// with real device/inode numbers is then another DSO.
func (m *machine) findnew(name string, id *dsoID) *bidDSO {
	if d := m.find(name, id); d != nil {
		if id != nil && d.id.empty() {
			d.id = *id
		}
		return d
	}
	d := &bidDSO{name: name, machine: m.pid}
	if id != nil {
		d.id = *id
	}
	m.add(d)
	return d
}

func (m *machine) find(name string, id *dsoID) *bidDSO {
	for _, d := range m.byName[name] {
		if id == nil || id.empty() || d.id.empty() || d.id.same(id) {
			return d
		}
	}
	return nil
}

func (a *dsoID) empty() bool { return *a == dsoID{} }

// same is __dso_id__cmp == 0: the inode generation counts only when both
// have one.
func (a *dsoID) same(b *dsoID) bool {
	if a.maj != b.maj || a.min != b.min || a.ino != b.ino || a.bid != b.bid {
		return false
	}
	return a.gen == 0 || b.gen == 0 || a.gen == b.gen
}

// findShort finds a DSO by its short name (a module's "[name]").
func (m *machine) findShort(short string) *bidDSO {
	for _, d := range m.dsos {
		if d.short == short {
			return d
		}
	}
	return nil
}

type machines struct {
	host   *machine
	guests []*machine // sorted by pid
}

func (ms *machines) get(pid int32) *machine {
	if pid == -1 {
		if ms.host == nil {
			ms.host = &machine{pid: -1}
		}
		return ms.host
	}
	i, ok := slices.BinarySearchFunc(ms.guests, pid, func(m *machine, p int32) int { return int(m.pid) - int(p) })
	if !ok {
		ms.guests = slices.Insert(ms.guests, i, &machine{pid: pid})
	}
	return ms.guests[i]
}

func (ms *machines) all(keep func(*bidDSO) bool) []*bidDSO {
	var out []*bidDSO
	for _, m := range append([]*machine{ms.host}, ms.guests...) {
		if m == nil {
			continue
		}
		for _, d := range m.dsos {
			if keep(d) {
				out = append(out, d)
			}
		}
	}
	return out
}

// hitTracker follows the records the way perf's build_id__mark_dso_hit_ops
// tool does (MMAP, MMAP2, FORK, EXIT, HEADER_BUILD_ID and SAMPLE, in
// timestamp order) to learn which DSOs samples hit. The address spaces
// are an addrspace.Tracker's, fed what that tool handles: no COMM (an
// exec keeps the old maps until new ones cover them, as in perf), and an
// EXIT deletes the exited process (ForgetExited). Which DSO a mapping
// belongs to follows perf's rules, kept here by mapping ID.
type hitTracker struct {
	ms    machines
	space *addrspace.Tracker
	dsoOf []*bidDSO // by addrspace.Mapping.ID; nil: a map perf gives no DSO
}

func newHitTracker() *hitTracker {
	t := &hitTracker{space: addrspace.New()}
	t.space.ForgetExited = true
	t.ms.get(-1)
	return t
}

func (t *hitTracker) record(r perfdata.Record) {
	h := r.Header()
	cpumode := h.CPUMode()
	switch x := r.(type) {
	case *perfdata.Mmap:
		prot := uint32(protExec)
		if x.IsData() {
			prot = 0
		}
		t.mmap(r, cpumode, x.PID, x.Addr, x.Len, x.Filename, prot, 0, nil, nil)
	case *perfdata.Mmap2:
		var id dsoID
		var bid buildid.ID
		if x.HasBuildID() {
			bid = bytes.Clone(x.BuildID)
			id.bid = bid.String()
		} else {
			id = dsoID{maj: uint64(x.Maj), min: uint64(x.Min), ino: x.Ino, gen: x.InoGeneration}
		}
		t.mmap(r, cpumode, x.PID, x.Addr, x.Len, x.Filename, x.Prot, x.Flags, &id, bid)
	case *perfdata.Fork, *perfdata.Exit:
		t.space.Update(r)
	case *perfdata.BuildIDRecord:
		e := x.Entry
		e.BuildID = slices.Clone(e.BuildID)
		t.addTableEntry(e)
	case *perfdata.Sample:
		if x.Fields&perfdata.SampleIP == 0 {
			return
		}
		pid := addrspace.KernelPID // perf's -1: no pid recorded
		if h.SampleID.Fields&perfdata.SampleTID != 0 {
			pid = h.SampleID.PID
		}
		var m *addrspace.Mapping
		switch cpumode {
		case perfdata.CPUModeKernel:
			m = t.space.Lookup(addrspace.KernelPID, cpumode, x.IP)
		case perfdata.CPUModeUser:
			// perf's tool looks in the thread's maps alone
			// (thread__find_map), not in the kernel's after them.
			if m = t.space.Lookup(pid, cpumode, x.IP); m != nil && m.PID == addrspace.KernelPID {
				m = nil
			}
		}
		if m != nil && m.ID < len(t.dsoOf) && t.dsoOf[m.ID] != nil {
			t.dsoOf[m.ID].hit = true
		}
	}
}

// addTableEntry is __event_process_build_id (tools/perf/util/header.c): a
// build-id table entry or HEADER_BUILD_ID record names a DSO of its
// machine, found or created by name, and gives it its build-id; a kernel
// module entry also gets its "[name]" short name (dso__set_module_info),
// by which module maps find it. Entries of other cpumodes are dropped.
func (t *hitTracker) addTableEntry(e perfdata.BuildIDEntry) {
	switch e.CPUMode {
	case perfdata.CPUModeKernel, perfdata.CPUModeGuestKernel:
	case perfdata.CPUModeUser, perfdata.CPUModeGuestUser:
	default:
		return
	}
	d := t.ms.get(e.PID).findnew(e.Filename, nil)
	d.bid, d.source, d.fromHeader = e.BuildID, "header", true
	if short, isModule := dso.ModuleName(e.Filename); isModule && (e.CPUMode == perfdata.CPUModeKernel || e.CPUMode == perfdata.CPUModeGuestKernel) {
		d.short = short
	}
}

const (
	protExec   = 0x4     // PROT_EXEC
	mapHugeTLB = 0x40000 // MAP_HUGETLB
)

// mmap is machine__process_mmap2_event with map__new: kernel-mode maps go
// to the kernel or a module, user maps to the process, with anonymous
// executable memory named /tmp/perf-PID.map (JIT maps) and the vDSO found
// by name. rec, the MMAP or MMAP2 record, goes to the address spaces
// where perf would keep a map of it.
func (t *hitTracker) mmap(rec perfdata.Record, cpumode perfdata.CPUMode, pid uint32, start, length uint64, name string, prot, flags uint32, id *dsoID, bid buildid.ID) {
	m := t.ms.host
	if cpumode == perfdata.CPUModeKernel || cpumode == perfdata.CPUModeGuestKernel {
		if d := t.kernelDSO(m, name, bid); d != nil {
			t.track(kernelRecord(rec), d)
		}
		return
	}
	anon := name == "//anon" || strings.HasPrefix(name, "/dev/zero") || strings.HasPrefix(name, "/anon_hugepage") || flags&mapHugeTLB != 0
	noDSO := strings.HasPrefix(name, "[stack") || strings.HasPrefix(name, "/SYSV") || name == "[heap]"
	if (anon || noDSO) && prot&protExec != 0 {
		name = fmt.Sprintf("/tmp/perf-%d.map", int32(pid))
	}
	var d *bidDSO
	if name == "[vdso]" || name == "[vdso32]" || name == "[vdsox32]" {
		// perf (machine__findnew_vdso) names this DSO after a
		// temporary copy of its own process's vDSO that it makes
		// while reading (/tmp/perf-vdso.so-XXXXXX from mkstemp),
		// which no other run can reproduce; "[vdso]" says what it is.
		d = m.findnew("[vdso]", nil)
	} else {
		d = m.findnew(name, id)
	}
	if len(bid) > 0 {
		d.bid, d.source = bid, "mmap2"
	} else if len(d.bid) == 0 {
		// map__new: a map without a build-id takes the one the
		// table gave a DSO of the same name, so that DSOs created
		// after the header still have it.
		if h := m.find(name, nil); h != nil && h.fromHeader {
			d.bid, d.source, d.fromHeader = h.bid, h.source, true
		}
	}
	// perf keeps no empty map, and one that wraps is never found.
	if start+length > start {
		t.track(rec, d)
	}
}

// track feeds an MMAP or MMAP2 record to the address spaces and files its
// mapping under d.
func (t *hitTracker) track(rec perfdata.Record, d *bidDSO) {
	if m := t.space.Update(rec); m != nil {
		for len(t.dsoOf) <= m.ID {
			t.dsoOf = append(t.dsoOf, nil)
		}
		t.dsoOf[m.ID] = d
	}
}

// kernelRecord returns rec, a kernel MMAP or MMAP2 record, as one of the
// host kernel: perf's tool puts a guest kernel's maps in the host's kernel
// maps too.
func kernelRecord(rec perfdata.Record) perfdata.Record {
	if rec.Header().CPUMode() != perfdata.CPUModeGuestKernel {
		return rec
	}
	const cpumodeMask = 7
	switch x := rec.(type) {
	case *perfdata.Mmap:
		c := *x
		c.Misc = c.Misc&^cpumodeMask | uint16(perfdata.CPUModeKernel)
		return &c
	case *perfdata.Mmap2:
		c := *x
		c.Misc = c.Misc&^cpumodeMask | uint16(perfdata.CPUModeKernel)
		return &c
	}
	return rec
}

// kernelDSO is machine__process_kernel_mmap_event: the DSO of a map of
// the kernel image ("[kernel.kallsyms]_text") or of a module (a path or
// another "[name]"); nil for a name perf makes no map of.
func (t *hitTracker) kernelDSO(m *machine, name string, bid buildid.ID) *bidDSO {
	const mmapName = "[kernel.kallsyms]"
	isKernel := strings.HasPrefix(name, mmapName[:len(mmapName)-1])
	var d *bidDSO
	switch {
	case strings.HasPrefix(name, "/") || (!isKernel && strings.HasPrefix(name, "[")):
		short, _ := dso.ModuleName(name)
		if d = m.findShort(short); d == nil {
			d = &bidDSO{name: name, short: short, machine: m.pid}
			m.add(d)
		}
	case isKernel:
		d = m.findnew(mmapName, nil)
	default:
		return nil
	}
	if len(bid) > 0 {
		d.bid, d.source = bid, "mmap2"
	}
	return d
}
