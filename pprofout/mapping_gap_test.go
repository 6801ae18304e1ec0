package pprofout

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/perfcheck/perfcheck/buildid"
	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// perfMmap is one executable mapping as perf script --show-mmap-events
// prints it: "PERF_RECORD_MMAP2 pid/tid: [0xSTART(0xLEN) @ PGOFF ...]: r-xp PATH".
type perfMmap struct {
	path                string
	start, limit, pgoff uint64
	stale               bool // from before the process's last exec
}

// perfScriptView is what perf script (perf 6.1) says about a recording:
// each file's first executable mapping, and every sample as its thread and
// its frames, leaf first, counted.
type perfScriptView struct {
	mmaps  map[string]perfMmap
	stacks map[string]int // "tid| frame frame ..." -> samples
	n      int
	// afterExec counts the frames perf resolved through a mapping the
	// process had before its exec (see perfScript).
	afterExec int
	// names are perf's function name of each frame it names.
	names map[string]string
}

var (
	perfMmapLine = regexp.MustCompile(`PERF_RECORD_MMAP2? (-?\d+)/(-?\d+): \[0x([0-9a-f]+)\((0x[0-9a-f]+)\) @ (0x[0-9a-f]+|\d+)(?: [^\]]*)?\]: (\S+) (.+)$`)
	perfForkLine = regexp.MustCompile(`PERF_RECORD_FORK\((-?\d+):(-?\d+)\):\((-?\d+):(-?\d+)\)`)
	perfExecLine = regexp.MustCompile(`PERF_RECORD_COMM exec: .*:(-?\d+)/(-?\d+)$`)
	perfHeadLine = regexp.MustCompile(`^\s*(-?\d+)/(-?\d+)\s*$`)
	// A frame: address, symbol, the DSO in parentheses.
	perfIPLine = regexp.MustCompile(`^\s+([0-9a-f]+) (?:(.*) )?\(([^()]*)\)$`)
)

// perfScript runs `perf script -F pid,tid,ip,sym,dso --show-mmap-events
// --show-task-events` on data and parses it. perf prints a user frame as
// its map-relative address (map__map_ip: ip - start + pgoff;
// sample__fprintf_callchain in tools/perf/util/evsel_fprintf.c shows the
// binary offset for user addresses) and a kernel or unmapped frame as the
// address itself.
//
// One difference is deliberate and accounted for here: perf keeps a
// process's maps across exec (machine__process_comm_event does not flush
// them; new MMAPs overwrite), so a sample taken inside execve after the
// kernel's COMM exec event, whose user IP is still the old image's, is
// named from the old mapping. addrspace.Tracker drops the maps at exec (the
// kernel has already replaced the address space), so perfcheck shows that
// frame as an unmapped address. The parser follows the task events to
// recognise such frames and writes them as perfcheck does, counting them.
func perfScript(t *testing.T, data, root string) *perfScriptView {
	t.Helper()
	cmd := exec.Command("perf", "script", "-i", data, "--symfs", root, "-F", "pid,tid,ip,sym,dso",
		"--show-mmap-events", "--show-task-events", "--no-inline")
	cmd.Env = append(os.Environ(), "LC_ALL=C", "HOME="+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("perf script: %v\n%s", err, stderr.Bytes())
	}
	v := &perfScriptView{mmaps: map[string]perfMmap{}, stacks: map[string]int{}, names: map[string]string{}}
	procs := map[string][]perfMmap{} // pid -> executable maps, oldest first
	var key []string                 // the sample being read: tid, then its frames
	var pid string
	flush := func() {
		if key != nil {
			v.stacks[strings.Join(key, " ")]++
			v.n++
		}
		key = nil
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if m := perfMmapLine.FindStringSubmatch(l); m != nil {
			flush()
			if !strings.Contains(m[6], "x") {
				continue
			}
			start, _ := strconv.ParseUint(m[3], 16, 64)
			size, _ := strconv.ParseUint(m[4], 0, 64)
			pgoff, _ := strconv.ParseUint(m[5], 0, 64)
			mm := perfMmap{path: m[7], start: start, limit: start + size, pgoff: pgoff}
			if _, seen := v.mmaps[mm.path]; !seen {
				v.mmaps[mm.path] = mm
			}
			procs[m[1]] = append(procs[m[1]], mm)
			continue
		}
		if m := perfForkLine.FindStringSubmatch(l); m != nil {
			flush()
			if m[1] != m[3] { // a new process, not a thread: a copy of the parent's maps
				procs[m[1]] = slices.Clone(procs[m[3]])
			}
			continue
		}
		if m := perfExecLine.FindStringSubmatch(l); m != nil {
			flush()
			for i := range procs[m[1]] {
				procs[m[1]][i].stale = true
			}
			continue
		}
		if strings.Contains(l, "PERF_RECORD_") {
			flush()
			continue
		}
		if m := perfHeadLine.FindStringSubmatch(l); m != nil {
			flush()
			pid, key = m[1], []string{m[2] + "|"}
			continue
		}
		if m := perfIPLine.FindStringSubmatch(l); m != nil {
			if key == nil {
				t.Fatalf("perf script printed a frame outside a sample: %q", l)
			}
			addr, _ := strconv.ParseUint(m[1], 16, 64)
			sym, dso := m[2], m[3]
			if !strings.HasPrefix(dso, "[kernel") && dso != "[unknown]" {
				// The newest map of the file that holds this offset.
				maps := procs[pid]
				for i := len(maps) - 1; i >= 0; i-- {
					mm := maps[i]
					if mm.path == dso && addr >= mm.pgoff && addr < mm.pgoff+(mm.limit-mm.start) {
						if mm.stale {
							dso, addr = "[unknown]", addr-mm.pgoff+mm.start
							v.afterExec++
						}
						break
					}
				}
			}
			k := frameKey(dso, addr)
			key = append(key, k)
			if sym != "" && sym != "[unknown]" {
				v.names[k] = sym
			}
			continue
		}
		if strings.TrimSpace(l) != "" {
			t.Fatalf("perf script printed a line this test does not know: %q", l)
		}
	}
	flush()
	if v.n == 0 {
		t.Fatalf("perf script printed no sample:\n%.2000s", out)
	}
	return v
}

func frameKey(dso string, addr uint64) string { return fmt.Sprintf("%s@%#x", dso, addr) }

// verdictSuffix is what pprofout appends to an untrusted mapping's file
// name (" [mismatch]") so pprof cannot open the wrong file by it.
var verdictSuffix = regexp.MustCompile(` \[[a-z-]+\]$`)

// The profile's mappings and addresses are the recording's as perf itself
// reads it, not as perfcheck's own perf.data parser does: every file-backed
// mapping has the start, end and file offset of the first executable
// mapping perf script --show-mmap-events prints for that file (widened by
// whole pages at most, never moved), and the profile's samples are, stack
// for stack and thread for thread, the samples perf script prints, each
// frame at the same map-relative address (user) or address (kernel).
func TestRealMappings(t *testing.T) {
	t.Parallel()
	fixtures.NeedTool(t, "perf")
	root := symfs(t)
	for _, name := range []string{"cshared-fp.data", "forkexec.data", "goprog.data", "pipe.data", "zstd.data", "buildid-mmap.data", "threads.data"} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(fixtureDir, name)
			res := analyze(t, name, root)
			prof, err := Convert(res, Options{})
			if err != nil {
				t.Fatal(err)
			}
			comparePerfScript(t, prof, perfScript(t, p, root), root)
		})
	}
}

// comparePerfScript checks prof against what perf script printed.
func comparePerfScript(t *testing.T, prof *profile.Profile, want *perfScriptView, root string) {
	t.Helper()
	syms := map[string]*elfSyms{}
	checked := 0
	for _, m := range prof.Mapping {
		file := verdictSuffix.ReplaceAllString(m.File, "")
		r, ok := want.mmaps[file]
		if !ok || strings.HasPrefix(file, "[kernel") {
			continue
		}
		checked++
		if m.Start > r.start || m.Limit < r.limit || m.Start-m.Offset != r.start-r.pgoff {
			t.Errorf("%s: mapping %#x-%#x @%#x; perf script: %#x-%#x @%#x", m.File, m.Start, m.Limit, m.Offset, r.start, r.limit, r.pgoff)
		}
	}
	if checked == 0 {
		t.Errorf("%d mappings compared with perf script's MMAP2 events", checked)
	}

	got := map[string]int{}
	n := 0
	for _, s := range prof.Sample {
		tid := s.NumLabel["tid"]
		if len(tid) != 1 {
			t.Fatalf("sample without one tid label: %v", s.NumLabel)
		}
		key := []string{strconv.FormatInt(tid[0], 10) + "|"}
		for _, l := range s.Location {
			key = append(key, profFrame(l))
		}
		got[strings.Join(key, " ")] += int(s.Value[0])
		n += int(s.Value[0])
	}
	if n != want.n {
		t.Errorf("the profile has %d samples, perf script %d", n, want.n)
	}
	var diff []string
	for k, c := range want.stacks {
		if got[k] != c {
			diff = append(diff, fmt.Sprintf("perf script %d, profile %d: %s", c, got[k], k))
		}
	}
	for k, c := range got {
		if _, ok := want.stacks[k]; !ok {
			diff = append(diff, fmt.Sprintf("perf script 0, profile %d: %s", c, k))
		}
	}
	// Where the profile names a frame and perf script does too, the
	// names are the same function's: the one holding the address (the
	// last, outermost line of the location; perf script --no-inline
	// prints that one), by the same name or an alias (sameFunction).
	named, names := 0, 0
	for _, l := range prof.Location {
		if len(l.Line) == 0 || l.Line[len(l.Line)-1].Function == nil || isLabel(l) {
			continue
		}
		named++
		k := profFrame(l)
		pn, ok := want.names[k]
		if !ok {
			continue
		}
		names++
		got := l.Line[len(l.Line)-1].Function.Name
		if got == pn || sameFunction(t, syms, root, l, got, pn) {
			continue
		}
		diff = append(diff, fmt.Sprintf("%s: profile names it %s, perf script %s", k, got, pn))
	}
	if names == 0 && named > 0 {
		t.Errorf("perf script names none of the %d named locations", named)
	}
	slices.Sort(diff)
	for i, d := range diff {
		if i == 10 {
			t.Errorf("… and %d more", len(diff)-10)
			break
		}
		t.Error(d)
	}
	t.Logf("%d samples, %d stacks, %d named locations compared with perf script (%d frames perf names through a map from before an exec)",
		n, len(want.stacks), names, want.afterExec)
}

// profFrame is a location as perf script names a frame: the mapping's file
// and the address relative to the file (Address - Start + Offset) for user
// code, the address itself for the kernel and for code outside any file.
func profFrame(l *profile.Location) string {
	m := l.Mapping
	if m == nil || m.File == "" {
		return frameKey("[unknown]", l.Address)
	}
	file := verdictSuffix.ReplaceAllString(m.File, "")
	if strings.HasPrefix(file, "[kernel") {
		return frameKey(file, l.Address)
	}
	return frameKey(file, l.Address-m.Start+m.Offset)
}

// elfSyms are a binary's function symbols (its own and its separate debug
// file's) and its PT_LOAD segments.
type elfSyms struct {
	loads []elf.ProgHeader
	syms  []elf.Symbol
}

// loadSyms reads path (under root) and, when the debug directory of root
// has one for its build-id, its separate debug file.
func loadSyms(t *testing.T, root, path string) *elfSyms {
	t.Helper()
	f, err := elf.Open(filepath.Join(root, path))
	if err != nil {
		return nil
	}
	defer f.Close()
	e := &elfSyms{}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			e.loads = append(e.loads, p.ProgHeader)
		}
	}
	add := func(f *elf.File) {
		for _, get := range []func() ([]elf.Symbol, error){f.Symbols, f.DynamicSymbols} {
			ss, _ := get()
			for _, s := range ss {
				if typ := elf.ST_TYPE(s.Info); typ == elf.STT_FUNC || typ == elf.STT_GNU_IFUNC {
					e.syms = append(e.syms, s)
				}
			}
		}
	}
	add(f)
	if id := noteBuildID(f); len(id) > 1 {
		h := id.String()
		if df, err := elf.Open(filepath.Join(root, "usr/lib/debug/.build-id", h[:2], h[2:]+".debug")); err == nil {
			add(df)
			df.Close()
		}
	}
	return e
}

// sameFunction reports whether got (the profile's name for location l) and
// perf's name pn name the same function: both are symbols that start where
// the symbol holding l's address starts (aliases: perf picks one by
// choose_best_symbol in tools/perf/util/symbol.c, perfcheck gives DWARF's
// linkage name, e.g. __GI___fstatat64 for fstatat64, docs/symbolize.md),
// perf's without its symbol version (clock_gettime@@GLIBC_2.17); or, for
// Go, perf's ELF name of an assembly function with its ABI suffix
// (runtime.goexit.abi0) where pclntab has runtime.goexit.
func sameFunction(t *testing.T, cache map[string]*elfSyms, root string, l *profile.Location, got, pn string) bool {
	if pn == got+".abi0" {
		return true
	}
	if i := strings.IndexByte(pn, '@'); i > 0 {
		pn = pn[:i]
	}
	if pn == got {
		return true
	}
	file := verdictSuffix.ReplaceAllString(l.Mapping.File, "")
	e, ok := cache[file]
	if !ok {
		e = loadSyms(t, root, file)
		cache[file] = e
	}
	if e == nil {
		return false
	}
	off := l.Address - l.Mapping.Start + l.Mapping.Offset
	var addr uint64
	found := false
	for _, p := range e.loads {
		if off >= p.Off && off < p.Off+p.Filesz {
			addr, found = off-p.Off+p.Vaddr, true
		}
	}
	if !found {
		return false
	}
	var start uint64
	found = false
	for _, s := range e.syms {
		if s.Value <= addr && addr < s.Value+max(s.Size, 1) && s.Name == got {
			start, found = s.Value, true
		}
	}
	if !found {
		return false
	}
	for _, s := range e.syms {
		if s.Value == start && s.Name == pn {
			return true
		}
	}
	return false
}

// noteBuildID is f's GNU build-id from its .note.gnu.build-id section
// (buildidcache's note reader), or nil.
func noteBuildID(f *elf.File) buildid.ID {
	s := f.Section(".note.gnu.build-id")
	if s == nil {
		return nil
	}
	b, err := s.Data()
	if err != nil {
		return nil
	}
	id, _ := buildidcache.BuildIDFromNotes(b, f.ByteOrder)
	return id
}
