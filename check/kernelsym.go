package check

import "github.com/perfcheck/perfcheck/dso"

// kernelRefer is a symbolLookup that knows the address of perf's kernel
// reference symbol in the file it reads (symbolize.Binary.KernelRefSymbol).
type kernelRefer interface {
	kernelRefSymbol(name string) (uint64, bool)
}

func (l *symLookup) kernelRefSymbol(name string) (uint64, bool) { return l.bin.KernelRefSymbol(name) }

// relocateTo relocates kernel d's addresses to the file its lookup lk
// reads, other than this boot's /proc/kallsyms (relocateKernel): a
// kallsyms copy from perf's build-id cache, which perf keeps from the
// first boot that recorded with a kernel build, so that under KASLR it may
// list the kernel elsewhere than the recording's boot had it, or a
// vmlinux, whose addresses are the link-time ones. The difference between
// the reference symbol there and when recorded is what perf applies
// (kallsyms__delta, map__reloc_vmlinux in tools/perf/util): zero for the
// recording's own boot. A recording without a kernel map, or a file
// without the symbol, is read unrelocated, as perf reads it.
func (d *DSO) relocateTo(lk symbolLookup) {
	kr, ok := lk.(kernelRefer)
	if !ok || d.relocSym == "" {
		return
	}
	if v, ok := kr.kernelRefSymbol(d.relocSym); ok {
		d.symDelta = v - d.relocAddr
	}
}

// keepKernelNames keeps the lookups of the kernel DSOs among dsos open
// for KernelSymbol; the caller's close then leaves them to Result.Close.
func keepKernelNames(dsos []*DSO, lookups map[*DSO]symbolLookup) {
	for _, d := range dsos {
		if lk := lookups[d]; lk != nil && d.Kind == dso.Kernel && d.SymbolError == "" {
			d.kernelNames = lk
			delete(lookups, d)
		}
	}
}

// KernelSymbol names addr, an address of the recording's kernel (a
// tracepoint payload's function pointer, which perf script prints with
// %pS), as the check names kernel DSO d's frames: from the file its
// verdict proved, relocated as the frames are (to this boot's
// /proc/kallsyms, or to a kallsyms copy or vmlinux from another boot). It
// returns the symbol and addr's offset from its start. ok is false when d
// is no kernel whose verdict trusts its names, when the check was not run
// with Options.Replay (the lookup is not kept) or after Result.Close, and
// when no symbol covers addr.
func (d *DSO) KernelSymbol(addr uint64) (name string, off uint64, ok bool) {
	lk := d.kernelNames
	if lk == nil || d.Kind != dso.Kernel || !d.Trusted() {
		return "", 0, false
	}
	so, isSO := lk.(symOffsetter)
	if !isSO {
		return "", 0, false
	}
	a := addr + d.symDelta
	fr, err := lk.Lookup(a)
	if err != nil || len(fr) == 0 {
		return "", 0, false
	}
	if off, ok = so.symOffset(a); !ok {
		return "", 0, false
	}
	return fr[len(fr)-1].RawName, off, true
}
