package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/perfcheck/perfcheck/buildid"
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
		"Prints what perf buildid-list -i FILE prints: a build-id, a space, the path.", args, stderr,
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

// bidMap is one mapping [start, end) of a DSO.
type bidMap struct {
	start, end uint64
	dso        *bidDSO
}

// addrSpace is a process's maps (perf's struct maps), kept sorted and
// without overlaps: a new map replaces what it covers, as
// maps__fixup_overlappings does.
type addrSpace struct{ maps []bidMap }

func (a *addrSpace) insert(m bidMap) {
	if m.end <= m.start {
		return
	}
	// The maps are sorted and disjoint, so their ends are sorted too:
	// [i, j) are those that overlap m.
	i := sort.Search(len(a.maps), func(k int) bool { return a.maps[k].end > m.start })
	j := i
	for j < len(a.maps) && a.maps[j].start < m.end {
		j++
	}
	repl := make([]bidMap, 0, 3)
	if i < j && a.maps[i].start < m.start {
		repl = append(repl, bidMap{a.maps[i].start, m.start, a.maps[i].dso})
	}
	repl = append(repl, m)
	if i < j && a.maps[j-1].end > m.end {
		repl = append(repl, bidMap{m.end, a.maps[j-1].end, a.maps[j-1].dso})
	}
	a.maps = slices.Replace(a.maps, i, j, repl...)
}

func (a *addrSpace) find(addr uint64) *bidDSO {
	i, _ := slices.BinarySearchFunc(a.maps, addr, func(m bidMap, addr uint64) int {
		if m.start > addr {
			return 1
		}
		return -1
	})
	if i > 0 && addr < a.maps[i-1].end {
		return a.maps[i-1].dso
	}
	return nil
}

func (a *addrSpace) clone() *addrSpace { return &addrSpace{maps: slices.Clone(a.maps)} }

// bidThread is a perf thread: its pid and the maps it shares with its
// process.
type bidThread struct {
	pid  int64
	maps *addrSpace
}

// hitTracker follows the records the way perf's build_id__mark_dso_hit_ops
// tool does (MMAP, MMAP2, FORK, EXIT, HEADER_BUILD_ID and SAMPLE, in
// timestamp order) to learn which DSOs samples hit.
type hitTracker struct {
	ms      machines
	threads map[int64]*bidThread // by tid
	// kernel maps: the kernel and its modules, which may overlap.
	kmaps []bidMap
}

func newHitTracker() *hitTracker {
	t := &hitTracker{threads: map[int64]*bidThread{}}
	t.ms.get(-1)
	return t
}

// findnewThread is machine__findnew_thread: a new thread that is not a
// process leader shares its leader's maps.
func (t *hitTracker) findnewThread(pid, tid int64) *bidThread {
	if th, ok := t.threads[tid]; ok {
		return th
	}
	th := &bidThread{pid: pid}
	t.threads[tid] = th
	if pid == tid || pid == -1 {
		th.maps = &addrSpace{}
	} else {
		th.maps = t.findnewThread(pid, pid).maps
	}
	return th
}

func (t *hitTracker) record(r perfdata.Record) {
	h := r.Header()
	cpumode := perfdata.CPUMode(h.Misc & 7)
	switch x := r.(type) {
	case *perfdata.Mmap:
		prot := uint32(protExec)
		if h.Misc&(1<<13) != 0 { // PERF_RECORD_MISC_MMAP_DATA
			prot = 0
		}
		t.mmap(cpumode, int64(int32(x.PID)), int64(int32(x.TID)), x.Addr, x.Len, x.Filename, prot, 0, nil, nil)
	case *perfdata.Mmap2:
		var id dsoID
		var bid buildid.ID
		if x.HasBuildID() {
			bid = bytes.Clone(x.BuildID)
			id.bid = bid.String()
		} else {
			id = dsoID{maj: uint64(x.Maj), min: uint64(x.Min), ino: x.Ino, gen: x.InoGeneration}
		}
		t.mmap(cpumode, int64(int32(x.PID)), int64(int32(x.TID)), x.Addr, x.Len, x.Filename, x.Prot, x.Flags, &id, bid)
	case *perfdata.Fork:
		t.fork(int64(int32(x.PID)), int64(int32(x.PPID)), int64(int32(x.TID)), int64(int32(x.PTID)))
	case *perfdata.Exit:
		delete(t.threads, int64(int32(x.TID)))
	case *perfdata.BuildIDRecord:
		e := x.Entry
		e.BuildID = slices.Clone(e.BuildID)
		t.addTableEntry(e)
	case *perfdata.Sample:
		if x.Fields&perfdata.SampleIP == 0 {
			return
		}
		pid, tid := int64(-1), int64(-1)
		if h.SampleID.Fields&perfdata.SampleTID != 0 {
			pid, tid = int64(int32(h.SampleID.PID)), int64(int32(h.SampleID.TID))
		}
		var d *bidDSO
		switch cpumode {
		case perfdata.CPUModeKernel:
			d = t.kfind(x.IP)
		case perfdata.CPUModeUser:
			d = t.findnewThread(pid, tid).maps.find(x.IP)
		}
		if d != nil {
			d.hit = true
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
	if (e.CPUMode == perfdata.CPUModeKernel || e.CPUMode == perfdata.CPUModeGuestKernel) && isKmod(e.Filename) {
		d.short = kmodName(e.Filename)
	}
}

// isKmod is kmod_path__parse_name's verdict: a .ko file (maybe
// compressed) or a "[name]" that is not the kernel or the vDSO.
func isKmod(name string) bool {
	if strings.HasPrefix(name, "[") {
		return !strings.HasPrefix(name, "[kernel.kallsyms") && !strings.HasPrefix(name, "[guest.kernel.kallsyms") &&
			!strings.HasPrefix(name, "[vdso") && !strings.HasPrefix(name, "[vsyscall")
	}
	b := name
	for _, ext := range []string{".gz", ".xz", ".zst", ".bz2"} {
		b = strings.TrimSuffix(b, ext)
	}
	return strings.HasSuffix(b, ".ko")
}

const (
	protExec   = 0x4     // PROT_EXEC
	mapHugeTLB = 0x40000 // MAP_HUGETLB
)

// mmap is machine__process_mmap2_event with map__new: kernel-mode maps go
// to the kernel or a module, user maps to the thread's process, with
// anonymous executable memory named /tmp/perf-PID.map (JIT maps) and the
// vDSO found by name.
func (t *hitTracker) mmap(cpumode perfdata.CPUMode, pid, tid int64, start, length uint64, name string, prot, flags uint32, id *dsoID, bid buildid.ID) {
	m := t.ms.host
	if cpumode == perfdata.CPUModeKernel || cpumode == perfdata.CPUModeGuestKernel {
		t.kernelMmap(m, start, length, name, bid)
		return
	}
	th := t.findnewThread(pid, tid)
	anon := name == "//anon" || strings.HasPrefix(name, "/dev/zero") || strings.HasPrefix(name, "/anon_hugepage") || flags&mapHugeTLB != 0
	noDSO := strings.HasPrefix(name, "[stack") || strings.HasPrefix(name, "/SYSV") || name == "[heap]"
	if (anon || noDSO) && prot&protExec != 0 {
		name = fmt.Sprintf("/tmp/perf-%d.map", th.pid)
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
	th.maps.insert(bidMap{start, start + length, d})
}

// kernelMmap is machine__process_kernel_mmap_event: the kernel image
// ("[kernel.kallsyms]_text") or a module (a path or another "[name]").
func (t *hitTracker) kernelMmap(m *machine, start, length uint64, name string, bid buildid.ID) {
	const mmapName = "[kernel.kallsyms]"
	isKernel := strings.HasPrefix(name, mmapName[:len(mmapName)-1])
	var d *bidDSO
	switch {
	case strings.HasPrefix(name, "/") || (!isKernel && strings.HasPrefix(name, "[")):
		short := kmodName(name)
		if d = m.findShort(short); d == nil {
			d = &bidDSO{name: name, short: short, machine: m.pid}
			m.add(d)
		}
	case isKernel:
		d = m.findnew(mmapName, nil)
		// The kernel map is replaced, not added to.
		t.kmaps = slices.DeleteFunc(t.kmaps, func(k bidMap) bool { return k.dso == d })
	default:
		return
	}
	if len(bid) > 0 {
		d.bid, d.source = bid, "mmap2"
	}
	t.kmaps = append(t.kmaps, bidMap{start, start + length, d})
}

// kfind finds a kernel address: the innermost (latest-starting) map that
// holds it, so that a module inside the kernel map's range wins.
func (t *hitTracker) kfind(addr uint64) *bidDSO {
	var best *bidMap
	for i := range t.kmaps {
		k := &t.kmaps[i]
		if addr >= k.start && addr < k.end && (best == nil || k.start > best.start) {
			best = k
		}
	}
	if best == nil {
		return nil
	}
	return best.dso
}

// kmodName is the short name perf gives a kernel module
// (kmod_path__parse_name): "[name]" from "/path/name.ko[.gz|.xz|.zst]",
// with dashes turned into underscores.
func kmodName(p string) string {
	if strings.HasPrefix(p, "[") {
		return p
	}
	b := path.Base(p)
	for _, ext := range []string{".gz", ".xz", ".zst", ".bz2"} {
		b = strings.TrimSuffix(b, ext)
	}
	b = strings.TrimSuffix(b, ".ko")
	return "[" + strings.ReplaceAll(b, "-", "_") + "]"
}

// fork is machine__process_fork_event: a new thread of the same process
// shares the parent's maps, a new process gets a copy.
func (t *hitTracker) fork(pid, ppid, tid, ptid int64) {
	parent := t.findnewThread(ppid, ptid)
	if parent.pid != ppid {
		delete(t.threads, ptid)
		parent = t.findnewThread(ppid, ptid)
	}
	delete(t.threads, tid)
	th := t.findnewThread(pid, tid)
	if th.pid != parent.pid && th.maps != parent.maps {
		th.maps.maps = slices.Clone(parent.maps.maps)
	}
}
