package symbolize

import (
	"bufio"
	"sync"

	"github.com/perfcheck/perfcheck/internal/regfile"
)

// runningKallsyms is where the running kernel lists its symbols.
const runningKallsyms = "/proc/kallsyms"

// running is the running kernel's listing, read and parsed once per
// process: the kernel's own symbols stay where KASLR put them at boot for
// as long as it runs, and the kernel formats its 100,000+ lines anew at
// every read.
var running struct {
	once sync.Once
	syms *symTable
	refs map[string]uint64 // perf's reference symbols: first address listed
	err  error
}

// loadRunning parses /proc/kallsyms on the first call.
func loadRunning() {
	running.once.Do(func() {
		f, err := regfile.Open(runningKallsyms)
		if err != nil {
			running.err = err
			return
		}
		defer f.Close()
		p := kallsymsParser{name: runningKallsyms, refs: map[string]uint64{}}
		if err := readLineBytes(bufio.NewReader(f), runningKallsyms, p.line); err != nil {
			running.err = err
			return
		}
		running.syms, running.err = p.table()
		running.refs = p.refs
	})
}

// OpenRunningKernel returns the running kernel's symbols, as
// Open("/proc/kallsyms") would, from a listing read and parsed on the
// first call in the process only; later calls, and RunningKernelSymbol,
// share it. Symbols of modules loaded or unloaded since that first call
// are not seen: ReadLoadedModule reads a module's own names afresh.
func OpenRunningKernel(opts Options) (*Binary, error) {
	loadRunning()
	if running.err != nil {
		return nil, running.err
	}
	b := &Binary{path: runningKallsyms, opts: opts, format: FormatKallsyms, syms: running.syms, refs: running.refs}
	b.symOnce.Do(func() {})
	return b, nil
}

// RunningKernelSymbol returns the address of name in the running kernel,
// the first /proc/kallsyms lists, when name is one of the symbols perf
// relocates kernel addresses by (_text and _stext: ref_reloc_sym_names in
// tools/perf/util/machine.c); false when it is not, or the listing has no
// such symbol, or hides its address (all zero under kernel.kptr_restrict).
// It reads the listing OpenRunningKernel shares.
func RunningKernelSymbol(name string) (uint64, bool) {
	loadRunning()
	a := running.refs[name]
	return a, a != 0
}

// KernelRefSymbol returns the address in b of name, one of the symbols
// perf relocates a kernel's addresses by (_text, _stext:
// ref_reloc_sym_names in tools/perf/util/machine.c): the first a kallsyms
// listing gives, or a kernel image's (vmlinux) symbol value. A recording
// stores that symbol's address at record time (the kernel map's pgoff), so
// that the difference with this one relocates the recording's addresses to
// b's, as perf's kallsyms__delta and map__reloc_vmlinux do: zero for a
// listing of the boot that recorded, KASLR's difference for a listing of
// another boot of the same kernel (perf's build-id cache keeps the first
// copy it made) or for a vmlinux. false when b has no such symbol, or a
// listing hides its address.
func (b *Binary) KernelRefSymbol(name string) (uint64, bool) {
	switch b.format {
	case FormatKallsyms:
		a := b.refs[name]
		return a, a != 0
	case FormatELF:
		if name != "_text" && name != "_stext" {
			return 0, false
		}
		return b.symbolValue(name)
	}
	return 0, false
}
