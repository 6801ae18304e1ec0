package buildidcache

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/perfcheck/perfcheck/buildid"
)

// lookupNames returns the hex names under which b may be stored: b itself
// and, when b ends in zero padding, the common shorter lengths it may have
// been padded from (16 and 8 bytes), longest first.
func lookupNames(b buildid.ID) []string {
	names := []string{b.String()}
	for _, n := range []int{16, 8} {
		if len(b) > n && b[n:].IsZero() && !b[:n].IsZero() {
			names = append(names, b[:n].String())
		}
	}
	return names
}

// DebugLevel ranks how much a file can tell a symbolizer, so that among
// several verified candidates the richest is used for symbolization.
type DebugLevel int

// Debug levels, from least to most useful.
const (
	DebugNone   DebugLevel = iota // no symbol table at all
	DebugDynsym                   // only .dynsym (exported symbols)
	DebugSymtab                   // a full .symtab, .gnu_debugdata (MiniDebugInfo) or kallsyms
	DebugDWARF                    // .debug_info: lines and inlines
)

func (l DebugLevel) String() string {
	switch l {
	case DebugNone:
		return "none"
	case DebugDynsym:
		return "dynsym"
	case DebugSymtab:
		return "symtab"
	case DebugDWARF:
		return "dwarf"
	}
	return fmt.Sprintf("DebugLevel(%d)", int(l))
}

// MarshalText makes a DebugLevel print as its name in JSON.
func (l DebugLevel) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// Identity is what an ELF file says about itself.
type Identity struct {
	// BuildID is the GNU build-id, nil when the file has none.
	BuildID buildid.ID
	// GoBuildID is the Go toolchain's build-id (the "Go" note of type 4 in
	// .note.go.buildid), "" when absent. It identifies the build inputs,
	// not the bytes, so it is a second identity, never a substitute.
	GoBuildID string
	// Debug is the richest symbol information the file holds.
	Debug DebugLevel
	// DebugLink and DebugLinkCRC are the contents of .gnu_debuglink: the
	// base name of a separate debug file and the CRC-32 of that file.
	DebugLink    string
	DebugLinkCRC uint32
	// Class is 32 or 64; BigEndian gives the byte order.
	Class     int
	BigEndian bool
	// Compression is "xz", "zstd" or "gzip" when the file was a
	// compressed ELF file (a kernel module) that was decompressed in
	// memory to be read, "" otherwise.
	Compression string
	// FromSegments is true when the build-id was found through PT_NOTE
	// program headers because the section headers were missing or held no
	// build-id note.
	FromSegments bool
}

// FormatError reports a malformed ELF file.
type FormatError struct {
	File   string // file name, "" when reading from an io.ReaderAt
	Offset int64  // absolute byte offset of the offending structure
	Msg    string
	Err    error // io.ErrUnexpectedEOF for truncation, else nil or a cause
}

func (e *FormatError) Error() string {
	var sb strings.Builder
	if e.File != "" {
		sb.WriteString(e.File)
		sb.WriteString(": ")
	}
	fmt.Fprintf(&sb, "offset %#x: %s", e.Offset, e.Msg)
	if e.Err != nil {
		sb.WriteString(": ")
		sb.WriteString(e.Err.Error())
	}
	return sb.String()
}

func (e *FormatError) Unwrap() error { return e.Err }

// Sentinel errors. Every error this package returns wraps at most one of
// them, with %w, so callers test with errors.Is.
var (
	// ErrNotELF means the file does not start with the ELF magic.
	ErrNotELF = errors.New("not an ELF file")
	// ErrNoBuildID means an ELF file (or a query) has no GNU build-id.
	ErrNoBuildID = errors.New("no GNU build-id")
	// ErrNotFound means no locator found a file with the asked build-id;
	// the *NotFoundError that wraps it lists what was tried.
	ErrNotFound = errors.New("no file with this build-id found")
	// ErrMismatch means a candidate file has another build-id than the
	// one asked for.
	ErrMismatch = errors.New("build-id mismatch")
	// ErrUnsafePath means a file name would lead outside the directory it
	// must stay in (a ".." component, a NUL byte, an empty name).
	ErrUnsafePath = errors.New("unsafe path")
	// ErrDeadline means the Resolver's time for debuginfod
	// (Options.DebuginfodDeadline) has passed: no further download
	// starts, and one still in progress is cut.
	ErrDeadline = errors.New("debuginfod deadline exceeded")
	// ErrServer means a debuginfod server did not answer usefully (HTTP
	// error, timeout, refused connection).
	ErrServer = errors.New("debuginfod server failed")
)

// Note types and names (include/uapi/linux/elf.h, binutils' include/elf/common.h,
// Go's cmd/link/internal/ld/elf.go).
const (
	ntGNUBuildID = 3
	ntGoBuildID  = 4

	shtSymtab = 2
	shtNote   = 7
	shtNobits = 8
	shtDynsym = 11
	ptNote    = 4
)

// Caps on what one file may make us read. Real note sections are a few
// hundred bytes; a build-id longer than maxBuildIDLen is not a build-id.
const (
	headRead        = 4096    // first read: header, usually phdrs and notes too
	maxNoteRegion   = 1 << 20 // biggest note section or segment we look into
	maxBuildIDLen   = 1024
	maxGoBuildIDLen = 1024
	maxShstrtab     = 1 << 20
	maxDebugLink    = 4096
	maxHeaders      = 1 << 16 // section or program headers
	// maxEntSize bounds e_shentsize and e_phentsize. The gABI sizes are
	// 64 and 56 (40 and 32 for ELFCLASS32); a larger size is allowed for
	// extensions, but not 64 KiB, which with 65,536 headers would make
	// the header table alone a 4 GiB read.
	maxEntSize = 256
)

// ReadIdentity reads the identity of the ELF file in r, which is size bytes
// long. It reads only headers, notes, the section-name table and
// .gnu_debuglink. A file without a GNU build-id is not an error: the
// Identity's BuildID is nil.
func ReadIdentity(r io.ReaderAt, size int64) (*Identity, error) {
	return readIdentity(r, size, "")
}

// elfReader reads bounded pieces of an ELF file, serving them from the first
// page when it can.
type elfReader struct {
	r     io.ReaderAt
	size  int64
	name  string
	head  []byte
	order binary.ByteOrder
	is64  bool

	// noteBudget is what note sections and segments may still cost in
	// bytes read: the file's size, so that many note headers pointing at
	// the same or overlapping bytes cannot multiply the reads
	// (TestReadIdentityNoteBudget). noteSeen remembers
	// the first regions read, so that a region inside one of them with
	// the same alignment is not read again.
	noteBudget int64
	noteSeen   []noteRegion
}

type noteRegion struct {
	off, end int64
	align    int
}

// maxNoteSeen bounds the regions remembered (and the cost of looking
// through them); past it the byte budget alone applies.
const maxNoteSeen = 64

func (e *elfReader) errf(off int64, cause error, format string, args ...any) error {
	return &FormatError{File: e.name, Offset: off, Msg: fmt.Sprintf(format, args...), Err: cause}
}

// read returns n bytes at off. The slice may alias the first-page buffer and
// must not be modified.
func (e *elfReader) read(off int64, n int64, what string) ([]byte, error) {
	if off < 0 || n < 0 || off > e.size || n > e.size-off {
		return nil, e.errf(off, io.ErrUnexpectedEOF, "%s (%d bytes) extends past the end of the file (%d bytes)", what, n, e.size)
	}
	if off+n <= int64(len(e.head)) {
		return e.head[off : off+n], nil
	}
	buf := make([]byte, n)
	if _, err := e.r.ReadAt(buf, off); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, e.errf(off, err, "reading %s", what)
	}
	return buf, nil
}

var headPool = sync.Pool{New: func() any { return new([headRead]byte) }}

type section struct {
	name      uint32
	typ       uint32
	flags     uint64
	off, size int64
	align     uint64
}

func readIdentity(r io.ReaderAt, size int64, name string) (*Identity, error) {
	e := &elfReader{r: r, size: size, name: name, noteBudget: size}
	n := min(size, headRead)
	// Nothing returned aliases the first page (build-ids are cloned,
	// names copied into strings), so its buffer is reused.
	buf := headPool.Get().(*[headRead]byte)
	defer headPool.Put(buf)
	e.head = buf[:n]
	if m, err := r.ReadAt(e.head, 0); err != nil && !(err == io.EOF && int64(m) == n) {
		return nil, e.errf(0, err, "reading the ELF header")
	}
	if n < 16 || string(e.head[:4]) != "\x7fELF" {
		return nil, fmt.Errorf("%s: %w", orReader(name), ErrNotELF)
	}
	id := &Identity{}
	h, err := e.header(id)
	if err != nil {
		return nil, err
	}
	secs, err := e.sections(h.shoff, h.shentsize, h.shnum, &h.shstrndx)
	if err != nil {
		return nil, err
	}
	var names []byte
	if h.shstrndx > 0 && h.shstrndx < int64(len(secs)) {
		s := secs[h.shstrndx]
		if s.typ != shtNobits && s.size <= maxShstrtab {
			if names, err = e.read(s.off, s.size, "section name table"); err != nil {
				return nil, err
			}
		}
	}
	noteErr, err := e.scanSections(secs, names, id)
	if err != nil {
		return nil, err
	}
	if id.BuildID == nil {
		// Stripped section headers (llvm-objcopy --strip-sections, some
		// firmware and packers) leave only the PT_NOTE segments, which is
		// what the kernel and perf's minimal reader use too
		// (read_build_id in tools/perf/util/symbol-minimal.c). In a
		// separate debug file the segments describe the original
		// binary's layout and may point anywhere, so their errors count
		// only when there are no sections to trust.
		if err := e.segments(h.phoff, h.phentsize, h.phnum, id); err != nil && len(secs) == 0 {
			return nil, err
		}
		if id.BuildID != nil {
			id.FromSegments = true
		}
	}
	if id.BuildID == nil && noteErr != nil {
		return nil, noteErr
	}
	return id, nil
}

// elfHeader holds the ELF header's fields that locate the program and
// section header tables.
type elfHeader struct {
	size                       int64 // of the ELF header itself
	phoff, shoff               int64
	phentsize, phnum           int64
	shentsize, shnum, shstrndx int64
}

// header reads the ELF identification (byte order and class, which it
// records in id and e) and the header fields that locate the tables.
func (e *elfReader) header(id *Identity) (elfHeader, error) {
	var h elfHeader
	switch e.head[5] {
	case 1:
		e.order = binary.LittleEndian
	case 2:
		e.order = binary.BigEndian
		id.BigEndian = true
	default:
		return h, e.errf(5, nil, "unknown ELF data encoding %d", e.head[5])
	}
	switch e.head[4] {
	case 1:
		id.Class = 32
	case 2:
		id.Class, e.is64 = 64, true
	default:
		return h, e.errf(4, nil, "unknown ELF class %d", e.head[4])
	}
	h.size = 52
	if e.is64 {
		h.size = 64
	}
	b, err := e.read(0, h.size, "ELF header")
	if err != nil {
		return h, err
	}
	o := e.order
	if e.is64 {
		h.phoff, h.shoff = int64(o.Uint64(b[32:])), int64(o.Uint64(b[40:]))
		h.phentsize, h.phnum = int64(o.Uint16(b[54:])), int64(o.Uint16(b[56:]))
		h.shentsize, h.shnum, h.shstrndx = int64(o.Uint16(b[58:])), int64(o.Uint16(b[60:])), int64(o.Uint16(b[62:]))
	} else {
		h.phoff, h.shoff = int64(o.Uint32(b[28:])), int64(o.Uint32(b[32:]))
		h.phentsize, h.phnum = int64(o.Uint16(b[42:])), int64(o.Uint16(b[44:]))
		h.shentsize, h.shnum, h.shstrndx = int64(o.Uint16(b[46:])), int64(o.Uint16(b[48:])), int64(o.Uint16(b[50:]))
	}
	return h, nil
}

// scanSections records in id what the sections tell: the richest debug
// information, the build-ids from the note sections and the
// .gnu_debuglink. A broken note section's error is returned as noteErr,
// for the caller to report only if no build-id turns up; err is an error
// that ends the reading.
func (e *elfReader) scanSections(secs []section, names []byte, id *Identity) (noteErr, err error) {
	for _, s := range secs {
		switch s.typ {
		case shtSymtab:
			if s.size > 0 && id.Debug < DebugSymtab {
				id.Debug = DebugSymtab
			}
			continue
		case shtDynsym:
			if s.size > 0 && id.Debug < DebugDynsym {
				id.Debug = DebugDynsym
			}
			continue
		case shtNobits:
			continue
		case shtNote:
			if id.BuildID != nil && id.GoBuildID != "" {
				continue // both identities found; other notes add nothing
			}
			// A broken note section that is not the build-id's (an SDT
			// or vendor note) must not hide a good build-id: the error
			// counts only if no build-id turns up.
			if err := e.notes(s.off, s.size, s.align, id); err != nil && noteErr == nil {
				noteErr = err
			}
			continue
		}
		switch secName(names, s.name) {
		case ".debug_info", ".zdebug_info":
			if s.size > 0 {
				id.Debug = DebugDWARF
			}
		case ".gnu_debugdata":
			if s.size > 0 && id.Debug < DebugSymtab {
				id.Debug = DebugSymtab
			}
		case ".gnu_debuglink":
			if err := e.debugLink(s, id); err != nil {
				return noteErr, err
			}
		}
	}
	return noteErr, nil
}

func orReader(name string) string {
	if name == "" {
		return "input"
	}
	return name
}

func secName(names []byte, off uint32) string {
	if int64(off) >= int64(len(names)) {
		return ""
	}
	b := names[off:]
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// sections reads the section header table. With more than 0xff00 sections
// the count and the name-table index live in section 0 (ELF gABI,
// "Extended Section Numbering").
func (e *elfReader) sections(shoff, entsize, num int64, strndx *int64) ([]section, error) {
	if shoff == 0 {
		return nil, nil
	}
	min := int64(40)
	if e.is64 {
		min = 64
	}
	if entsize < min || entsize > maxEntSize {
		return nil, e.errf(shoff, nil, "section header size %d is not between %d and %d", entsize, min, maxEntSize)
	}
	if num == 0 || *strndx == 0xffff {
		first, err := e.read(shoff, entsize, "section header 0")
		if err != nil {
			return nil, err
		}
		s0 := e.section(first)
		if num == 0 {
			num = s0.size
		}
		if *strndx == 0xffff {
			*strndx = int64(e.order.Uint32(first[e.linkOff():]))
		}
	}
	if num <= 0 {
		return nil, nil
	}
	if num > maxHeaders {
		return nil, e.errf(shoff, nil, "%d section headers is more than %d", num, maxHeaders)
	}
	tab, err := e.read(shoff, num*entsize, "section header table")
	if err != nil {
		return nil, err
	}
	secs := make([]section, num)
	for i := range secs {
		secs[i] = e.section(tab[int64(i)*entsize:])
	}
	return secs, nil
}

func (e *elfReader) linkOff() int {
	if e.is64 {
		return 40
	}
	return 24
}

func (e *elfReader) section(b []byte) section {
	o := e.order
	if e.is64 {
		return section{name: o.Uint32(b), typ: o.Uint32(b[4:]), flags: o.Uint64(b[8:]),
			off: int64(o.Uint64(b[24:])), size: int64(o.Uint64(b[32:])), align: o.Uint64(b[48:])}
	}
	return section{name: o.Uint32(b), typ: o.Uint32(b[4:]), flags: uint64(o.Uint32(b[8:])),
		off: int64(o.Uint32(b[16:])), size: int64(o.Uint32(b[20:])), align: uint64(o.Uint32(b[32:]))}
}

func (e *elfReader) segments(phoff, entsize, num int64, id *Identity) error {
	if phoff == 0 || num == 0 {
		return nil
	}
	min := int64(32)
	if e.is64 {
		min = 56
	}
	if entsize < min || entsize > maxEntSize {
		return e.errf(phoff, nil, "program header size %d is not between %d and %d", entsize, min, maxEntSize)
	}
	tab, err := e.read(phoff, num*entsize, "program header table")
	if err != nil {
		return err
	}
	o := e.order
	for i := int64(0); i < num; i++ {
		b := tab[i*entsize:]
		if o.Uint32(b) != ptNote {
			continue
		}
		var off, size int64
		var align uint64
		if e.is64 {
			off, size, align = int64(o.Uint64(b[8:])), int64(o.Uint64(b[32:])), o.Uint64(b[48:])
		} else {
			off, size, align = int64(o.Uint32(b[4:])), int64(o.Uint32(b[16:])), uint64(o.Uint32(b[28:]))
		}
		if err := e.notes(off, size, align, id); err != nil {
			return err
		}
	}
	return nil
}

// notes scans one note section or segment. Notes are aligned to 4 bytes,
// or to 8 when the section or segment says so (gABI; GNU property notes).
func (e *elfReader) notes(off, size int64, align uint64, id *Identity) error {
	if size <= 0 {
		return nil
	}
	if size > maxNoteRegion {
		return e.errf(off, nil, "note region of %d bytes is more than %d", size, maxNoteRegion)
	}
	a := 4
	if align == 8 {
		a = 8
	}
	if off < 0 || off > e.size || size > e.size-off {
		return e.errf(off, io.ErrUnexpectedEOF, "note (%d bytes) extends past the end of the file (%d bytes)", size, e.size)
	}
	for _, r := range e.noteSeen {
		if r.align == a && off >= r.off && off+size <= r.end {
			return nil // already parsed as part of a region read before
		}
	}
	if size > e.noteBudget {
		return e.errf(off, nil, "note regions add up to more than the file's %d bytes; the rest are not read", e.size)
	}
	e.noteBudget -= size
	if len(e.noteSeen) < maxNoteSeen {
		e.noteSeen = append(e.noteSeen, noteRegion{off: off, end: off + size, align: a})
	}
	b, err := e.read(off, size, "note")
	if err != nil {
		return err
	}
	return parseNotes(b, off, a, e.order, id, e.name)
}

// BuildIDFromNotes returns the GNU build-id among notes, a run of ELF notes
// aligned to 4 bytes in byte order order: the contents of a note section,
// or the raw notes the kernel publishes for itself (/sys/kernel/notes) and
// for each loaded module (/sys/module/NAME/notes/.note.gnu.build-id), both
// in the machine's byte order. The first GNU build-id note wins, as in
// ReadIdentity. It returns ErrNoBuildID when no note is one, and a
// *FormatError, whose Offset is the note's offset in notes, when a note
// overruns notes (wrapping io.ErrUnexpectedEOF) or holds a build-id of
// zero or more than 1024 bytes. It reads only within notes and copies
// out the build-id.
func BuildIDFromNotes(notes []byte, order binary.ByteOrder) (buildid.ID, error) {
	return buildIDFromNotes(notes, order, "")
}

// buildIDFromNotes is BuildIDFromNotes naming file (if not "") in errors.
func buildIDFromNotes(notes []byte, order binary.ByteOrder, file string) (buildid.ID, error) {
	var id Identity
	if err := parseNotes(notes, 0, 4, order, &id, file); err != nil {
		return nil, err
	}
	if id.BuildID == nil {
		if file != "" {
			return nil, fmt.Errorf("%s: %w", file, ErrNoBuildID)
		}
		return nil, ErrNoBuildID
	}
	return id.BuildID, nil
}

// parseNotes walks a buffer of ELF notes (Elf32_Nhdr and Elf64_Nhdr are the
// same: three 4-byte words). base is b's file offset, for errors.
func parseNotes(b []byte, base int64, align int, o binary.ByteOrder, id *Identity, file string) error {
	pad := func(n uint64) uint64 { return (n + uint64(align) - 1) &^ uint64(align-1) }
	p := uint64(0)
	for uint64(len(b))-p >= 12 {
		namesz, descsz, typ := uint64(o.Uint32(b[p:])), uint64(o.Uint32(b[p+4:])), o.Uint32(b[p+8:])
		nameOff := p + 12
		// Padding counts from the start of the region, which is itself
		// aligned: with 8-byte alignment the 12-byte header and a 4-byte
		// name need no padding (gelf_getnote in elfutils' libelf).
		descOff := pad(nameOff + namesz)
		end := pad(descOff + descsz)
		if descOff > uint64(len(b)) || descOff+descsz > uint64(len(b)) {
			return &FormatError{File: file, Offset: base + int64(p), Msg: fmt.Sprintf("note (name %d bytes, desc %d bytes) overruns its section", namesz, descsz), Err: io.ErrUnexpectedEOF}
		}
		name := b[nameOff : nameOff+namesz]
		desc := b[descOff : descOff+descsz]
		switch {
		case typ == ntGNUBuildID && string(name) == "GNU\x00" && id.BuildID == nil:
			if descsz == 0 || descsz > maxBuildIDLen {
				return &FormatError{File: file, Offset: base + int64(p), Msg: fmt.Sprintf("GNU build-id note of %d bytes", descsz)}
			}
			id.BuildID = buildid.ID(bytes.Clone(desc))
		case typ == ntGoBuildID && string(name) == "Go\x00\x00" && id.GoBuildID == "":
			if descsz > maxGoBuildIDLen {
				return &FormatError{File: file, Offset: base + int64(p), Msg: fmt.Sprintf("Go build-id note of %d bytes", descsz)}
			}
			id.GoBuildID = string(bytes.TrimRight(desc, "\x00"))
		}
		if end > uint64(len(b)) {
			break
		}
		p = end
	}
	return nil
}

func (e *elfReader) debugLink(s section, id *Identity) error {
	if s.size < 5 || s.size > maxDebugLink {
		return nil
	}
	b, err := e.read(s.off, s.size, ".gnu_debuglink")
	if err != nil {
		return err
	}
	i := bytes.IndexByte(b, 0)
	if i <= 0 {
		return nil
	}
	crcOff := (i + 4) &^ 3
	if crcOff+4 > len(b) {
		return nil
	}
	id.DebugLink = string(b[:i])
	id.DebugLinkCRC = e.order.Uint32(b[crcOff:])
	return nil
}
