package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/perfcheck/perfcheck/buildid"
	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/symbolize"
)

func init() {
	register(&command{
		name:    "symbolize",
		usage:   "perfcheck symbolize -e FILE | --build-id ID [--inlines] [--json] [--demangle=false] [ADDR...]",
		summary: "addr2line-style: function, then file:line, inlines expanded",
		run:     runSymbolize,
	})
}

// symbolizeAddrJSON is the answer for one address in --json output.
type symbolizeAddrJSON struct {
	Address string            `json:"address"`
	Frames  []symbolize.Frame `json:"frames"`
	Error   string            `json:"error,omitempty"`
}

// symbolizeFlags are perfcheck symbolize's flags.
type symbolizeFlags struct {
	fs        *flag.FlagSet
	exe       string
	buildID   string
	recorded  string
	inlines   bool
	json      bool
	demangle  bool
	addrs     bool
	debugFile bool
	lookup    lookupFlags
	addrArgs  []string // the addresses given as arguments
}

// runSymbolize runs perfcheck symbolize, reading addresses from stdin
// when the arguments give none.
func runSymbolize(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	const name = "symbolize"
	f, code, ok := parseSymbolizeFlags(args, stderr)
	if !ok {
		return code
	}
	opts := symbolize.Options{NoDemangle: !f.demangle, NoDebugFile: !f.debugFile}
	if f.buildID != "" {
		done, code, ok := f.locate(&opts, stderr)
		if !ok {
			return code
		}
		defer done() // downloads without a cache directory live until we are done
	}
	if f.exe == "" {
		return errorf(stderr, name, "missing -e FILE (or --build-id ID)")
	}
	if f.buildID == "" {
		defer f.debugLookup(&opts, stderr)()
	}
	b, err := symbolize.Open(f.exe, opts)
	if err != nil {
		return errorf(stderr, name, "%v", err)
	}
	defer b.Close()
	// A batch decodes much of the binary's DWARF, making garbage, while
	// the heap that stays (the DWARF sections until every unit is
	// decoded, the decoded units, the symbol table) is what the
	// collector's goal multiplies: a lower target keeps the batch's
	// peak down (bench/README.md). A GOGC the user set wins.
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(symbolizeGCPercent))
	}
	// Problems that leave answers poorer without failing them (DWARF
	// that cannot be decoded, a refused debug file, skipped perf map
	// lines): said once, before any answer, and those the lookups met
	// (a DWARF unit that cannot be decoded) after the answers.
	said := 0
	warn := func() {
		w := b.Warnings()
		for _, msg := range w[said:] {
			fmt.Fprintf(stderr, "perfcheck %s: warning: %s\n", name, msg)
		}
		said = len(w)
	}
	warn()
	p := &symbolizePrinter{b: b, f: f, w: bufio.NewWriter(stdout), stderr: stderr, status: exitOK}
	defer p.w.Flush()
	if len(f.addrArgs) > 0 {
		for _, a := range f.addrArgs {
			p.one([]byte(a))
		}
	} else if err := p.readStdin(stdin); err != nil {
		return errorf(stderr, name, "reading stdin: %v", err)
	}
	warn()
	if f.json {
		if err := p.writeJSON(); err != nil {
			return errorf(stderr, name, "%v", err)
		}
	}
	return p.status
}

// parseSymbolizeFlags parses args; when ok is false the command ends with
// code.
func parseSymbolizeFlags(args []string, stderr io.Writer) (f *symbolizeFlags, code int, ok bool) {
	f = &symbolizeFlags{fs: flag.NewFlagSet("symbolize", flag.ContinueOnError)}
	fs := f.fs
	fs.SetOutput(stderr)
	fs.StringVar(&f.exe, "e", "", "binary, kallsyms or perf-PID.map file to symbolize against")
	fs.StringVar(&f.exe, "exe", "", "same as -e")
	fs.StringVar(&f.buildID, "build-id", "", "locate the binary by this build-id instead of -e (needs the build-id cache)")
	fs.BoolVar(&f.inlines, "inlines", false, "print the callers of inlined functions too, leaf first (addr2line -i)")
	fs.BoolVar(&f.inlines, "i", false, "same as --inlines")
	fs.BoolVar(&f.json, "json", false, "print JSON")
	fs.BoolVar(&f.demangle, "demangle", true, "demangle C++ and Rust names")
	fs.BoolVar(&f.addrs, "a", false, "print each address before its frames (addr2line -a)")
	fs.BoolVar(&f.debugFile, "debug-file", true, "look for a separate debug file (build-id, .gnu_debuglink) in the standard places")
	// With --build-id the binary is found as every other command finds
	// it: --buildid-dir, --debug-dir, --symfs, --debuginfod.
	f.lookup.register(fs)
	fs.StringVar(&f.recorded, "path", "", "with --build-id: the path the binary was recorded at, for path-based lookups")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: perfcheck symbolize -e FILE [--inlines] [--json] [--demangle=false] [ADDR...]")
		fmt.Fprintln(stderr, "Addresses are file addresses (as in the binary's symbol table), hex with or without 0x;")
		fmt.Fprintln(stderr, "with none given they are read from stdin, one or more per line.")
		fs.PrintDefaults()
	}
	if collected(fs) {
		return nil, exitOK, false
	}
	// Flags may follow the addresses (symbolize ADDR --json), as other
	// commands take them after the file: parse on past each address.
	for rest := args; ; {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, exitOK, false
			}
			return nil, exitError, false
		}
		if fs.NArg() == 0 {
			break
		}
		if n := len(rest) - fs.NArg(); n > 0 && rest[n-1] == "--" {
			// After "--" everything is an address.
			f.addrArgs = append(f.addrArgs, fs.Args()...)
			break
		}
		f.addrArgs = append(f.addrArgs, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if f.buildID != "" && f.exe != "" {
		return nil, errorf(stderr, "symbolize", "give -e or --build-id, not both"), false
	}
	return f, exitOK, true
}

// locate finds the binary of --build-id as every other command finds it,
// sets f.exe to it and, when a richer verified file (a separate debuginfo)
// holds its symbols, opts.DebugFile; symbolize still checks that file
// against the binary's build-id. done closes the resolver.
func (f *symbolizeFlags) locate(opts *symbolize.Options, stderr io.Writer) (done func(), code int, ok bool) {
	const name = "symbolize"
	id, err := buildid.Parse(f.buildID)
	if err != nil {
		return nil, errorf(stderr, name, "--build-id: %v", err), false
	}
	r := buildidcache.New(f.lookup.options(stderr))
	res, err := r.Resolve(context.Background(), buildidcache.Query{BuildID: id, Path: f.recorded})
	if err != nil {
		r.Close()
		return nil, errorf(stderr, name, "%v", err), false
	}
	bin, best, ok := symbolizeFiles(res)
	if !ok {
		r.Close()
		return nil, errorf(stderr, name, "build-id %s resolves to %q, which is not a file", id, res.Identity.Path), false
	}
	f.exe = bin.Path
	if best.Path != bin.Path {
		opts.DebugFile = func(symbolize.DebugQuery) (string, error) { return best.Path, nil }
		fmt.Fprintf(stderr, "perfcheck %s: build-id %s: %s (%s), symbols from %s (%s)\n", name, id, bin.Path, bin.Locator, best.Path, best.Locator)
	} else {
		fmt.Fprintf(stderr, "perfcheck %s: build-id %s: %s (%s)\n", name, id, bin.Path, bin.Locator)
	}
	return func() { r.Close() }, exitOK, true
}

// debugLookup makes -e FILE look for its separate debug file as the other
// commands do, in --debug-dir and under --symfs (no perf cache, no
// debuginfod: a debug file is looked up by path and build-id only). The
// function it returns closes the lookup.
func (f *symbolizeFlags) debugLookup(opts *symbolize.Options, stderr io.Writer) func() {
	lo := f.lookup.options(stderr)
	lo.BuildIDDir, lo.DebuginfodURLs = "-", []string{}
	r := buildidcache.New(lo)
	opts.DebugFile = func(q symbolize.DebugQuery) (string, error) {
		return r.DebugFile(q.Path, q.BuildID, q.DebugLink)
	}
	return func() { r.Close() }
}

// symbolizePrinter answers addresses one at a time, as addr2line prints
// them or, with --json, gathered for one JSON array at the end.
type symbolizePrinter struct {
	b       *symbolize.Binary
	f       *symbolizeFlags
	w       *bufio.Writer
	stderr  io.Writer
	status  int
	results []symbolizeAddrJSON
	frames  []symbolize.Frame
	num     []byte
}

// one answers the address in tok, as bytes (the input's buffer, or an
// argument): a batch allocates nothing per address.
func (p *symbolizePrinter) one(tok []byte) {
	addr, perr := parseAddr(string(tok))
	if perr != nil {
		fmt.Fprintf(p.stderr, "perfcheck symbolize: bad address %q\n", tok)
		p.status = exitError
		return
	}
	var lerr error
	p.frames, lerr = p.b.Frames(addr, p.frames)
	if lerr != nil && errors.Is(lerr, symbolize.ErrUnknownAddr) {
		lerr = nil // "??" says it
	}
	if p.f.json {
		p.addJSON(addr, lerr)
		return
	}
	if p.f.addrs {
		fmt.Fprintf(p.w, "0x%016x\n", addr)
	}
	if lerr != nil {
		fmt.Fprintf(p.stderr, "perfcheck symbolize: %#x: %v\n", addr, lerr)
	}
	p.writeText()
}

// addJSON records the answer for addr.
func (p *symbolizePrinter) addJSON(addr uint64, lerr error) {
	r := symbolizeAddrJSON{Address: fmt.Sprintf("%#x", addr), Frames: []symbolize.Frame{}}
	if lerr != nil {
		r.Error = lerr.Error()
	}
	fr := p.frames
	if !p.f.inlines && len(fr) > 1 {
		fr = fr[:1]
	}
	r.Frames = append(r.Frames, fr...)
	p.results = append(p.results, r)
}

// writeText prints the frames of the last address as addr2line does:
// function, then file:line, "??" for what is unknown.
func (p *symbolizePrinter) writeText() {
	w := p.w
	if len(p.frames) == 0 {
		w.WriteString("??\n??:0\n")
		return
	}
	fr := p.frames
	if !p.f.inlines {
		fr = fr[:1]
	}
	// Plain writes, not Fprintf: a batch of many addresses spends
	// measurable time formatting.
	for _, f := range fr {
		if f.Function == "" {
			w.WriteString("??")
		} else {
			w.WriteString(f.Function)
		}
		w.WriteByte('\n')
		if f.File == "" {
			w.WriteString("??")
		} else {
			w.WriteString(f.File)
		}
		w.WriteByte(':')
		// addr2line prints "?" for an unknown line of a known
		// address, "??:0" only for an address it cannot place.
		if f.Line > 0 {
			p.num = strconv.AppendInt(p.num[:0], int64(f.Line), 10)
			w.Write(p.num)
		} else {
			w.WriteByte('?')
		}
		w.WriteByte('\n')
	}
}

// readStdin answers every address of in, one or more per line.
func (p *symbolizePrinter) readStdin(in io.Reader) error {
	br := bufio.NewReaderSize(in, 64<<10)
	var long []byte // a line longer than br's buffer, gathered
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long = append(long, line...)
			continue
		}
		if long != nil {
			line = append(long, line...)
			long = nil
		}
		for rest := line; ; {
			var tok []byte
			if tok, rest = nextField(rest); tok == nil {
				break
			}
			p.one(tok)
		}
		// Answer as soon as the input pauses (an interactive pipe
		// waits for each answer), not after every line of a batch.
		if !p.f.json && br.Buffered() == 0 {
			p.w.Flush()
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// writeJSON prints the answers gathered.
func (p *symbolizePrinter) writeJSON() error {
	if p.results == nil {
		p.results = []symbolizeAddrJSON{}
	}
	return writeJSON(p.w, p.results)
}

// symbolizeFiles picks, among a lookup's verified files, the one to read
// code and addresses from (an executable: the binary itself, perf's cached
// elf, a debuginfod executable; a separate debug file has no code, its
// .text is NOBITS) and the one with the richest symbols. Identity, the
// first file that verified, may be a .debug file from a debug directory.
// Without any executable the debug file serves alone: its symbol table
// and DWARF still name the addresses. ok is false when no verified
// candidate is a file on disk (the running vDSO is an in-memory image).
func symbolizeFiles(res *buildidcache.Result) (code, best buildidcache.Candidate, ok bool) {
	var debug buildidcache.Candidate
	for _, c := range res.Verified {
		if c.Path == "" || c.Image != nil {
			continue
		}
		switch c.Role {
		case "elf", "executable", "vdso", "kallsyms":
			if code.Path == "" {
				code = c
			}
		}
		if debug.Path == "" || c.Debug > debug.Debug {
			debug = c
		}
	}
	if debug.Path == "" {
		return code, best, false
	}
	if code.Path == "" {
		code = debug
	}
	best = code
	if debug.Debug > code.Debug {
		best = debug
	}
	return code, best, true
}

// symbolizeGCPercent is the garbage collector's target percentage while
// perfcheck symbolize runs (see runSymbolize).
const symbolizeGCPercent = 25

// nextField returns the first run of non-space bytes in b (space as
// strings.Fields has it, for ASCII) and what follows it; tok is nil when
// b holds no more.
func nextField(b []byte) (tok, rest []byte) {
	i := 0
	for i < len(b) && asciiSpace(b[i]) {
		i++
	}
	j := i
	for j < len(b) && !asciiSpace(b[j]) {
		j++
	}
	if i == j {
		return nil, nil
	}
	return b[i:j], b[j:]
}

func asciiSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// parseAddr reads a hex address, with or without 0x, as addr2line does.
func parseAddr(s string) (uint64, error) {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	return strconv.ParseUint(s, 16, 64)
}
