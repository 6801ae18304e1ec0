package main

import (
	"encoding/binary"
	"io"
	"os"

	"github.com/perfcheck/perfcheck/check"
	"github.com/perfcheck/perfcheck/dso"
)

// kernelSymbols returns what names the kernel addresses a payload prints
// (%pS, %ps), decided at the first sample whose leaf is in the kernel: the
// check's names of the recording's kernel (check.DSO.KernelSymbol), only
// when its verdict trusts them, relocated as its frames are. Otherwise
// nil: the addresses print in hex, as perf prints an address it has no
// symbol for. From a pipe-format recording perf prints them in hex
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
	d := locs[0].DSO
	if len(s.IPs) == 0 {
		return nil
	}
	if _, _, ok := d.KernelSymbol(s.IPs[0]); !ok {
		return nil
	}
	sf.kernelSym = d.KernelSymbol
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
