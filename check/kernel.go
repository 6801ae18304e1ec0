package check

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/perfcheck/perfcheck/buildid"
	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/internal/safeelf"
	"github.com/perfcheck/perfcheck/symbolize"
)

var (
	kallsymsMu   sync.Mutex
	kallsymsRefs = map[string]uint64{}
)

// runningKernelSymbol returns the address of one of perf's reference
// symbols (_text, _stext) in this boot's /proc/kallsyms; false when absent
// or hidden (all zero under kptr_restrict). The kernel generates
// /proc/kallsyms as it is read and lists the core kernel's text first, so
// the scan stops as soon as the symbol is found: a few kilobytes, not the
// whole listing.
func runningKernelSymbol(name string) (uint64, bool) {
	kallsymsMu.Lock()
	defer kallsymsMu.Unlock()
	if a, ok := kallsymsRefs[name]; ok {
		return a, a != 0
	}
	kallsymsRefs[name] = 0
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "ffffffff81000000 T _text"
		fs := strings.Fields(sc.Text())
		if len(fs) != 3 || fs[2] != name {
			continue
		}
		a, err := strconv.ParseUint(fs[0], 16, 64)
		if err != nil || a == 0 {
			return 0, false
		}
		kallsymsRefs[name] = a
		return a, true
	}
	return 0, false
}

// kernelRelease returns the running kernel's release (uname -r).
func kernelRelease() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return ""
	}
	return string(bytes.TrimSpace(b))
}

// runningVDSOFile writes this process's vdso image, when its build-id is
// id, to a temporary file (mode 0600, removed by cleanup) so that the
// symbolizer can open it: perf does the same (vdso__findnew in
// tools/perf/util/vdso.c).
func runningVDSOFile(id buildid.ID) (string, func(), error) {
	img, ident, err := buildidcache.VDSO()
	if err != nil {
		return "", nil, err
	}
	if !ident.BuildID.Matches(id) {
		return "", nil, fmt.Errorf("running vdso has build-id %s, not %s", ident.BuildID, id)
	}
	f, err := os.CreateTemp("", "perfcheck-vdso-*.so")
	if err != nil {
		return "", nil, err
	}
	name := f.Name()
	cleanup := func() { os.Remove(name) }
	if _, err := f.Write(img); err != nil {
		f.Close()
		cleanup()
		return "", nil, err
	}
	if err := f.Close(); err != nil {
		cleanup()
		return "", nil, err
	}
	return name, cleanup, nil
}

// Kernel modules are named in one of two ways, each only when it is proven
// to describe the module as it ran (docs/verdicts.md, "Special mappings";
// docs/check-symbols.md says what each proves).
// A module's offsets are from its load address (perf synthesizes a module's
// MMAP from /proc/modules with pgoff 0: perf_event__synthesize_modules).
//
//   - From this boot's /proc/kallsyms ("ADDR t name\t[module]" lines), whose
//     addresses are absolute: valid for the recording only when the module
//     loaded now has the recorded build-id (/sys/module/NAME/notes/
//     .note.gnu.build-id) and is loaded at the address the recording
//     mapped it at (/proc/modules, else /sys/module/NAME/sections/.text).
//   - From the .ko found by build-id: a relocatable object whose symbols
//     are offsets in their section. The kernel lays a module's core out
//     executable sections first, in section-header order, init sections
//     apart (layout_sections in kernel/module/main.c), and /proc/modules
//     gives the start of that text. So an offset is an offset in .text
//     exactly when .text is the first allocated executable section that is
//     not an init one; otherwise the .ko is not used.

// hostRoots says where the running kernel's module state is read: /sys
// and /proc, or (in tests, through Options.host) a copy laid out as the
// kernel lays them out, since this project's VM has no module support to
// record with. The zero value is this machine's /sys and /proc.
type hostRoots struct {
	sys, proc string
}

func (h hostRoots) sysDir() string {
	if h.sys == "" {
		return "/sys"
	}
	return h.sys
}

func (h hostRoots) procDir() string {
	if h.proc == "" {
		return "/proc"
	}
	return h.proc
}

// moduleDir is module name's directory under /sys/module.
func (h hostRoots) moduleDir(name string) string {
	return filepath.Join(h.sysDir(), "module", name)
}

// kallsyms is the path of /proc/kallsyms.
func (h hostRoots) kallsyms() string { return filepath.Join(h.procDir(), "kallsyms") }

// moduleName is the kernel's name of a module DSO: "[nf_tables]" or
// /lib/modules/…/nf-tables.ko(.xz) give "nf_tables" (the kernel turns '-'
// into '_' in module names).
func moduleName(path string) string {
	if strings.HasPrefix(path, "[") && strings.HasSuffix(path, "]") {
		return strings.ReplaceAll(path[1:len(path)-1], "-", "_")
	}
	n := moduleTableNames(path)[1]
	return n[1 : len(n)-1]
}

// validModuleName guards the paths built from a recorded name.
func validModuleName(n string) bool {
	if n == "" || len(n) > 64 {
		return false
	}
	for _, c := range n {
		if !(c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// runningModuleBuildID reads the build-id of module name as loaded now, from
// its GNU build-id note in /sys/module/NAME/notes.
func (h hostRoots) runningModuleBuildID(name string) (buildid.ID, error) {
	if !validModuleName(name) {
		return nil, fmt.Errorf("%q is not a module name", name)
	}
	p := filepath.Join(h.moduleDir(name), "notes", ".note.gnu.build-id")
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	// The module's .note.gnu.build-id section as loaded: Elf_Nhdr
	// (namesz, descsz, type), "GNU\0", the build-id, in the running
	// kernel's byte order, which is this machine's (as for
	// /sys/kernel/notes in buildidcache.KernelBuildID).
	id, err := buildidcache.BuildIDFromNotes(b, binary.NativeEndian)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return id, nil
}

// runningModuleBase returns where module name's text is loaded now: the
// address /proc/modules shows (what perf's module MMAP records), else
// /sys/module/NAME/sections/.text. Zero addresses (kptr_restrict) are not
// an answer.
func (h hostRoots) runningModuleBase(name string) (uint64, error) {
	if f, err := os.Open(filepath.Join(h.procDir(), "modules")); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// "nf_tables 245760 0 - Live 0xffffffffc0a1b000"
			fs := strings.Fields(sc.Text())
			if len(fs) < 6 || fs[0] != name {
				continue
			}
			a, err := strconv.ParseUint(strings.TrimPrefix(fs[5], "0x"), 16, 64)
			if err != nil || a == 0 {
				return 0, fmt.Errorf("/proc/modules hides %s's address (kptr_restrict)", name)
			}
			return a, nil
		}
	}
	p := filepath.Join(h.moduleDir(name), "sections", ".text")
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, fmt.Errorf("%s is not loaded now: %w", name, err)
	}
	a, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimSpace(string(b)), "0x"), 16, 64)
	if err != nil || a == 0 {
		return 0, fmt.Errorf("%s hides the address (kptr_restrict)", p)
	}
	return a, nil
}

// modSym is a module function as an offset range from its load address;
// one without a name (a data symbol) only ends the one before it.
type modSym struct {
	start, end uint64
	name       string
}

// moduleLookup names module offsets from a sorted symbol list.
type moduleLookup struct {
	syms    []modSym   // sorted by start, non-overlapping ends
	buildID buildid.ID // of the module the names were read from, nil when it has none
}

// BuildID implements symbolLookup.
func (l *moduleLookup) BuildID() buildid.ID { return l.buildID }

func (l *moduleLookup) Lookup(off uint64) ([]symbolize.Frame, error) {
	i := sort.Search(len(l.syms), func(i int) bool { return l.syms[i].start > off }) - 1
	if i < 0 || off >= l.syms[i].end || l.syms[i].name == "" {
		return nil, fmt.Errorf("module offset %#x: %w", off, errNoModuleSymbol)
	}
	return []symbolize.Frame{{Function: l.syms[i].name, RawName: l.syms[i].name}}, nil
}

// symOffset implements symOffsetter.
func (l *moduleLookup) symOffset(off uint64) (uint64, bool) {
	i := sort.Search(len(l.syms), func(i int) bool { return l.syms[i].start > off }) - 1
	if i < 0 || off >= l.syms[i].end || l.syms[i].name == "" {
		return 0, false
	}
	return off - l.syms[i].start, true
}

func (l *moduleLookup) Close() error { return nil }

// errNoModuleSymbol means no function of the module covers an offset.
var errNoModuleSymbol = errors.New("no module function here")

// finishSyms sorts syms and gives each without a size the room up to the
// next one (at most limit, the module's recorded length), as perf's
// symbols__fixup_end does for kallsyms.
func finishSyms(syms []modSym, limit uint64) *moduleLookup {
	sort.SliceStable(syms, func(i, j int) bool { return syms[i].start < syms[j].start })
	out := syms[:0]
	for i, s := range syms {
		if i+1 < len(syms) && syms[i+1].start == s.start && (syms[i+1].name != "" || s.name == "") {
			continue // an alias: keep the last named one
		}
		out = append(out, s)
	}
	for i := range out {
		next := limit
		if i+1 < len(out) {
			next = out[i+1].start
		}
		if out[i].end <= out[i].start || out[i].end > next {
			out[i].end = next
		}
	}
	return &moduleLookup{syms: out}
}

// runningModuleSyms returns module name's functions from this boot's
// /proc/kallsyms as offsets from base, its load address; limit bounds the
// last one (the recorded length).
func (h hostRoots) runningModuleSyms(name string, base, limit uint64) (*moduleLookup, error) {
	f, err := os.Open(h.kallsyms())
	if err != nil {
		return nil, err
	}
	defer f.Close()
	suffix := "[" + name + "]"
	var syms []modSym
	funcs := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasSuffix(line, suffix) {
			continue
		}
		// "ffffffffc0a1b010 t nft_do_chain\t[nf_tables]"
		fs := strings.Fields(line)
		if len(fs) != 4 || fs[3] != suffix || len(fs[1]) != 1 {
			continue
		}
		a, err := strconv.ParseUint(fs[0], 16, 64)
		if err != nil || a < base || a-base >= limit {
			continue
		}
		// Data symbols are kept, unnamed, to end the function before
		// them: kallsyms has no sizes.
		sym := modSym{start: a - base}
		if strings.ContainsAny(fs[1], "tTwW") {
			sym.name = fs[2]
			funcs++
		}
		syms = append(syms, sym)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if funcs == 0 {
		return nil, fmt.Errorf("/proc/kallsyms lists no function of [%s] in its recorded range", name)
	}
	return finishSyms(syms, limit), nil
}

// runningModuleNames is runningModuleSyms, with the build-id of the module
// loaded now read after the listing: judge proved the module by its
// build-id and address before, and a module unloaded and another loaded at
// the same address in between would give the recorded offsets its
// functions. A build-id read after the listing that is still the recorded
// one (symbolize compares it, proveLookup) and the same address mean the
// listing was of that module.
func (h hostRoots) runningModuleNames(name string, base, limit uint64) (*moduleLookup, error) {
	l, err := h.runningModuleSyms(name, base, limit)
	if err != nil {
		return nil, err
	}
	now, err := h.runningModuleBase(name)
	if err != nil {
		return nil, err
	}
	if now != base {
		return nil, fmt.Errorf("module %s is loaded at %#x now, not at %#x as when its verdict was given", name, now, base)
	}
	if l.buildID, err = h.runningModuleBuildID(name); err != nil {
		return nil, err
	}
	return l, nil
}

// openModuleELF opens a .ko for reading as ELF: a plain one through the
// open file, a compressed one (.ko.xz, .ko.zst, .ko.gz as the kernel's
// module tools install them, or perf's cached copy of one, <build-id>/elf
// with no suffix) decompressed by buildidcache.ReadModule, which knows the
// format by its magic bytes and bounds the output by the input's size. Only
// a regular file is opened, without blocking (buildidcache.OpenRegular).
func openModuleELF(path string) (r io.ReaderAt, size int64, done func(), err error) {
	f, err := buildidcache.OpenRegular(path)
	if err != nil {
		return nil, 0, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, nil, err
	}
	var magic [4]byte
	if n, _ := f.ReadAt(magic[:], 0); n == len(magic) && string(magic[:]) == elf.ELFMAG {
		return f, st.Size(), func() { f.Close() }, nil
	}
	f.Close()
	b, kind, err := buildidcache.ReadModule(path)
	if err != nil {
		return nil, 0, nil, err
	}
	if kind == "" {
		return nil, 0, nil, fmt.Errorf("%s: neither ELF nor a compressed module", path)
	}
	return bytes.NewReader(b), int64(len(b)), func() {}, nil
}

// koTextSyms returns the functions of a .ko's .text as offsets from the
// module's load address, or why they cannot be: the file is not a
// relocatable ELF, has no .text, or another executable section comes first
// in the core layout (then .text does not start at the load address).
// debug/elf may panic on malformed input; that becomes an error.
func koTextSyms(path string, limit uint64) (*moduleLookup, error) {
	return koTextSymsOf(path, nil, limit, nil)
}

// koTextSymsOf is koTextSyms of the module with build-id want (nil: any),
// read from image, the module at path as the locator decompressed it to
// verify it, when it is not nil, else from the file at path. The locator
// verified a file at path, but the file there can change before it is
// opened again here: the build-id is checked on the very bytes whose
// symbols are read.
func koTextSymsOf(path string, image []byte, limit uint64, want buildid.ID) (l *moduleLookup, err error) {
	var r io.ReaderAt
	var size int64
	if image != nil {
		r, size = bytes.NewReader(image), int64(len(image))
	} else {
		var done func()
		if r, size, done, err = openModuleELF(path); err != nil {
			return nil, err
		}
		defer done()
	}
	id, err := imageBuildID(path, r, size)
	if err != nil {
		return nil, err
	}
	if len(want) > 0 {
		if err := wantBuildID(path, id, want); err != nil {
			return nil, err
		}
	}
	defer safeelf.Recover(path, &err) // l is nil after a panic: it is set only by the last return
	ef, err := elf.NewFile(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if ef.Type != elf.ET_REL {
		return nil, fmt.Errorf("%s: not a relocatable module (%v)", path, ef.Type)
	}
	text := -1
	for i, s := range ef.Sections {
		if s.Flags&(elf.SHF_ALLOC|elf.SHF_EXECINSTR) != elf.SHF_ALLOC|elf.SHF_EXECINSTR || s.Size == 0 {
			continue
		}
		if strings.HasPrefix(s.Name, ".init") {
			continue // the init layout, freed after loading
		}
		if s.Name != ".text" {
			return nil, fmt.Errorf("%s: %s precedes .text in the module's text, so offsets from its load address are not .text offsets", path, s.Name)
		}
		text = i
		break
	}
	if text < 0 {
		return nil, fmt.Errorf("%s: no .text section with code", path)
	}
	textSize := ef.Sections[text].Size
	syms, err := ef.Symbols()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out []modSym
	for _, s := range syms {
		if int(s.Section) != text || elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Name == "" || s.Value >= textSize {
			continue
		}
		out = append(out, modSym{start: s.Value, end: s.Value + s.Size, name: s.Name})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no function symbol in .text", path)
	}
	l = finishSyms(out, min(textSize, max(limit, 1)))
	l.buildID = id
	return l, nil
}
