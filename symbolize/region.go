package symbolize

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"sync"
)

// region is memory outside the Go heap holding one section's bytes: a
// read-only mapping of the file for a section stored uncompressed, or
// anonymous memory a compressed section was decompressed into. A Binary
// keeps its regions in a regionSet and unmaps them at Close, after every
// lookup in flight has finished (Binary.closeMu); the DWARF index unmaps
// its sections earlier, once every unit is decoded.
//
// Nothing may keep a pointer into a region past its release: strings
// handed to callers are copies (debug/dwarf and debug/gosym copy; the Go
// inline decoder interns its names when its table is mapped, and the DWARF
// unit entries kept for re-decoding own their byte-slice values), and the
// release (Binary.Close, dwarfIndex.release) drops every slice into the
// regions: the runtime may map its heap at the same addresses later, and
// a stale pointer into a span it thinks free makes the garbage collector
// throw (TestCloseDropsPointersIntoMappings).
//
// Every read of a region's bytes runs with debug.SetPanicOnFault, so
// that a file truncated under its mapping (a binary rewritten in place
// by cp) fails the call with ErrMalformed instead of killing the process
// with SIGBUS: the loaders and decoders (reached from Frames, Warnings,
// DebugFile and Symbol) read them inside safely, and Frames, whose Go
// inline decoder reads the mapped .gopclntab outside safely, sets it for
// the whole lookup.
type region struct {
	mem  []byte // the whole mapping
	data []byte // the section's bytes in it

	// refill writes the section's bytes into data again (decompresses
	// it once more) after pages of an anonymous region were dropped
	// (see dropPages); nil for a mapping of the file, whose dropped
	// pages come back from the file on the next read. With ix set,
	// it writes data[lo:hi] and nothing else, decompressing from the
	// checkpoint before lo (ix); otherwise it writes the whole section.
	refill func(lo, hi int) error
	ix     *inflateIndex // the checkpoints of a partial region (refill by range), released with it

	// early, when set, is the section's DWARF units (line programs),
	// found while it was whole: its pages were all given back then
	// (dropEarly), and whoever reads it must fill what it reads first.
	early []dropSpan

	once sync.Once
}

var errNoMap = errors.New("not mappable")

func (r *region) unmap() {
	r.once.Do(func() {
		r.release()
		if r.ix != nil {
			r.ix.release()
			r.ix = nil
		}
	})
}

// regionSet is the regions a Binary owns.
type regionSet struct {
	mu   sync.Mutex
	list []*region
}

func (s *regionSet) add(r *region) {
	s.mu.Lock()
	s.list = append(s.list, r)
	s.mu.Unlock()
}

// find returns the region whose section bytes start at d, nil when d is
// not (the start of) a region's bytes.
func (s *regionSet) find(d []byte) *region {
	if len(d) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.list {
		if len(r.data) > 0 && &r.data[0] == &d[0] {
			return r
		}
	}
	return nil
}

func (s *regionSet) unmapAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.list {
		r.unmap()
	}
	s.list = nil
}

// mapSection returns the bytes of an uncompressed, file-backed section of
// ef (read from f) as a read-only mapping registered in rs; ok is false
// when the section cannot be mapped (compressed, no file bytes, not inside
// the file, mmap unavailable), and the caller reads it onto the heap.
func mapSection(rs *regionSet, f *os.File, s *elf.Section) (data []byte, ok bool) {
	if f == nil || s.Type == elf.SHT_NOBITS || s.Flags&elf.SHF_COMPRESSED != 0 || s.FileSize == 0 || s.FileSize != s.Size {
		return nil, false
	}
	st, err := f.Stat()
	if err != nil || s.Offset > uint64(st.Size()) || s.FileSize > uint64(st.Size())-s.Offset {
		return nil, false // debug/elf's own read reports the truncation
	}
	r, err := mapFile(f, int64(s.Offset), int64(s.FileSize))
	if err != nil {
		return nil, false
	}
	rs.add(r)
	return r.data[:s.FileSize:s.FileSize], true
}

// testHookMapped, set only by tests, runs when a loader has mapped the
// sections of f it needs and before it reads them: a test truncates f
// there to reproduce, every time, a binary rewritten between the mapping
// and the read.
var testHookMapped func(f *os.File)

// sectionData is Section.Data through a mapping where possible.
func (b *Binary) sectionData(s *elf.Section) ([]byte, error) {
	if d, ok := mapSection(&b.regions, b.f, s); ok {
		return d, nil
	}
	return s.Data()
}

// osFile returns ra as an *os.File when it is one.
func osFile(ra io.ReaderAt) *os.File {
	f, _ := ra.(*os.File)
	return f
}

// dropEarly gives back every page of a partial region right after its
// full pass, keeping what sectionDrop will need of it: the extents of its
// units (sections of DWARF units laid end to end, as .debug_line's
// programs) and checkpoints placed before them. A section whose bytes do
// not parse as units end to end is kept.
func (r *region) dropEarly(bo binary.ByteOrder) {
	spans := unitSpans(r.data, bo)
	if len(spans) == 0 || spans[len(spans)-1].hi != len(r.data) {
		return
	}
	r.ix.retarget(r.data, spanStarts(spans))
	r.early = spans
	r.giveBack(0, len(r.data))
}

// giveBack is dropPages for a region whose bytes fills will bring back:
// the checkpoints' windows are kept first (inflateIndex.keepWindows), from
// the bytes as they are before anything is given back.
func (r *region) giveBack(lo, hi int) int {
	r.ix.keepWindows(r.data)
	return r.dropPages(lo, hi)
}

// wholeAgain fills a region given back early whole again, for a reader
// that does not fill what it reads.
func (r *region) wholeAgain() error {
	if r.early == nil {
		return nil
	}
	if err := r.refill(0, len(r.data)); err != nil {
		return err
	}
	r.early = nil
	return nil
}
