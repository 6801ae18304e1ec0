package symbolize

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// maxListLine bounds one line of a kallsyms or perf map file; longer lines
// (C++ JIT names can be long, but not megabytes) are an error.
const maxListLine = 64 << 10

// kallsymsLastSize is the extent given to the last symbol of a kallsyms
// listing, which has no successor to end it: a page, as perf's
// symbols__fixup_end rounds it.
const kallsymsLastSize = 4096

// nextField splits off the first field of b separated by spaces or tabs,
// as strings.Fields would see it, and returns it and the rest.
func nextField(b []byte) (field, rest []byte) {
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	j := i
	for j < len(b) && b[j] != ' ' && b[j] != '\t' {
		j++
	}
	return b[i:j], b[j:]
}

// parseHex parses a non-empty hexadecimal number of at most 64 bits.
func parseHex(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 16 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		v = v<<4 | uint64(c)
	}
	return v, true
}

// readLines calls fn with each line of r (without the newline) and its
// byte offset, stopping at the first error.
func readLines(r *bufio.Reader, name string, fn func(line string, off int64) error) error {
	return readLineBytes(r, name, func(line []byte, off int64) error {
		return fn(string(line), off)
	})
}

// readLineBytes is readLines without a string per line: line (without
// "\r\n") is valid only during the call.
func readLineBytes(r *bufio.Reader, name string, fn func(line []byte, off int64) error) error {
	var off int64
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// Reassemble a long line, within bounds.
			buf := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) && len(buf) <= maxListLine {
				line, err = r.ReadSlice('\n')
				buf = append(buf, line...)
			}
			if len(buf) > maxListLine {
				return fmt.Errorf("%s: %w: line at offset %d longer than %d bytes", name, ErrMalformed, off, maxListLine)
			}
			line = buf
		}
		if len(line) > 0 {
			if ferr := fn(bytes.TrimRight(line, "\r\n"), off); ferr != nil {
				return ferr
			}
			off += int64(len(line))
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
}

// readKallsyms parses "ADDR TYPE NAME [MODULE]" lines, keeping text symbols
// (types t, T, w, W) as perf's kallsyms__parse callers do for the kernel
// map. Symbols have no sizes: each extends to the next one. Addresses that
// are all zero (kptr_restrict hid them) make the listing useless and are an
// error.
func readKallsyms(r *bufio.Reader, name string) (*symTable, error) {
	t, _, err := readKallsymsRefs(r, name)
	return t, err
}

// readKallsymsRefs is readKallsyms that also returns the first address
// listed for each of perf's kernel reference symbols (KernelRefSymbol).
func readKallsymsRefs(r *bufio.Reader, name string) (*symTable, map[string]uint64, error) {
	p := kallsymsParser{name: name, refs: map[string]uint64{}}
	if err := readLineBytes(r, name, p.line); err != nil {
		return nil, nil, err
	}
	t, err := p.table()
	return t, p.refs, err
}

// kallsymsParser collects the text symbols of a kallsyms listing. A boot's
// kallsyms has 100,000+ lines: the names go end to end into one buffer and
// the entries into a small struct, converted once at the end, so that
// parsing costs a few allocations rather than several per line.
type kallsymsParser struct {
	name    string
	ents    []ksym
	names   []byte
	nonZero bool
	lines   int
	// refs, when not nil, takes the first address listed for each of
	// perf's reference symbols (RunningKernelSymbol).
	refs map[string]uint64
}

type ksym struct {
	addr     uint64
	off, end uint32 // the name in kallsymsParser.names
	bind     elf.SymBind
}

// splitKallsyms splits a kallsyms line into its address, type and name;
// ok is false when it does not have their shape (the address is not
// checked).
func splitKallsyms(line []byte) (addr, typ, sym []byte, ok bool) {
	addr, rest := nextField(line)
	typ, rest = nextField(rest)
	sym, _ = nextField(rest)
	return addr, typ, sym, len(sym) > 0 && len(typ) == 1
}

// line takes one line of the listing, at byte offset off.
func (p *kallsymsParser) line(line []byte, off int64) error {
	if len(line) == 0 {
		return nil
	}
	p.lines++
	a, typ, sym, ok := splitKallsyms(line)
	if !ok {
		return fmt.Errorf("%s: %w: offset %d: not a kallsyms line: %.60q", p.name, ErrMalformed, off, line)
	}
	addr, ok := parseHex(a)
	if !ok {
		return fmt.Errorf("%s: %w: offset %d: bad address %.20q", p.name, ErrMalformed, off, a)
	}
	if addr != 0 {
		p.nonZero = true
	}
	if p.refs != nil && (string(sym) == "_text" || string(sym) == "_stext") {
		if _, seen := p.refs[string(sym)]; !seen {
			p.refs[string(sym)] = addr
		}
	}
	bind := elf.STB_GLOBAL
	switch typ[0] {
	case 'T':
	case 'w', 'W':
		bind = elf.STB_WEAK
	case 't':
		bind = elf.STB_LOCAL
	default:
		return nil
	}
	if uint64(len(p.names)+len(sym)) > math.MaxUint32 {
		return fmt.Errorf("%s: %w: offset %d: too many symbol names", p.name, ErrMalformed, off)
	}
	// Grow by doubling: append grows large slices by a quarter, which
	// copies (and page-faults) each byte about five times.
	if len(p.names)+len(sym) > cap(p.names) {
		p.names = slices.Grow(p.names, max(len(p.names), 1<<20)+len(sym))
	}
	if len(p.ents) == cap(p.ents) {
		p.ents = slices.Grow(p.ents, max(len(p.ents), 1<<14))
	}
	o := uint32(len(p.names))
	p.names = append(p.names, sym...)
	p.ents = append(p.ents, ksym{addr: addr, off: o, end: uint32(len(p.names)), bind: bind})
	return nil
}

// table returns the symbol table of the lines taken.
func (p *kallsymsParser) table() (*symTable, error) {
	if p.lines > 0 && !p.nonZero {
		return nil, fmt.Errorf("%s: %w: every address is zero (kernel.kptr_restrict hides them)", p.name, ErrMalformed)
	}
	if p.lines == 0 {
		return nil, fmt.Errorf("%s: %w: empty kallsyms", p.name, ErrMalformed)
	}
	names := string(p.names)
	raw := make([]rawSym, len(p.ents))
	for i, e := range p.ents {
		// kallsyms has no sizes: rank every symbol as sized so that
		// only binding and name decide between aliases.
		raw[i] = rawSym{value: e.addr, name: names[e.off:e.end], rank: aliasRank(e.bind, elf.STT_FUNC, 1), limit: ^uint64(0)}
	}
	t := buildSymTable(raw)
	if n := len(t.syms); n > 0 && t.syms[n-1].end == ^uint64(0) {
		t.syms[n-1].end = t.syms[n-1].start + kallsymsLastSize
		t.maxEnd[n-1] = t.syms[n-1].end
	}
	return t, nil
}

// kallsymsPeek is how much of a file kallsymsShaped reads.
const kallsymsPeek = 4096

// kallsymsShaped reports whether the first non-empty line of r (within
// its first kallsymsPeek bytes) reads as a kallsyms line: a hexadecimal
// address, a one-letter type and a name. It consumes nothing.
func kallsymsShaped(r *bufio.Reader) bool {
	b, _ := r.Peek(kallsymsPeek)
	for len(b) > 0 {
		line, rest, _ := bytes.Cut(b, []byte{'\n'})
		line = bytes.TrimRight(line, "\r")
		if len(line) > 0 {
			a, _, _, ok := splitKallsyms(line)
			_, hex := parseHex(a)
			return ok && hex
		}
		b = rest
	}
	return false
}

// readPerfMap parses a perf JIT map: "START SIZE NAME" with START and SIZE
// in hex (with or without 0x) and NAME the rest of the line, as written by
// JITs for perf (tools/perf/Documentation/jit-interface.txt). A later line
// for the same start wins: JITs reuse code addresses after freeing code.
//
// A malformed line is skipped and counted, as perf's dso__load_perf_map
// (tools/perf/util/symbol.c) skips it: a live JIT appends to the map while
// perf reads it, so the last line is often half written. Only a map with
// malformed lines and no valid one is an error. warn receives a summary of
// the skipped lines.
func readPerfMap(r *bufio.Reader, name string, warn func(string, ...any)) (*symTable, error) {
	var entries []symbol
	bad, firstBad := 0, int64(-1)
	err := readLines(r, name, func(line string, off int64) error {
		if strings.TrimSpace(line) == "" {
			return nil
		}
		a, rest, ok1 := strings.Cut(line, " ")
		s, n, ok2 := strings.Cut(rest, " ")
		var start, size uint64
		var err1, err2 error
		if ok1 && ok2 {
			start, err1 = strconv.ParseUint(strings.TrimPrefix(a, "0x"), 16, 64)
			size, err2 = strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
		}
		if !ok1 || !ok2 || err1 != nil || err2 != nil || start+size < start {
			if bad == 0 {
				firstBad = off
			}
			bad++
			return nil
		}
		entries = append(entries, symbol{start: start, end: start + size, name: n})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if bad > 0 && len(entries) == 0 {
		return nil, fmt.Errorf("%s: %w: offset %d: no valid perf map line (%d malformed)", name, ErrMalformed, firstBad, bad)
	}
	if bad > 0 && warn != nil {
		warn("%s: %d malformed perf map line(s) skipped, the first at offset %d", name, bad, firstBad)
	}
	// Stable sort keeps file order among equal starts; keep the last.
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].start < entries[j].start })
	t := &symTable{}
	for i := range entries {
		if i+1 < len(entries) && entries[i+1].start == entries[i].start {
			continue
		}
		t.syms = append(t.syms, entries[i])
	}
	t.setMaxEnd()
	return t, nil
}
