package check

import (
	"debug/elf"
	"errors"
	"fmt"
	"strings"

	"github.com/perfcheck/perfcheck/perfdata"
	"github.com/perfcheck/perfcheck/symbolize"
)

// Frame is one source-level frame of a location, leaf first within it.
type Frame struct {
	Function string `json:"function,omitempty"` // demangled
	RawName  string `json:"raw_name,omitempty"` // as stored in the binary
	File     string `json:"file,omitempty"`
	Line     int    `json:"line,omitempty"`
	Column   int    `json:"column,omitempty"`
	Inlined  bool   `json:"inlined,omitempty"` // inlined into the next frame of the location
}

// SymbolOpener opens the file a verified (or unverified) DSO is symbolized
// with. The default uses the symbolize package.
type SymbolOpener interface {
	// Open returns a lookup for path. kind tells how offsets map to the
	// file's addresses: for KindFile, KindVDSO and KindModule an offset is
	// a file offset; for KindKernel and KindJIT it is an address.
	Open(path string, kind Kind) (SymbolLookup, error)
}

// SymbolLookup resolves offsets of one DSO to frames, leaf first. It must
// be safe for concurrent use.
type SymbolLookup interface {
	Lookup(off uint64) ([]Frame, error)
	Close() error
}

// defaultOpener symbolizes with the symbolize package.
type defaultOpener struct{}

func (defaultOpener) Open(path string, kind Kind) (SymbolLookup, error) {
	b, err := symbolize.Open(path, symbolize.Options{})
	if err != nil {
		return nil, err
	}
	l := &symLookup{bin: b}
	if kind == KindFile || kind == KindVDSO || kind == KindModule {
		if b.Kind() != symbolize.KindELF {
			b.Close()
			return nil, fmt.Errorf("%s: not an ELF file", path)
		}
		loads, err := readLoads(path, nil)
		if err != nil {
			b.Close()
			return nil, err
		}
		l.loads = loads
		l.fileOffsets = true
	}
	return l, nil
}

type load struct{ off, filesz, vaddr uint64 }

// elfAddr returns the ELF address of file offset off: the first segment of
// loads that holds the offset gives vaddr - offset (as perf's
// map__rip_2objdump and pprof's elfexec.GetBase do for the mapping's load
// bias); false when none does.
func elfAddr(loads []load, off uint64) (uint64, bool) {
	for _, s := range loads {
		if off >= s.off && off < s.off+s.filesz {
			return off - s.off + s.vaddr, true
		}
	}
	return 0, false
}

type symLookup struct {
	bin         *symbolize.Binary
	loads       []load
	fileOffsets bool
}

// errNoSegment means a file offset is in no PT_LOAD segment.
var errNoSegment = errors.New("offset in no PT_LOAD segment")

func (l *symLookup) Lookup(off uint64) ([]Frame, error) {
	addr := off
	if l.fileOffsets {
		var ok bool
		if addr, ok = elfAddr(l.loads, off); !ok {
			return nil, errNoSegment
		}
	}
	fr, err := l.bin.Frames(addr, nil)
	if err != nil {
		return nil, err
	}
	out := make([]Frame, len(fr))
	for i, f := range fr {
		out[i] = Frame{Function: f.Function, RawName: f.RawName, File: f.File, Line: f.Line, Column: f.Column, Inlined: f.Inlined}
	}
	return out, nil
}

func (l *symLookup) Close() error { return l.bin.Close() }

// readLoads returns the PT_LOAD segments of an ELF file, executable ones
// first: an offset in two segments (they may share a page) belongs to the
// code. With want, the file must carry that build-id (readELF).
func readLoads(path string, want perfdata.BuildID) (loads []load, err error) {
	err = readELF(path, want, func(ef *elf.File) error {
		loads = append(elfLoads(ef, true), elfLoads(ef, false)...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(loads) == 0 {
		return nil, fmt.Errorf("%s: no PT_LOAD segment", path)
	}
	return loads, nil
}

// shortName is a DSO's name for dso+0xoffset labels: the base name of a
// file, perf's bracketed names as they are.
func shortName(p string) string {
	if strings.HasPrefix(p, "[") {
		return p
	}
	if i := strings.LastIndexByte(p, '/'); i >= 0 && i+1 < len(p) {
		return p[i+1:]
	}
	return p
}
