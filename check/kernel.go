package check

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/perfcheck/perfcheck/buildid"
	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/symbolize"
)

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
// docs/check-symbols.md says what each proves), both read by symbolize
// (symbolize.Module):
//
//   - From this boot's /proc/kallsyms ("ADDR t name\t[module]" lines), whose
//     addresses are absolute: valid for the recording only when the module
//     loaded now has the recorded build-id (/sys/module/NAME/notes/
//     .note.gnu.build-id) and is loaded at the address the recording
//     mapped it at (/proc/modules, else /sys/module/NAME/sections/.text).
//   - From the .ko found by build-id, when its .text starts the module's
//     text (symbolize.ReadModule says why not otherwise).

// hostRoots says where the running kernel's module state is read: /sys
// and /proc, or (in tests, through Options.host) a copy laid out as the
// kernel lays them out, since this project's VM has no module support to
// record with. The zero value is this machine's /sys and /proc.
type hostRoots struct {
	sys, proc string
	// users looks a user up by uid (user.LookupId when nil): tests name
	// another user's home without a user database of their own.
	users func(uid string) (*user.User, error)
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

// moduleLookup names a module's offsets (a symbolLookup): from its .ko,
// or from the kallsyms listing of the module loaded now, whose build-id,
// read after the listing, is buildID.
type moduleLookup struct {
	mod     *symbolize.Module
	buildID buildid.ID // nil when the module has none
}

// BuildID implements symbolLookup.
func (l *moduleLookup) BuildID() buildid.ID { return l.buildID }

func (l *moduleLookup) Lookup(off uint64) ([]symbolize.Frame, error) {
	return l.mod.Frames(off, nil)
}

// symOffset implements symOffsetter.
func (l *moduleLookup) symOffset(off uint64) (uint64, bool) {
	_, start, _, ok := l.mod.Symbol(off)
	if !ok {
		return 0, false
	}
	return off - start, true
}

func (l *moduleLookup) Close() error { return nil }

// readKO reads the .text functions of the .ko at path (symbolize.ReadModule);
// limit is the module's recorded length.
func readKO(path string, limit uint64) (*moduleLookup, error) {
	m, err := symbolize.ReadModule(path, nil, limit, nil)
	if err != nil {
		return nil, err
	}
	return &moduleLookup{mod: m, buildID: m.BuildID()}, nil
}

// runningModuleNames reads module name's functions from this boot's
// kallsyms listing as offsets from base, its load address (limit, the
// recorded length, bounds the last one), with the build-id of the module
// loaded now read after the listing: judge proved the module by its
// build-id and address before, and a module unloaded and another loaded at
// the same address in between would give the recorded offsets its
// functions. A build-id read after the listing that is still the recorded
// one (symbolize compares it, proveLookup) and the same address mean the
// listing was of that module.
func (h hostRoots) runningModuleNames(name string, base, limit uint64) (*moduleLookup, error) {
	m, err := symbolize.ReadLoadedModule(h.kallsyms(), name, base, limit)
	if err != nil {
		return nil, err
	}
	l := &moduleLookup{mod: m}
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
