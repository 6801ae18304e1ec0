package symbolize

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/perfcheck/perfcheck/buildid"
	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/internal/regfile"
	"github.com/perfcheck/perfcheck/internal/safeelf"
)

// A kernel module's frames are offsets from its load address (perf
// synthesizes a module's MMAP from /proc/modules with pgoff 0:
// perf_event__synthesize_modules in tools/perf/util/synthetic-events.c).
// Two sources name them, each read into a Module:
//
//   - the .ko (ReadModule): a relocatable object whose symbols are offsets
//     in their section. The kernel lays a module's core out executable
//     sections first, in section-header order, init sections apart
//     (layout_sections in kernel/module/main.c), and /proc/modules gives
//     the start of that text. So an offset is an offset in .text exactly
//     when .text is the first allocated executable section that is not an
//     init one; otherwise the .ko names nothing.
//   - a kallsyms listing of the module loaded now (ReadLoadedModule),
//     whose addresses are absolute. Whether that listing describes the
//     module as it ran (its build-id and load address now) is the
//     caller's to prove.

// Module names a kernel module's functions by their offset from its load
// address. It is immutable and safe for concurrent use.
type Module struct {
	syms    []modSym // sorted by start, ends not past the next start
	buildID buildid.ID
}

// modSym is a module function as an offset range from its load address;
// one without a name (a data symbol) only ends the one before it.
type modSym struct {
	start, end uint64
	name       string
}

// noModuleFunc is the error of an offset that no function of a module
// covers.
type noModuleFunc uint64

func (e noModuleFunc) Error() string {
	return fmt.Sprintf("module offset %#x: no module function here", uint64(e))
}

func (e noModuleFunc) Unwrap() error { return ErrUnknownAddr }

// BuildID returns the build-id of the .ko the names were read from, nil
// for a kallsyms listing or a .ko without one.
func (m *Module) BuildID() buildid.ID { return m.buildID }

// find returns the function that covers off.
func (m *Module) find(off uint64) (*modSym, bool) {
	i := sort.Search(len(m.syms), func(i int) bool { return m.syms[i].start > off }) - 1
	if i < 0 || off >= m.syms[i].end || m.syms[i].name == "" {
		return nil, false
	}
	return &m.syms[i], true
}

// Frames implements [Symbolizer] for offsets from the module's load
// address: one frame, the function's name as listed (kernel names are not
// mangled). An offset no function covers gives an error wrapping
// [ErrUnknownAddr].
func (m *Module) Frames(off uint64, buf []Frame) ([]Frame, error) {
	s, ok := m.find(off)
	if !ok {
		return buf[:0], noModuleFunc(off)
	}
	return append(buf[:0], Frame{Function: s.name, RawName: s.name}), nil
}

// Symbol returns the name, start offset and size of the function that
// covers off; ok is false when none does.
func (m *Module) Symbol(off uint64) (name string, start, size uint64, ok bool) {
	s, ok := m.find(off)
	if !ok {
		return "", 0, 0, false
	}
	return s.name, s.start, s.end - s.start, true
}

// newModule sorts syms and gives each without a size the room up to the
// next one (at most limit, the module's recorded length), as perf's
// symbols__fixup_end does for kallsyms.
func newModule(syms []modSym, limit uint64) *Module {
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
	return &Module{syms: out}
}

// ReadLoadedModule reads the functions of module name from the kallsyms
// listing at path ("ADDR TYPE NAME\t[MODULE]" lines, as /proc/kallsyms
// shows a loaded module's symbols) as offsets from base, its load address;
// limit, the module's recorded length, bounds the listing's symbols and
// the last function. Data symbols are kept, unnamed, to end the function
// before them: kallsyms has no sizes.
func ReadLoadedModule(path, name string, base, limit uint64) (*Module, error) {
	f, err := regfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	suffix := []byte("[" + name + "]")
	var syms []modSym
	funcs := 0
	err = readLineBytes(bufio.NewReader(f), path, func(line []byte, _ int64) error {
		a, typ, sym, mod, ok := splitKallsymsModule(line)
		if !ok || !bytes.Equal(mod, suffix) {
			return nil
		}
		addr, ok := parseHex(a)
		if !ok || addr < base || addr-base >= limit {
			return nil
		}
		s := modSym{start: addr - base}
		if bytes.ContainsAny(typ, "tTwW") {
			s.name = string(sym)
			funcs++
		}
		syms = append(syms, s)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if funcs == 0 {
		return nil, fmt.Errorf("%s lists no function of [%s] in its recorded range", path, name)
	}
	return newModule(syms, limit), nil
}

// splitKallsymsModule splits a module's kallsyms line, "ADDR TYPE
// NAME\t[MODULE]", into its fields; ok is false unless it has exactly
// these four and a one-letter type (the address is not checked).
func splitKallsymsModule(line []byte) (addr, typ, sym, mod []byte, ok bool) {
	addr, rest := nextField(line)
	typ, rest = nextField(rest)
	sym, rest = nextField(rest)
	mod, rest = nextField(rest)
	extra, _ := nextField(rest)
	return addr, typ, sym, mod, len(typ) == 1 && len(mod) > 0 && len(extra) == 0
}

// ReadModule reads the functions of a kernel module's .text from its .ko
// at path as offsets from the module's load address, or says why they
// cannot be: the file is not a relocatable ELF object, has no .text, or
// another executable section comes first in the module's core layout
// (then .text does not start at the load address). limit, the module's
// recorded length, bounds the last function.
//
// image, when not nil, is the module at path as the caller already read
// it (a compressed module decompressed to verify it: see
// buildidcache.ReadModuleIdentity); else the file is read, decompressed
// when compressed (buildidcache.ReadModule, which knows the format by its
// magic bytes and bounds the output by the input's size). Only a regular
// file is opened, without blocking. When want is not nil the module must
// carry that build-id, checked on the very bytes whose symbols are read
// (else an error wrapping a *buildidcache.MismatchError): the file at a
// path a lookup verified can change before it is opened again. A panic of
// debug/elf on malformed input becomes an error naming the file.
func ReadModule(path string, image []byte, limit uint64, want buildid.ID) (*Module, error) {
	var r io.ReaderAt
	var size int64
	if image != nil {
		r, size = bytes.NewReader(image), int64(len(image))
	} else {
		var done func()
		var err error
		if r, size, done, err = openModuleELF(path); err != nil {
			return nil, err
		}
		defer done()
	}
	id, err := buildidcache.ImageBuildID(path, r, size, want)
	if err != nil {
		return nil, err
	}
	var m *Module
	err = safely(func() error {
		var err error
		m, err = moduleText(path, r, limit)
		return err
	})
	if err != nil {
		return nil, moduleError(path, err)
	}
	m.buildID = id
	return m, nil
}

// moduleError names the file in an error of moduleText: its own errors
// do, a recovered panic does not.
func moduleError(path string, err error) error {
	if pe := (*safeelf.PanicError)(nil); errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", path, err)
	}
	return err
}

// openModuleELF opens a .ko for reading as ELF: a plain one through the
// open file, a compressed one (.ko.xz, .ko.zst, .ko.gz as the kernel's
// module tools install them, or perf's cached copy of one, <build-id>/elf
// with no suffix) decompressed by buildidcache.ReadModule.
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

// moduleText reads the .text functions of the relocatable object r (see
// ReadModule). It calls into debug/elf: run it through safely.
func moduleText(path string, r io.ReaderAt, limit uint64) (*Module, error) {
	ef, err := elf.NewFile(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if ef.Type != elf.ET_REL {
		return nil, fmt.Errorf("%s: not a relocatable module (%v)", path, ef.Type)
	}
	text, err := firstText(path, ef)
	if err != nil {
		return nil, err
	}
	textSize := ef.Sections[text].Size
	t, err := readSymTable(ef, elf.SHT_SYMTAB)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	names := &nameCopier{left: len(t.strs.b)}
	var out []modSym
	for i := range t.n {
		s := t.at(i)
		if int(s.Section) != text || elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Name == "" || s.Value >= textSize {
			continue
		}
		out = append(out, modSym{start: s.Value, end: s.Value + s.Size, name: names.keep(s.Name)})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no function symbol in .text", path)
	}
	return newModule(out, min(textSize, max(limit, 1))), nil
}

// firstText returns the index of .text when it is the first allocated
// executable section with code outside the init layout (freed after
// loading): the section the module's load address is the start of.
func firstText(path string, ef *elf.File) (int, error) {
	for i, s := range ef.Sections {
		if s.Flags&(elf.SHF_ALLOC|elf.SHF_EXECINSTR) != elf.SHF_ALLOC|elf.SHF_EXECINSTR || s.Size == 0 {
			continue
		}
		if strings.HasPrefix(s.Name, ".init") {
			continue
		}
		if s.Name != ".text" {
			return 0, fmt.Errorf("%s: %s precedes .text in the module's text, so offsets from its load address are not .text offsets", path, s.Name)
		}
		return i, nil
	}
	return 0, fmt.Errorf("%s: no .text section with code", path)
}
