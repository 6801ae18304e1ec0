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

// symbolizeFrameJSON is one frame in --json output.
type symbolizeFrameJSON struct {
	Function string `json:"function,omitempty"`
	RawName  string `json:"raw_name,omitempty"`
	File     string `json:"file,omitempty"`
	Line     int    `json:"line,omitempty"`
	Column   int    `json:"column,omitempty"`
	Inlined  bool   `json:"inlined,omitempty"`
}

// symbolizeAddrJSON is the answer for one address in --json output.
type symbolizeAddrJSON struct {
	Address string               `json:"address"`
	Frames  []symbolizeFrameJSON `json:"frames"`
	Error   string               `json:"error,omitempty"`
}

func runSymbolize(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	const name = "symbolize"
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	exe := fs.String("e", "", "binary, kallsyms or perf-PID.map file to symbolize against")
	fs.StringVar(exe, "exe", "", "same as -e")
	buildID := fs.String("build-id", "", "locate the binary by this build-id instead of -e (needs the build-id cache)")
	inlines := fs.Bool("inlines", false, "print the callers of inlined functions too, leaf first (addr2line -i)")
	fs.BoolVar(inlines, "i", false, "same as --inlines")
	jsonOut := fs.Bool("json", false, "print JSON")
	dem := fs.Bool("demangle", true, "demangle C++ and Rust names")
	addrs := fs.Bool("a", false, "print each address before its frames (addr2line -a)")
	debugFile := fs.Bool("debug-file", true, "look for a separate debug file (build-id, .gnu_debuglink) in the standard places")
	// With --build-id the binary is found as every other command finds
	// it: --buildid-dir, --debug-dir, --symfs, --debuginfod.
	var lf lookupFlags
	lf.register(fs)
	recorded := fs.String("path", "", "with --build-id: the path the binary was recorded at, for path-based lookups")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: perfcheck symbolize -e FILE [--inlines] [--json] [--demangle=false] [ADDR...]")
		fmt.Fprintln(stderr, "Addresses are file addresses (as in the binary's symbol table), hex with or without 0x;")
		fmt.Fprintln(stderr, "with none given they are read from stdin, one or more per line.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitError
	}
	if *buildID != "" && *exe != "" {
		return errorf(stderr, name, "give -e or --build-id, not both")
	}
	opts := symbolize.Options{NoDemangle: !*dem, NoDebugFile: !*debugFile}
	if *buildID != "" {
		id, err := buildidcache.ParseBuildID(*buildID)
		if err != nil {
			return errorf(stderr, name, "--build-id: %v", err)
		}
		r := buildidcache.New(lf.options(stderr))
		defer r.Close() // downloads without a cache directory live until we are done
		res, err := r.Resolve(context.Background(), buildidcache.Query{BuildID: id, Path: *recorded})
		if err != nil {
			return errorf(stderr, name, "%v", err)
		}
		code, best, ok := symbolizeFiles(res)
		if !ok {
			return errorf(stderr, name, "build-id %s resolves to %q, which is not a file", id, res.Identity.Path)
		}
		*exe = code.Path
		// The richest verified file (a separate debuginfo) serves symbols
		// and DWARF; symbolize still checks it against the binary's
		// build-id.
		if best.Path != code.Path {
			opts.DebugFile = func(symbolize.DebugQuery) (string, error) { return best.Path, nil }
			fmt.Fprintf(stderr, "perfcheck %s: build-id %s: %s (%s), symbols from %s (%s)\n", name, id, code.Path, code.Locator, best.Path, best.Locator)
		} else {
			fmt.Fprintf(stderr, "perfcheck %s: build-id %s: %s (%s)\n", name, id, code.Path, code.Locator)
		}
	}
	if *exe == "" {
		return errorf(stderr, name, "missing -e FILE (or --build-id ID)")
	}
	b, err := symbolize.Open(*exe, opts)
	if err != nil {
		// The package's errors begin "symbolize: "; after our own
		// "perfcheck symbolize: " prefix that would read twice.
		return errorf(stderr, name, "%s", strings.TrimPrefix(err.Error(), "symbolize: "))
	}
	defer b.Close()
	// A batch decodes much of the binary's DWARF, making garbage,
	// while the heap that stays (names, file names, the symbol table:
	// 4.4 MB for the Go compiler; the decoded tables are off the heap)
	// is small. The default GOGC=100 lets the heap grow to twice what
	// stays before each collection. 25 keeps the Go compiler's
	// 100,000-address batch 1.5 MB lower in peak RSS than 50 for no
	// CPU cost we could measure with DWARF, and 5 to 10% more without
	// (docs/symbolize.md, "Performance"). A GOGC the user set wins.
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(symbolizeGCPercent))
	}
	// Problems that leave answers poorer without failing them (DWARF
	// that cannot be decoded, a refused debug file, skipped perf map
	// lines): said once, before any answer.
	for _, msg := range b.Warnings() {
		fmt.Fprintf(stderr, "perfcheck %s: warning: %s\n", name, msg)
	}

	w := bufio.NewWriter(stdout)
	defer w.Flush()
	var results []symbolizeAddrJSON
	var frames []symbolize.Frame
	var num []byte
	status := exitOK
	// one takes the token as bytes (the input's buffer, or an argument):
	// reading a batch allocates nothing per address.
	one := func(tok []byte) {
		addr, perr := parseAddr(string(tok))
		if perr != nil {
			fmt.Fprintf(stderr, "perfcheck %s: bad address %q\n", name, tok)
			status = exitError
			return
		}
		var lerr error
		frames, lerr = b.Frames(addr, frames)
		if *jsonOut {
			r := symbolizeAddrJSON{Address: fmt.Sprintf("%#x", addr), Frames: []symbolizeFrameJSON{}}
			if lerr != nil && !errors.Is(lerr, symbolize.ErrUnknownAddr) {
				r.Error = lerr.Error()
			}
			fr := frames
			if !*inlines && len(fr) > 1 {
				fr = fr[:1]
			}
			for _, f := range fr {
				r.Frames = append(r.Frames, symbolizeFrameJSON(f))
			}
			results = append(results, r)
			return
		}
		if *addrs {
			fmt.Fprintf(w, "0x%016x\n", addr)
		}
		if lerr != nil && !errors.Is(lerr, symbolize.ErrUnknownAddr) {
			fmt.Fprintf(stderr, "perfcheck %s: %#x: %v\n", name, addr, lerr)
		}
		if len(frames) == 0 {
			w.WriteString("??\n??:0\n")
			return
		}
		fr := frames
		if !*inlines {
			fr = fr[:1]
		}
		// Plain writes, not Fprintf: a batch of 100,000 addresses spends
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
				num = strconv.AppendInt(num[:0], int64(f.Line), 10)
				w.Write(num)
			} else {
				w.WriteByte('?')
			}
			w.WriteByte('\n')
		}
	}
	if fs.NArg() > 0 {
		for _, a := range fs.Args() {
			one([]byte(a))
		}
	} else {
		br := bufio.NewReaderSize(stdin, 64<<10)
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
				one(tok)
			}
			// Answer as soon as the input pauses (an interactive pipe
			// waits for each answer), not after every line of a batch.
			if !*jsonOut && br.Buffered() == 0 {
				w.Flush()
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				return errorf(stderr, name, "reading stdin: %v", err)
			}
		}
	}
	if *jsonOut {
		if results == nil {
			results = []symbolizeAddrJSON{}
		}
		if err := writeJSON(w, results); err != nil {
			return errorf(stderr, name, "%v", err)
		}
	}
	return status
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
