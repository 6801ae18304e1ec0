package main

import (
	"encoding/binary"
	"io"
	"os"

	"github.com/perfcheck/perfcheck/check"
	"github.com/perfcheck/perfcheck/dso"
	"github.com/perfcheck/perfcheck/symbolize"
)

// runningKallsyms is where the check reads this boot's kernel symbols
// from, when it names a recording's kernel frames with them.
const runningKallsyms = "/proc/kallsyms"

// kernelSymbols returns what names the kernel addresses a payload prints
// (%pS, %ps), decided at the first sample whose leaf is in the kernel:
// this boot's symbols, only when the check named that leaf with them
// (the kernel's verdict trusts it, and its symbols are this boot's
// /proc/kallsyms) and they name the leaf's address alike without
// relocation, so that the recording's kernel addresses are this boot's.
// Otherwise nil: the addresses print in hex, as perf prints an address it
// has no symbol for. From a pipe-format recording perf prints them in hex
// whatever it knows of the kernel: perf script sets libtraceevent's
// function resolver when it opens the session, before a stream's tracing
// data has arrived; so does perfcheck.
func (sf *scriptFormat) kernelSymbols(s *check.Sample) kernelSymbol {
	if sf.kernelDecided || sf.pipe {
		return sf.kernelSym
	}
	locs := s.Stack.Locations()
	if len(locs) == 0 || locs[0].DSO == nil || locs[0].DSO.Kind != dso.Kernel {
		return nil
	}
	sf.kernelDecided = true
	leaf := locs[0]
	d := leaf.DSO
	if !d.Trusted() || d.FoundPath != runningKallsyms || len(leaf.Frames) == 0 || !leaf.HasSymOffset {
		return nil
	}
	b, err := symbolize.OpenRunningKernel(symbolize.Options{})
	if err != nil {
		return nil
	}
	name, start, _, ok := b.Symbol(leaf.Offset)
	if !ok || name != leaf.Frames[len(leaf.Frames)-1].RawName || leaf.Offset-start != leaf.SymOffset {
		return nil
	}
	sf.kernelSym = func(addr uint64) (string, uint64, bool) {
		name, start, _, ok := b.Symbol(addr)
		return name, start, ok
	}
	return sf.kernelSym
}

// pipeFormat reports whether the recording name is in pipe format (perf
// record -o -): standard input ("-"), which perf reads as a pipe, or a
// file whose header is the pipe header's 16 bytes (magic, then its size).
func pipeFormat(name string) bool {
	if name == "-" {
		return true
	}
	f, err := os.Open(name)
	if err != nil {
		return false
	}
	defer f.Close()
	var h [16]byte
	if _, err := io.ReadFull(f, h[:]); err != nil {
		return false
	}
	switch string(h[:8]) {
	case "PERFILE2":
		return binary.LittleEndian.Uint64(h[8:]) == 16
	case "2ELIFREP":
		return binary.BigEndian.Uint64(h[8:]) == 16
	}
	return false
}
