package symbolize

import (
	"bufio"
	"bytes"
	"cmp"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/perfcheck/perfcheck/buildid"
	"github.com/perfcheck/perfcheck/internal/budget"
	"github.com/perfcheck/perfcheck/internal/regfile"
)

// Sentinel errors. Every error this package returns wraps one of them (or
// an *os.PathError from opening a file) with %w, and with it the cause
// where there is one (an io.ErrUnexpectedEOF, a decompressor's error), so
// that errors.Is and errors.As reach both. Messages begin with the file
// they are about: "PATH: malformed input: WHAT[: CAUSE]".
var (
	// ErrUnknownAddr means no backend knows the address: it is outside
	// every function and symbol of the binary.
	ErrUnknownAddr = errors.New("address not found")
	// ErrMalformed means the binary or one of its tables could not be
	// decoded, or the file is neither an ELF file nor a symbol list
	// (see [Open]); the message names the file and, where known, the
	// offset.
	ErrMalformed = errors.New("malformed input")
	// ErrNoMapping means a mapping's file offset is covered by no PT_LOAD
	// segment of the binary, so its load bias cannot be computed.
	ErrNoMapping = errors.New("mapping not covered by a PT_LOAD segment")
	// ErrClosed is returned by lookups on a closed Binary.
	ErrClosed = errors.New("binary closed")
	// ErrTooLarge means the binary's compressed sections (DWARF,
	// MiniDebugInfo, or any other) would decompress to more than the
	// run's memory budget for decompressed data allows, with what the
	// run holds already; the message names the file and the section.
	// See docs/symbolize.md, "Sections and memory".
	ErrTooLarge = budget.ErrExceeded
)

// Frame is one source-level frame. Frames returns them leaf first: the
// innermost inlined function, then the functions it was inlined into, then
// the function that holds the code.
type Frame struct {
	// Function is the demangled function name ([Options.NoDemangle]
	// keeps it raw). Empty when unknown.
	Function string `json:"function,omitempty"`
	// RawName is the name as stored in the binary: the linkage (mangled)
	// name when the debug info or symbol table has one.
	RawName string `json:"raw_name,omitempty"`
	// File is the source file, a full path when the debug info gives
	// one. Empty when unknown.
	File string `json:"file,omitempty"`
	// Line and Column are 1-based; 0 means unknown.
	Line   int `json:"line,omitempty"`
	Column int `json:"column,omitempty"`
	// Inlined is true when this frame's code was inlined into the next
	// frame of the slice (every frame but the last of a lookup).
	Inlined bool `json:"inlined,omitempty"`
}

// Name is the name reports show for the frame: the demangled Function,
// else the RawName, else "".
func (f *Frame) Name() string {
	if f.Function != "" {
		return f.Function
	}
	return f.RawName
}

// Symbolizer resolves addresses of one binary. addr is a file address (an
// ELF virtual address as in the file's symbol table: see [Binary.Bias] for
// runtime addresses). Frames overwrites buf from its start and returns the
// frames leaf first; passing back the previous result avoids allocation. An
// address no backend knows gives [ErrUnknownAddr] and no frames.
type Symbolizer interface {
	Frames(addr uint64, buf []Frame) ([]Frame, error)
}

// DebugQuery describes the separate debug file a binary asks for.
type DebugQuery struct {
	Path         string     // the binary's path
	BuildID      buildid.ID // its NT_GNU_BUILD_ID, nil when it has none
	DebugLink    string     // the .gnu_debuglink file name, "" when absent
	DebugLinkCRC uint32     // CRC-32 of the debug file named by DebugLink
}

// Options tune a Binary. The zero value demangles and looks for separate
// debug files in the standard places (below).
type Options struct {
	// NoDemangle leaves Frame.Function equal to Frame.RawName.
	NoDemangle bool
	// DebugFile locates the separate debug file of a binary whose own
	// file has no DWARF. It returns the path, or an error wrapping
	// [buildidcache.ErrNotFound] when there is none. The returned file
	// is checked (build-id, else the debuglink CRC) before use. nil looks
	// where gdb does, under /usr/lib/debug ([buildidcache.Resolver.DebugFile]
	// with the default debug directory); use NoDebugFile to disable the
	// search.
	DebugFile func(q DebugQuery) (string, error)
	// NoDebugFile disables the search for separate debug files.
	NoDebugFile bool
	// MaxDecodedDWARF bounds the bytes of decoded DWARF (line tables,
	// function and inline trees, the cache of names they refer to) a
	// Binary keeps; beyond it the least recently used compilation
	// units are dropped and decoded again when next needed. 0 means
	// DefaultMaxDecodedDWARF; negative means no bound.
	MaxDecodedDWARF int64

	// budget bounds decompressed data; nil means the process's
	// (budget.Default). Tests set their own.
	budget *budget.Budget
}

// DefaultMaxDecodedDWARF is the default of [Options.MaxDecodedDWARF]: far
// above what a profile's binaries need, it bounds the memory of very
// large binaries (browsers, databases) whose decoded index would otherwise
// grow with every unit an address falls in.
const DefaultMaxDecodedDWARF = 256 << 20

// Format says what kind of file a Binary was opened from. It is not a
// mapping's kind (dso.Kind): a kernel mapping may be read from an ELF
// vmlinux or from a kallsyms list.
type Format int

const (
	FormatELF      Format = iota // an ELF executable, library, vdso, vmlinux or module
	FormatKallsyms               // a kallsyms text file (/proc/kallsyms, perf's cache)
	FormatPerfMap                // a perf JIT map, /tmp/perf-PID.map
)

func (f Format) String() string {
	switch f {
	case FormatELF:
		return "elf"
	case FormatKallsyms:
		return "kallsyms"
	case FormatPerfMap:
		return "perf-map"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// Binary is one opened binary (or symbol list). It is safe for concurrent
// use; its indexes are built on first need.
type Binary struct {
	path   string
	format Format
	opts   Options

	f  *os.File
	ef *elf.File // nil for symbol lists

	// bud is the run's budget for decompressed data; held is what b
	// holds of it until Close (compressed sections debug/elf may
	// decompress, see admit; the DWARF index holds its own).
	bud  *budget.Budget
	held atomic.Int64

	buildID   buildid.ID
	debugLink string
	linkCRC   uint32
	loads     []elf.ProgHeader
	execRange [][2]uint64 // executable sections, to drop discarded code

	symOnce sync.Once
	syms    *symTable
	symErr  error
	// refs are a kallsyms listing's addresses of perf's kernel
	// reference symbols (KernelRefSymbol).
	refs map[string]uint64
	// dataSyms is the table DataSymbol reads, loaded on its first call.
	dataOnce sync.Once
	dataSyms *symTable
	// symsLoaded is syms once loadSyms has run (nil before): the DWARF
	// decoder shares the symbol table's names when it is there
	// (sharedSymName) but does not load it.
	symsLoaded atomic.Pointer[symTable]

	dwOnce  sync.Once
	dw      *dwarfIndex
	dwErr   error
	dbgPath string
	dbgFile *os.File

	goOnce sync.Once
	gotab  *goTable
	goErr  error

	demangleCache sync.Map // raw name -> demangled name

	warnMu sync.Mutex
	warns  []string // problems that degraded answers without failing them

	// closeMu is held for reading by every call that may load an index
	// (and so read the files), for writing by Close, which closes them.
	closeMu sync.RWMutex
	closed  bool
}

// Open opens the binary at path. An ELF file (executable, shared library,
// vdso, vmlinux, kernel module, perf's jitted-*.so) is read lazily. Any
// other file is a symbol list, read at once:
//
//   - a perf JIT map when its name is perf-*.map;
//   - kallsyms when its name is kallsyms (/proc/kallsyms, perf's cache
//     [kernel.kallsyms]/BUILD-ID/kallsyms) or its first line reads as a
//     kallsyms line: a hexadecimal address, a one-letter type and a name.
//
// Anything else (a text file such as /etc/passwd, an empty file) is an
// error wrapping [ErrMalformed]. [OpenKallsyms] and [OpenPerfMap] read a
// list whatever its name.
func Open(path string, opts Options) (*Binary, error) {
	// A recording names any path, and a FIFO there would block a plain
	// open until a writer comes: O_NONBLOCK returns at once, and only a
	// regular file, checked on the open descriptor, is read.
	f, err := regfile.Open(path)
	if err != nil {
		return nil, err
	}
	b := &Binary{path: path, opts: opts, f: f, bud: opts.budget}
	if b.bud == nil {
		b.bud = budget.Default()
	}
	var magic [4]byte
	if _, err := f.ReadAt(magic[:], 0); err == nil && string(magic[:]) == elf.ELFMAG {
		if err := b.openELF(); err != nil {
			f.Close()
			return nil, err
		}
		return b, nil
	}
	defer func() { f.Close(); b.f = nil }()
	base := filepath.Base(path)
	br := bufio.NewReader(f)
	switch {
	case strings.HasPrefix(base, "perf-") && strings.HasSuffix(base, ".map"):
		b.format = FormatPerfMap
		b.syms, b.symErr = readPerfMap(br, path, b.warn)
	case base == "kallsyms" || kallsymsShaped(br):
		b.format = FormatKallsyms
		b.syms, b.refs, b.symErr = readKallsymsRefs(br, path)
	default:
		return nil, fmt.Errorf("%s: %w: neither an ELF file nor a kallsyms listing or perf map", path, ErrMalformed)
	}
	b.symOnce.Do(func() {})
	if b.symErr != nil {
		return nil, b.symErr
	}
	return b, nil
}

// OpenKallsyms reads a kallsyms listing ("ADDR TYPE NAME [MODULE]" lines)
// from r; name is used in errors.
func OpenKallsyms(r io.Reader, name string, opts Options) (*Binary, error) {
	return openList(r, name, opts, FormatKallsyms)
}

// OpenPerfMap reads a perf JIT map ("START SIZE NAME" lines) from r; name is
// used in errors.
func OpenPerfMap(r io.Reader, name string, opts Options) (*Binary, error) {
	return openList(r, name, opts, FormatPerfMap)
}

func openList(r io.Reader, name string, opts Options, k Format) (*Binary, error) {
	b := &Binary{path: name, opts: opts, format: k}
	br := bufio.NewReader(r)
	if k == FormatPerfMap {
		b.syms, b.symErr = readPerfMap(br, name, b.warn)
	} else {
		b.syms, b.refs, b.symErr = readKallsymsRefs(br, name)
	}
	b.symOnce.Do(func() {})
	if b.symErr != nil {
		return nil, b.symErr
	}
	return b, nil
}

func (b *Binary) openELF() error {
	b.format = FormatELF
	var admitErr error
	err := safely(func() error {
		ef, err := elf.NewFile(b.f)
		if err != nil {
			return err
		}
		b.ef = ef
		var n int64
		if n, admitErr = b.admit(b.path, b.f, ef); admitErr != nil {
			return nil
		}
		b.held.Add(n)
		for _, p := range ef.Progs {
			if p.Type == elf.PT_LOAD {
				b.loads = append(b.loads, p.ProgHeader)
			}
		}
		for _, s := range ef.Sections {
			if s.Flags&elf.SHF_EXECINSTR != 0 && s.Flags&elf.SHF_ALLOC != 0 && s.Size > 0 {
				b.execRange = append(b.execRange, [2]uint64{s.Addr, s.Addr + s.Size})
			}
		}
		b.buildID = elfBuildID(ef)
		if s := ef.Section(".gnu_debuglink"); s != nil && s.Type != elf.SHT_NOBITS {
			if d, err := s.Data(); err == nil {
				b.debugLink, b.linkCRC = parseDebugLink(d, ef.ByteOrder)
			}
		}
		return nil
	})
	if admitErr != nil {
		return admitErr // names the file
	}
	if err != nil {
		b.bud.Release(b.held.Swap(0))
		return elfOpenError(b.path, b.f, err)
	}
	return nil
}

// admit makes ef, the ELF file f at path, an input of the run: its size
// raises the budget's limit, and the compressed sections debug/elf may
// decompress when they are read (all but DWARF's, see isDWARFSection) are
// reserved, n bytes, which the caller adds to b.held. On error nothing is
// reserved.
func (b *Binary) admit(path string, f *os.File, ef *elf.File) (n int64, err error) {
	if st, err := f.Stat(); err == nil {
		b.bud.Input(st.Size())
	}
	n, err = reserveCompressed(ef, f, account{b.bud, path}, func(s *elf.Section) bool { return !isDWARFSection(s) })
	if err != nil {
		return 0, named(path, err)
	}
	return n, nil
}

// elfOpenError turns an error of elf.NewFile into one wrapping ErrMalformed
// that names the file. debug/elf reports a header or table cut short as a
// bare io.EOF ("trunc: EOF"), which reads like a clean end of input: it
// becomes io.ErrUnexpectedEOF with the file's size. A *elf.FormatError
// carries the offset in its message.
func elfOpenError(path string, f *os.File, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		size := int64(-1)
		if st, serr := f.Stat(); serr == nil {
			size = st.Size()
		}
		return fmt.Errorf("%s: %w: ELF headers or tables run past the end of the file (%d bytes): %w", path, ErrMalformed, size, io.ErrUnexpectedEOF)
	}
	return fmt.Errorf("%s: %w", path, malformed(err))
}

// Path returns the path the binary was opened from.
func (b *Binary) Path() string { return b.path }

// Format returns what kind of file the binary was opened from.
func (b *Binary) Format() Format { return b.format }

// BuildID returns the binary's NT_GNU_BUILD_ID, nil when it has none.
func (b *Binary) BuildID() buildid.ID { return b.buildID }

// DebugFile returns the separate debug file whose DWARF the binary uses, ""
// when it uses its own or none. It forces the DWARF index to load.
func (b *Binary) DebugFile() string {
	b.closeMu.RLock()
	defer b.closeMu.RUnlock()
	if !b.closed {
		b.loadDWARF()
	}
	return b.dbgPath
}

// Warnings returns, in the order they were met, the problems that made the
// binary's answers poorer without making a lookup fail: DWARF or .gopclntab
// that could not be decoded (answers fall back to symbol names, without
// files and lines), a separate debug file refused (another build-id, a
// wrong CRC) or unreadable, a corrupt MiniDebugInfo or PLT, lines of a perf
// map skipped as malformed. Each names the file. It loads the indexes a
// lookup would, so its answer does not depend on which lookups ran.
// Callers should show them: a profile whose binary lost its DWARF to a
// corrupt section otherwise looks merely less detailed.
func (b *Binary) Warnings() []string {
	b.closeMu.RLock()
	if b.format == FormatELF && !b.closed {
		b.loadDWARF()
		b.loadSyms()
		b.loadGo()
	}
	b.closeMu.RUnlock()
	b.warnMu.Lock()
	defer b.warnMu.Unlock()
	return append([]string(nil), b.warns...)
}

// warn records a problem for Warnings.
func (b *Binary) warn(format string, args ...any) {
	b.warnMu.Lock()
	b.warns = append(b.warns, fmt.Sprintf(format, args...))
	b.warnMu.Unlock()
}

// Close releases the binary's file descriptors and indexes. Lookups after
// Close return ErrClosed.
func (b *Binary) Close() error {
	b.closeMu.Lock()
	defer b.closeMu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	// No lookup is in flight (they hold closeMu for reading), and none
	// will start: the indexes can go, for a caller that keeps the
	// Binary.
	b.gotab = nil
	if b.dw != nil {
		b.dw.mu.Lock()
		b.dw.release()
		b.dw.mu.Unlock()
	}
	if b.bud != nil {
		b.bud.Release(b.held.Swap(0))
	}
	var err error
	if b.f != nil {
		err = b.f.Close()
	}
	if b.dbgFile != nil {
		b.dbgFile.Close()
	}
	return err
}

// Frames implements [Symbolizer]. The backends are tried in order: DWARF
// (which gives inlined frames), the Go pclntab, then the symbol tables; the
// first that knows addr answers. When DWARF knows the line but not the
// function (assembly units), the symbol table names the function.
func (b *Binary) Frames(addr uint64, buf []Frame) ([]Frame, error) {
	buf = buf[:0]
	b.closeMu.RLock()
	defer b.closeMu.RUnlock()
	if b.closed {
		return buf, ErrClosed
	}
	return b.frames(addr, buf)
}

func (b *Binary) frames(addr uint64, buf []Frame) ([]Frame, error) {
	var dwErr error // of DWARF or the Go table, when neither answers
	if b.format == FormatELF {
		if dw := b.loadDWARF(); dw != nil {
			out, ok, err := dw.frames(b, addr, buf)
			if err != nil {
				// A unit that cannot be decoded (a warning says so
				// once): the tables below still name the function.
				dwErr, ok = err, false
				buf = buf[:0]
			}
			if ok {
				if out[len(out)-1].Function == "" {
					if s, ok := b.lookupSym(addr); ok {
						out[len(out)-1].RawName = s.name
						out[len(out)-1].Function = b.demangle(s.name)
					}
				}
				return out, nil
			}
		}
		if gt := b.loadGo(); gt != nil {
			out, ok, err := gt.frames(b, addr, buf)
			if err != nil {
				// A table debug/gosym cannot be given (warned of
				// once): the symbol table still names the function.
				dwErr, ok = cmp.Or(dwErr, err), false
				buf = buf[:0]
			}
			if ok {
				return out, nil
			}
		}
	}
	if t := b.loadSyms(); t != nil {
		if i, ok := t.find(addr); ok {
			s := &t.syms[i]
			return append(buf, Frame{Function: b.demangle(s.name), RawName: s.name, File: t.fileOf(i)}), nil
		}
	}
	if dwErr != nil {
		return buf, dwErr // names the file
	}
	if b.symErr != nil {
		return buf, b.symErr
	}
	return buf, ErrUnknownAddr
}

// Symbol returns the name, start address and size of the symbol-table entry
// covering addr, ignoring debug info; ok is false when none covers it, or
// the binary is closed.
func (b *Binary) Symbol(addr uint64) (name string, start, size uint64, ok bool) {
	// Loading the symbol table of a stripped binary opens its debug
	// file: hold off Close meanwhile.
	b.closeMu.RLock()
	defer b.closeMu.RUnlock()
	if b.closed {
		return "", 0, 0, false
	}
	s, ok := b.lookupSym(addr)
	if !ok {
		return "", 0, 0, false
	}
	return s.name, s.start, s.end - s.start, true
}

// DataSymbol returns the name (as stored) and start address of the
// symbol covering addr in the one table perf names any address of an ELF
// file with (dso__load_sym in tools/perf/util/symbol-elf.c): the code
// symbols Symbol reads and the data objects (STT_OBJECT) together, so that
// a data address (a page fault's, perf record -d) is named as perf script
// names it. A binary of another format answers as Symbol. ok is false when
// none covers addr, or the binary is closed.
func (b *Binary) DataSymbol(addr uint64) (name string, start uint64, ok bool) {
	b.closeMu.RLock()
	defer b.closeMu.RUnlock()
	if b.closed {
		return "", 0, false
	}
	if b.format != FormatELF {
		s, ok := b.lookupSym(addr)
		if !ok {
			return "", 0, false
		}
		return s.name, s.start, true
	}
	b.dataOnce.Do(func() {
		// readSymbols warns of a table it skipped; with none
		// readable, addresses stay unnamed.
		b.dataSyms, _ = b.readSymbols(true)
	})
	if b.dataSyms == nil {
		return "", 0, false
	}
	s, ok := b.dataSyms.lookup(addr)
	if !ok {
		return "", 0, false
	}
	return s.name, s.start, true
}

func (b *Binary) lookupSym(addr uint64) (*symbol, bool) {
	t := b.loadSyms()
	if t == nil {
		return nil, false
	}
	return t.lookup(addr)
}

func (b *Binary) loadSyms() *symTable {
	b.symOnce.Do(func() {
		b.syms, b.symErr = b.readELFSymbols() // errors name the file
		b.symsLoaded.Store(b.syms)
	})
	return b.syms
}

// sharedSymName returns the symbol table's own copy of name when the
// table is loaded and its symbol at addr is named so. A Go unit's
// functions have the names of their symbols, at the same addresses: a
// decoded unit that kept its own copies would hold every name twice once
// perfcheck symbolize has loaded the symbol table for its warnings.
func (b *Binary) sharedSymName(addr uint64, name string) (string, bool) {
	t := b.symsLoaded.Load()
	if t == nil {
		return "", false
	}
	if s, ok := t.lookup(addr); ok && s.start == addr && s.name == name {
		return s.name, true
	}
	return "", false
}

// elfBuildID returns the NT_GNU_BUILD_ID note's descriptor.
func elfBuildID(ef *elf.File) buildid.ID {
	for _, s := range ef.Sections {
		if s.Type != elf.SHT_NOTE {
			continue
		}
		d, err := s.Data()
		if err != nil {
			continue
		}
		if id := findBuildIDNote(d, ef.ByteOrder); id != nil {
			return id
		}
	}
	for _, p := range ef.Progs {
		if p.Type != elf.PT_NOTE || p.Filesz > 1<<20 {
			continue
		}
		d := make([]byte, p.Filesz)
		if _, err := p.ReadAt(d, 0); err != nil {
			continue
		}
		if id := findBuildIDNote(d, ef.ByteOrder); id != nil {
			return id
		}
	}
	return nil
}

func findBuildIDNote(d []byte, bo interface{ Uint32([]byte) uint32 }) []byte {
	for len(d) >= 12 {
		nameSz, descSz, typ := uint64(bo.Uint32(d)), uint64(bo.Uint32(d[4:])), bo.Uint32(d[8:])
		d = d[12:]
		nameEnd := (nameSz + 3) &^ 3
		descEnd := (descSz + 3) &^ 3
		if nameEnd > uint64(len(d)) || nameEnd+descSz > uint64(len(d)) {
			return nil
		}
		name := d[:nameSz]
		desc := d[nameEnd : nameEnd+descSz]
		if typ == ntGNUBuildID && bytes.Equal(bytes.TrimRight(name, "\x00"), []byte("GNU")) {
			return append([]byte(nil), desc...)
		}
		if nameEnd+descEnd > uint64(len(d)) {
			return nil
		}
		d = d[nameEnd+descEnd:]
	}
	return nil
}

// ntGNUBuildID is NT_GNU_BUILD_ID, the note type of a GNU build-id.
const ntGNUBuildID = 3
