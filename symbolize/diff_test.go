package symbolize

// Differential tests: the same addresses symbolized by this package, by
// GNU addr2line (binutils) and by llvm-symbolizer, on binaries built here
// with the real toolchains. An answer must equal one of the two tools';
// where it equals neither, the difference must match an entry of
// knownDifferences, which says why ours is right, or the test fails.

import (
	"bufio"
	"bytes"
	"debug/elf"
	"debug/gosym"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// refFrame is a frame as the external tools print it.
type refFrame struct {
	fn   string
	file string
	line int
	col  int // llvm-symbolizer only; -1 when the tool does not print it
}

func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s not installed: %v", name, err)
	}
	return p
}

func run(t *testing.T, stdin []byte, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, stderr.String())
	}
	return out
}

func addrInput(addrs []uint64) []byte {
	var b bytes.Buffer
	for _, a := range addrs {
		fmt.Fprintf(&b, "0x%x\n", a)
	}
	return b.Bytes()
}

var discriminator = regexp.MustCompile(` \(discriminator \d+\)$`)

// splitFileLine splits "file:line[:col]"; "??" and "?" read as unknown.
func splitFileLine(s string, withCol bool) (file string, line, col int) {
	s = discriminator.ReplaceAllString(s, "")
	col = -1
	if withCol {
		if i := strings.LastIndexByte(s, ':'); i >= 0 {
			col, _ = strconv.Atoi(s[i+1:])
			s = s[:i]
		}
	}
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		line, _ = strconv.Atoi(s[i+1:])
		s = s[:i]
	}
	if s == "??" {
		s = ""
	}
	return s, line, col
}

// addr2lineFrames runs "addr2line -f -i -C -a" once for every address.
func addr2lineFrames(t *testing.T, path string, addrs []uint64) [][]refFrame {
	out := run(t, addrInput(addrs), "addr2line", "-f", "-i", "-C", "-a", "-e", path)
	var res [][]refFrame
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	for i := 0; i < len(lines); {
		if !strings.HasPrefix(lines[i], "0x") {
			t.Fatalf("addr2line output out of step at line %d: %q", i, lines[i])
		}
		i++
		var fr []refFrame
		for i+1 < len(lines) && !strings.HasPrefix(lines[i], "0x") {
			file, line, _ := splitFileLine(lines[i+1], false)
			fr = append(fr, refFrame{fn: unknownToEmpty(lines[i]), file: file, line: line, col: -1})
			i += 2
		}
		res = append(res, unknownAnswer(fr))
	}
	if len(res) != len(addrs) {
		t.Fatalf("addr2line gave %d answers for %d addresses", len(res), len(addrs))
	}
	return res
}

// llvmFrames runs llvm-symbolizer once for every address.
func llvmFrames(t *testing.T, path string, addrs []uint64) [][]refFrame {
	out := run(t, addrInput(addrs), "llvm-symbolizer", "--obj="+path, "--inlines", "--demangle", "--print-address", "--output-style=LLVM")
	var res [][]refFrame
	for _, block := range strings.Split(strings.TrimRight(string(out), "\n"), "\n\n") {
		lines := strings.Split(block, "\n")
		if len(lines) == 0 || !strings.HasPrefix(lines[0], "0x") {
			t.Fatalf("llvm-symbolizer output out of step: %q", block)
		}
		var fr []refFrame
		for i := 1; i+1 < len(lines); i += 2 {
			file, line, col := splitFileLine(lines[i+1], true)
			fr = append(fr, refFrame{fn: unknownToEmpty(lines[i]), file: file, line: line, col: col})
		}
		res = append(res, unknownAnswer(fr))
	}
	if len(res) != len(addrs) {
		t.Fatalf("llvm-symbolizer gave %d answers for %d addresses", len(res), len(addrs))
	}
	return res
}

// goAddr2lineFrames runs "go tool addr2line", the Go toolchain's pclntab
// reader, for Go binaries (it prints the outermost function only).
func goAddr2lineFrames(t *testing.T, path string, addrs []uint64) [][]refFrame {
	out := run(t, addrInput(addrs), "go", "tool", "addr2line", path)
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) != 2*len(addrs) {
		t.Fatalf("go tool addr2line gave %d lines for %d addresses", len(lines), len(addrs))
	}
	res := make([][]refFrame, len(addrs))
	for i := range addrs {
		file, line, _ := splitFileLine(lines[2*i+1], false)
		// ":-1" is go tool addr2line's "no line" (padding after code).
		line = max(line, 0)
		if fn := unknownToEmpty(lines[2*i]); fn != "" || file != "" {
			res[i] = []refFrame{{fn: fn, file: file, line: line, col: -1}}
		}
	}
	return res
}

// unknownAnswer turns the tools' "??" / "??:0" answer into no frames, as
// ours reports an unknown address.
func unknownAnswer(fr []refFrame) []refFrame {
	if len(fr) == 1 && fr[0].fn == "" && fr[0].file == "" && fr[0].line == 0 {
		return nil
	}
	return fr
}

func unknownToEmpty(s string) string {
	if s == "??" {
		return ""
	}
	return s
}

var (
	rustHash   = regexp.MustCompile(`::h[0-9a-f]{16}$`)
	gnuLambda  = regexp.MustCompile(`\{lambda(\([^)]*\))#\d+\}`)
	llvmLambda = regexp.MustCompile(`'lambda\d*'`)
	gnuClone   = regexp.MustCompile(` \[clone (\.[\w.]+)\]`)
	llvmClone  = regexp.MustCompile(` \((\.[\w.]+)\)$`)
	// rustCrateHash is c++filt's "std[e28293b1aa0f68bd]" crate suffix.
	rustCrateHash = regexp.MustCompile(`\[[0-9a-f]{16}\]`)
)

// normFn removes what only the demanglers' styles disagree on: spaces, the
// hash suffix of Rust legacy names (libiberty drops it, LLVM keeps it) and
// the spelling of lambdas (libiberty "{lambda(int)#1}", LLVM "'lambda'(int)")
// and of clones (libiberty "f() [clone .constprop.0]", LLVM "f() (.constprop.0)").
func normFn(s string) string {
	s = rustHash.ReplaceAllString(s, "")
	s = gnuLambda.ReplaceAllString(s, "lambda$1")
	s = llvmLambda.ReplaceAllString(s, "lambda")
	s = gnuClone.ReplaceAllString(s, "$1")
	s = llvmClone.ReplaceAllString(s, "$1")
	return strings.ReplaceAll(s, " ", "")
}

func normFile(s string) string {
	if s == "" {
		return ""
	}
	return filepath.Clean(s)
}

func sameFrames(ours []Frame, ref []refFrame, cols bool) bool {
	if len(ours) != len(ref) {
		return false
	}
	for i, f := range ours {
		r := ref[i]
		if normFn(f.Function) != normFn(r.fn) || normFile(f.File) != normFile(r.file) || f.Line != r.line {
			return false
		}
		if cols && r.col >= 0 && f.Column != r.col {
			return false
		}
	}
	return true
}

// diffCase is one address where ours equals neither tool.
type diffCase struct {
	bin       *testBinary
	addr      uint64
	ours      []Frame
	a2l, llvm []refFrame
	goRef     []refFrame // go tool addr2line, for Go binaries
	twinLLVM  []refFrame // llvm-symbolizer on the same program built with DWARF
}

// knownDifference is a justified way in which our answer may differ from a
// tool's. whole explains an entire answer; fn and file explain one field of
// one frame (ours against the tool's ref). Each check must establish the
// claim its reason makes from the binary or another tool, not merely
// recognize the shape of the difference.
type knownDifference struct {
	name   string
	reason string
	whole  func(c *diffCase, ref []refFrame) bool
	fn     func(c *diffCase, ours *Frame, ref *refFrame, outermost bool) bool
	file   func(c *diffCase, ours *Frame, ref *refFrame) bool
}

var knownDifferences = []knownDifference{
	{
		name: "plt-stub",
		reason: "the address is in a PLT stub; neither addr2line nor llvm-symbolizer synthesizes " +
			"PLT symbols, objdump -d and perf name the stub foo@plt after the GOT slot its jmp reads, as we do " +
			"(an IRELATIVE slot, objdump's *ABS*+0xV@plt, after the IFUNC at V, as perf does)",
		whole: func(c *diffCase, ref []refFrame) bool {
			if len(c.ours) != 1 || !strings.HasSuffix(c.ours[0].RawName, "@plt") {
				return false
			}
			return c.bin.inSection(c.addr, ".plt", ".plt.sec", ".plt.got") && c.bin.objdumpPLT(c.ours[0].RawName, c.addr)
		},
	},
	{
		name: "go-pclntab",
		reason: "Go code the tools cannot read (a binary without DWARF or symbols, or <autogenerated> " +
			"wrappers DWARF gives no lines): we read .gopclntab and its inline tree as the Go runtime does; " +
			"the physical function and the leaf position equal go tool addr2line's, and for a stripped " +
			"binary the whole inline chain equals llvm-symbolizer's on the same program built with DWARF",
		whole: func(c *diffCase, ref []refFrame) bool {
			if len(c.goRef) != 1 || len(c.ours) == 0 {
				return false
			}
			leaf, outer := c.ours[0], c.ours[len(c.ours)-1]
			if outer.Function != c.goRef[0].fn || leaf.File != c.goRef[0].file || leaf.Line != c.goRef[0].line {
				return false
			}
			return sameAsTwin(c.ours, c.twinLLVM)
		},
	},
	{
		name: "alias",
		reason: "our name and the tool's are two symbols at the same address: aliases, where the tools pick " +
			"by table order and we by perf's rule (sized, non-weak, global, fewer leading underscores, longer " +
			"name), or DW_AT_linkage_name (ours, as addr2line) against DW_AT_name " +
			"(llvm-symbolizer) of the same function (glibc's __GI_ hidden aliases)",
		fn: func(c *diffCase, ours *Frame, ref *refFrame, outermost bool) bool {
			return outermost && ref.fn != "" && c.bin.aliases(ours.RawName, ref.fn)
		},
	},
	{
		name: "tool-left-mangled",
		reason: "the tool printed the linkage name raw: llvm-symbolizer 14's demangler gives up on some " +
			"templates (std::swap's enable_if return type); c++filt demangles that raw name to our text",
		fn: func(c *diffCase, ours *Frame, ref *refFrame, outermost bool) bool {
			if !strings.HasPrefix(ref.fn, "_Z") || ours.RawName != ref.fn {
				return false
			}
			out, err := exec.Command("c++filt", ref.fn).Output()
			return err == nil && normFn(strings.TrimSpace(string(out))) == normFn(ours.Function)
		},
	},
	{
		name: "llvm-demangle-style",
		reason: "LLVM's demangler prints the return type of the function template that encloses a local " +
			"entity (int f<int>(...)::'lambda'(int)::operator()(int) const), libiberty's does not: both are our " +
			"raw name, which c++filt demangles to our text and llvm-cxxfilt to the tool's",
		fn: func(c *diffCase, ours *Frame, ref *refFrame, outermost bool) bool {
			if !strings.HasPrefix(ours.RawName, "_Z") {
				return false
			}
			gnu, ok1 := demangledBy("c++filt", ours.RawName)
			llvm, ok2 := demangledBy("llvm-cxxfilt", ours.RawName)
			return ok1 && ok2 && normFn(gnu) == normFn(ours.Function) && normFn(llvm) == normFn(ref.fn)
		},
	},
	{
		name: "clone-name",
		reason: "a GCC clone (foo.isra.0, foo.constprop.0, foo.part.0) whose DWARF has only DW_AT_name foo: " +
			"we name it after the symbol at the function's entry, as addr2line does when the symbol is in the " +
			"file it reads and as perf report does; in a stripped library that symbol is only in the separate " +
			"debug file's .symtab, which addr2line does not consult for names and llvm-symbolizer never uses",
		fn: func(c *diffCase, ours *Frame, ref *refFrame, outermost bool) bool {
			return outermost && ref.fn != "" && c.bin.cloneOf(ours.RawName, ref.fn, c.addr)
		},
	},
	{
		name: "dwarf5-dir0",
		reason: "DWARF 5 directory 0 is the compilation directory itself (DWARF 5, 6.2.4.1); with a " +
			"relative DW_AT_comp_dir such as ./sunrpc both tools prefix it once more (./sunrpc/./sunrpc/f.c)",
		file: func(c *diffCase, ours *Frame, ref *refFrame) bool {
			o, r := normFile(ours.File), normFile(ref.file)
			if filepath.IsAbs(o) || !strings.HasSuffix(r, "/"+o) {
				return false
			}
			prefix := strings.TrimSuffix(r, "/"+o)
			return strings.HasPrefix(o, prefix+"/")
		},
	},
}

// demangled caches demangledBy's answers: a name differs at many addresses.
var demangled sync.Map // [2]string{tool, name} -> string; "" when the tool failed

// demangledBy returns what the demangler tool (c++filt, llvm-cxxfilt)
// prints for name.
func demangledBy(tool, name string) (string, bool) {
	key := [2]string{tool, name}
	if v, ok := demangled.Load(key); ok {
		return v.(string), v.(string) != ""
	}
	out, err := exec.Command(tool, name).Output()
	s := ""
	if err == nil {
		s = strings.TrimSpace(string(out))
	}
	demangled.Store(key, s)
	return s, s != ""
}

// sameAsTwin compares a stripped Go binary's answer with llvm-symbolizer's
// on its DWARF twin where the twin has lines to give (none for
// <autogenerated> code); the twin's symbol table names assembly functions
// with their ABI suffix (runtime.cputicks.abi0), which pclntab does not.
func sameAsTwin(ours []Frame, twin []refFrame) bool {
	if len(twin) == 0 || twin[len(twin)-1].file == "" {
		return true
	}
	t := make([]refFrame, len(twin))
	for i, f := range twin {
		f.fn = strings.TrimSuffix(f.fn, ".abi0")
		t[i] = f
	}
	return sameFrames(ours, t, false)
}

// explain returns the names of the known differences that together account
// for every field in which ours differs from ref, or nil.
func explain(c *diffCase, ref []refFrame, cols bool) []string {
	for _, k := range knownDifferences {
		if k.whole != nil && k.whole(c, ref) {
			return []string{k.name}
		}
	}
	if len(c.ours) != len(ref) {
		return nil
	}
	used := map[string]bool{}
	for i := range c.ours {
		o, r := &c.ours[i], &ref[i]
		if normFn(o.Function) != normFn(r.fn) {
			ok := false
			for _, k := range knownDifferences {
				if k.fn != nil && k.fn(c, o, r, i == len(c.ours)-1) {
					used[k.name], ok = true, true
					break
				}
			}
			if !ok {
				return nil
			}
		}
		if normFile(o.File) != normFile(r.file) {
			ok := false
			for _, k := range knownDifferences {
				if k.file != nil && k.file(c, o, r) {
					used[k.name], ok = true, true
					break
				}
			}
			if !ok {
				return nil
			}
		}
		if o.Line != r.line || (cols && r.col >= 0 && o.Column != r.col) {
			return nil
		}
	}
	var names []string
	for n := range used {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// testBinary is a binary under test, with the facts the checks consult.
type testBinary struct {
	t    *testing.T
	path string
	ef   *elf.File
	syms []elf.Symbol
	plt  map[string]uint64 // from objdump -d, lazily
	norm []string          // normNames, lazily

	objdump string // the objdump for its architecture; "" is the host's
}

func openTestBinary(t *testing.T, path string) *testBinary {
	ef, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ef.Close() })
	tb := &testBinary{t: t, path: path, ef: ef}
	if ef.Machine == elf.EM_AARCH64 {
		// The host's objdump reads AArch64 ELF but cannot
		// disassemble it; the cross binutils' can.
		if p, err := exec.LookPath("aarch64-linux-gnu-objdump"); err == nil {
			tb.objdump = p
		}
	}
	s1, _ := ef.Symbols()
	s2, _ := ef.DynamicSymbols()
	tb.syms = append(s1, s2...)
	// A stripped binary's .symtab lives in its separate debug file: next
	// to it (the split-debug test) or under /usr/lib/debug/.build-id.
	for _, p := range tb.debugFileCandidates() {
		if dbg, err := elf.Open(p); err == nil {
			s3, _ := dbg.Symbols()
			tb.syms = append(tb.syms, s3...)
			dbg.Close()
			break
		}
	}
	return tb
}

func (tb *testBinary) debugFileCandidates() []string {
	c := []string{tb.path + ".debug"}
	for _, s := range tb.ef.Sections {
		if s.Type != elf.SHT_NOTE {
			continue
		}
		d, _ := s.Data()
		if len(d) >= 16+20 && string(d[12:15]) == "GNU" && tb.ef.ByteOrder.Uint32(d[8:]) == 3 {
			id := fmt.Sprintf("%x", d[16:16+tb.ef.ByteOrder.Uint32(d[4:])])
			c = append(c, filepath.Join("/usr/lib/debug/.build-id", id[:2], id[2:]+".debug"))
		}
	}
	return c
}

func (tb *testBinary) inSection(addr uint64, names ...string) bool {
	for _, n := range names {
		if s := tb.ef.Section(n); s != nil && s.Addr <= addr && addr < s.Addr+s.Size {
			return true
		}
	}
	return false
}

// aliases reports whether raw names a and the tool's (demangled) name b
// are symbols at the same address.
func (tb *testBinary) aliases(a, b string) bool {
	va, vb := map[uint64]bool{}, map[uint64]bool{}
	nb := normFn(b)
	norm := tb.normNames()
	for i, s := range tb.syms {
		if s.Value == 0 {
			continue
		}
		if s.Name == a {
			va[s.Value] = true
		}
		if s.Name == b || norm[i] == nb {
			vb[s.Value] = true
		}
	}
	for v := range va {
		if vb[v] {
			return true
		}
	}
	return false
}

// normNames returns normFn(Demangle(name)) of each of tb.syms, computed
// once: aliases compares a tool's name with every symbol's.
func (tb *testBinary) normNames() []string {
	if tb.norm == nil {
		tb.norm = make([]string, len(tb.syms))
		for i, s := range tb.syms {
			tb.norm[i] = normFn(Demangle(s.Name))
		}
	}
	return tb.norm
}

// gccClone matches the suffixes GCC appends to a function's name for its
// clones and split parts.
var gccClone = regexp.MustCompile(`^(\.(isra|constprop|part|cold|lto_priv|localalias)(\.[0-9]+)?)+$`)

// cloneOf reports whether raw is a GCC clone name of the tool's name fn
// (fn followed by clone suffixes) and a symbol of that name in the binary
// or its debug file covers addr.
func (tb *testBinary) cloneOf(raw, fn string, addr uint64) bool {
	if !strings.HasPrefix(raw, fn) || !gccClone.MatchString(raw[len(fn):]) {
		return false
	}
	for _, s := range tb.syms {
		if s.Name == raw && s.Value <= addr && addr < s.Value+max(s.Size, 1) {
			return true
		}
	}
	return false
}

var objdumpSym = regexp.MustCompile(`^([0-9a-f]+) <(.+)>:$`)

// objdumpPLT reports whether objdump -d labels a stub at addr with name.
// An IRELATIVE stub, which objdump labels *ABS*+0xV@plt, counts when an
// STT_GNU_IFUNC symbol named as ours (without @plt) has value V: perf's
// get_ifunc_name names it so.
func (tb *testBinary) objdumpPLT(name string, addr uint64) bool {
	v, ok := tb.pltStubs()[name]
	if ok && addr >= v && addr < v+16 {
		return true
	}
	for _, s := range tb.syms {
		if elf.ST_TYPE(s.Info) == elf.STT_GNU_IFUNC && s.Name+"@plt" == name {
			v, ok := tb.pltStubs()[fmt.Sprintf("*ABS*+%#x@plt", s.Value)]
			if ok && addr >= v && addr < v+16 {
				return true
			}
		}
	}
	return false
}

// pltStubs returns objdump -d's labels of the PLT sections: stub name
// (foo@plt) to address.
func (tb *testBinary) pltStubs() map[string]uint64 {
	if tb.plt == nil {
		tb.plt = map[string]uint64{}
		objdump := tb.objdump
		if objdump == "" {
			objdump = "objdump"
		}
		out := run(tb.t, nil, objdump, "-d", "-j", ".plt", "-j", ".plt.sec", "-j", ".plt.got", tb.path)
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			if m := objdumpSym.FindStringSubmatch(sc.Text()); m != nil {
				v, _ := strconv.ParseUint(m[1], 16, 64)
				tb.plt[m[2]] = v
			}
		}
	}
	return tb.plt
}

// checkPLT demands that every stub objdump -d labels foo@plt is named
// foo@plt by us too, at its first and its last byte. objdump's labels for
// the lazy-binding header (foo@plt-0x10) and IRELATIVE slots (*ABS*+0x...,
// which perf and we name after the IFUNC: TestIFUNC) are not stubs of a
// named symbol.
func checkPLT(t *testing.T, tb *testBinary, b *Binary) {
	t.Helper()
	switch tb.ef.Machine {
	case elf.EM_X86_64, elf.EM_386, elf.EM_AARCH64:
	default:
		return
	}
	if tb.ef.Section(".plt") == nil && tb.ef.Section(".plt.sec") == nil {
		return
	}
	stubs := tb.pltStubs()
	// A stub ends at the next label or the end of its section (16-byte
	// .plt and .plt.sec entries, 8-byte .plt.got ones; on AArch64 16, or
	// 24 with BTI and PAC).
	ends := map[uint64]uint64{}
	for _, addr := range stubs {
		end := addr + 24
		for _, sn := range []string{".plt", ".plt.sec", ".plt.got"} {
			if sec := tb.ef.Section(sn); sec != nil && sec.Addr <= addr && addr < sec.Addr+sec.Size {
				end = min(end, sec.Addr+sec.Size)
			}
		}
		for _, other := range stubs {
			if other > addr && other < end {
				end = other
			}
		}
		ends[addr] = end
	}
	n := 0
	for name, addr := range stubs {
		if !strings.HasSuffix(name, "@plt") || strings.HasPrefix(name, "*ABS*") {
			continue
		}
		for _, a := range []uint64{addr, ends[addr] - 1} {
			fr, err := b.Frames(a, nil)
			if err != nil || len(fr) != 1 || fr[0].RawName != name {
				t.Errorf("%s %#x: PLT stub objdump labels %s: ours %s, %v", filepath.Base(tb.path), a, name, fmtOurs(fr), err)
			}
		}
		n++
	}
	if n == 0 {
		t.Errorf("%s: objdump labels no PLT stub", filepath.Base(tb.path))
	}
	t.Logf("%s: %d PLT stubs named as objdump names them", filepath.Base(tb.path), n)
}

// sampleAddrs returns every function start (up to max/2 of them, chosen
// with rng when there are more) and random addresses inside functions, for
// the functions of the symbol tables or, for a Go binary without any, of
// .gopclntab.
func sampleAddrs(t *testing.T, tb *testBinary, rng *rand.Rand, max int) []uint64 {
	type fn struct{ start, size uint64 }
	var fns []fn
	seen := map[uint64]bool{}
	for _, s := range tb.syms {
		typ := elf.ST_TYPE(s.Info)
		if (typ != elf.STT_FUNC && typ != elf.STT_GNU_IFUNC) || s.Size == 0 || s.Value == 0 || seen[s.Value] {
			continue
		}
		if s.Section == elf.SHN_UNDEF || int(s.Section) >= len(tb.ef.Sections) || tb.ef.Sections[s.Section].Flags&elf.SHF_EXECINSTR == 0 {
			continue
		}
		seen[s.Value] = true
		fns = append(fns, fn{s.Value, s.Size})
	}
	if len(fns) == 0 {
		if s := tb.ef.Section(".gopclntab"); s != nil {
			data, _ := s.Data()
			tab, err := gosym.NewTable(nil, gosym.NewLineTable(data, tb.ef.Section(".text").Addr))
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range tab.Funcs {
				fns = append(fns, fn{f.Entry, f.End - f.Entry})
			}
		}
	}
	if len(fns) == 0 {
		t.Fatalf("%s: no functions to sample", tb.path)
	}
	sort.Slice(fns, func(i, j int) bool { return fns[i].start < fns[j].start })
	rng.Shuffle(len(fns), func(i, j int) { fns[i], fns[j] = fns[j], fns[i] })
	var addrs []uint64
	for i := 0; i < len(fns) && i < max/2; i++ {
		addrs = append(addrs, fns[i].start)
	}
	for len(addrs) < max {
		f := fns[rng.Intn(len(fns))]
		addrs = append(addrs, f.start+uint64(rng.Int63n(int64(f.size))))
	}
	// The PLT: one address per stub section when present.
	for _, n := range []string{".plt.sec", ".plt", ".plt.got"} {
		if s := tb.ef.Section(n); s != nil && s.Size >= 32 {
			addrs = append(addrs, s.Addr+16+uint64(rng.Int63n(int64(s.Size-16))))
		}
	}
	return addrs
}

// diffTest symbolizes a sample of path's addresses with us and both tools
// and fails on any unexplained difference. It returns how many addresses
// were compared.
func diffTest(t *testing.T, path string, opts Options, seed int64) {
	t.Helper()
	diffTestTwin(t, path, "", opts, seed)
}

// diffTestTwin is diffTest for a stripped binary whose twin (the same
// program built with DWARF, same code layout) gives llvm-symbolizer
// something to answer with.
func diffTestTwin(t *testing.T, path, twin string, opts Options, seed int64) {
	t.Helper()
	needTool(t, "addr2line")
	needTool(t, "llvm-symbolizer")
	tb := openTestBinary(t, path)
	n := 300
	if raceEnabled {
		n = 40
	}
	addrs := sampleAddrs(t, tb, rand.New(rand.NewSource(seed)), n)
	b, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	a2l := addr2lineFrames(t, path, addrs)
	llvm := llvmFrames(t, path, addrs)
	var goRef, twinRef [][]refFrame
	if tb.ef.Section(".gopclntab") != nil {
		goRef = goAddr2lineFrames(t, path, addrs)
	}
	if twin != "" {
		twinRef = llvmFrames(t, twin, addrs)
	}
	checkPLT(t, tb, b)
	counts := map[string]int{}
	// C++ frames (mangled _Z names) and those whose demangled name
	// equals a tool's outright, with no known difference invoked.
	cxx, cxxSame := 0, 0
	var buf []Frame
	for i, addr := range addrs {
		buf, err = b.Frames(addr, buf)
		if err != nil && len(buf) > 0 {
			t.Fatalf("%#x: frames and an error: %v", addr, err)
		}
		for j, f := range buf {
			if !strings.HasPrefix(f.RawName, "_Z") || rustLegacy(f.RawName) {
				continue
			}
			cxx++
			if (j < len(llvm[i]) && normFn(f.Function) == normFn(llvm[i][j].fn)) ||
				(j < len(a2l[i]) && normFn(f.Function) == normFn(a2l[i][j].fn)) {
				cxxSame++
			}
		}
		switch {
		case sameFrames(buf, llvm[i], true):
			counts["same as both"]++
			if !sameFrames(buf, a2l[i], false) {
				counts["same as both"]--
				counts["same as llvm-symbolizer only"]++
			}
			continue
		case sameFrames(buf, a2l[i], false):
			counts["same as addr2line only"]++
			continue
		}
		c := &diffCase{bin: tb, addr: addr, ours: buf, a2l: a2l[i], llvm: llvm[i]}
		if goRef != nil {
			c.goRef = goRef[i]
		}
		if twinRef != nil {
			c.twinLLVM = twinRef[i]
		}
		why := explain(c, llvm[i], true)
		if why == nil {
			why = explain(c, a2l[i], false)
		}
		if why == nil {
			t.Errorf("%s %#x: unexplained difference\n ours:            %s\n addr2line:       %s\n llvm-symbolizer: %s\n twin:            %s",
				filepath.Base(path), addr, fmtOurs(buf), fmtRef(a2l[i]), fmtRef(llvm[i]), fmtRef(c.twinLLVM))
			continue
		}
		counts["known: "+strings.Join(why, "+")]++
		if os.Getenv("SYMBOLIZE_DIFF_VERBOSE") != "" {
			t.Logf("%s %#x: known %v\n ours:            %s\n addr2line:       %s\n llvm-symbolizer: %s",
				filepath.Base(path), addr, why, fmtOurs(buf), fmtRef(a2l[i]), fmtRef(llvm[i]))
		}
	}
	t.Logf("%s: %d addresses: %v; C++ frames named as a tool does: %d of %d", filepath.Base(path), len(addrs), counts, cxxSame, cxx)
	if cxx > 0 && cxxSame*100 < 95*cxx {
		t.Errorf("%s: only %d of %d C++ frames have the function name a tool gives (want 95%%)", filepath.Base(path), cxxSame, cxx)
	}
}

func fmtOurs(fr []Frame) string {
	var s []string
	for _, f := range fr {
		s = append(s, fmt.Sprintf("%s@%s:%d:%d", f.Function, f.File, f.Line, f.Column))
	}
	return "[" + strings.Join(s, " | ") + "]"
}

func fmtRef(fr []refFrame) string {
	var s []string
	for _, f := range fr {
		s = append(s, fmt.Sprintf("%s@%s:%d:%d", f.fn, f.file, f.line, f.col))
	}
	return "[" + strings.Join(s, " | ") + "]"
}

// compile builds src with the given compiler and flags into dir/out.
func compile(t *testing.T, dir, out, compiler, src string, flags ...string) string {
	t.Helper()
	needTool(t, compiler)
	p := filepath.Join(dir, out)
	args := append(append([]string{}, flags...), "-o", p, src)
	cmd := exec.Command(compiler, args...)
	if o, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", compiler, args, err, o)
	}
	return p
}

// hasZstdSection reports whether a section of p is SHF_COMPRESSED with
// ELFCOMPRESS_ZSTD, read from the raw Elf64_Chdr.
func hasZstdSection(t *testing.T, p string) bool {
	ef, err := elf.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	for _, s := range ef.Sections {
		if s.Flags&elf.SHF_COMPRESSED == 0 {
			continue
		}
		var hdr [4]byte
		if _, err := io.ReadFull(io.NewSectionReader(ef.Sections[0].ReaderAt, 0, 0), hdr[:0]); err != nil {
			t.Fatal(err)
		}
		f, _ := os.Open(p)
		f.ReadAt(hdr[:], int64(s.Offset))
		f.Close()
		if ef.ByteOrder.Uint32(hdr[:]) == uint32(elf.COMPRESS_ZSTD) {
			return true
		}
	}
	return false
}

// gccSupports reports whether gcc accepts flag (and the linker what it
// implies) on a trivial program.
func gccSupports(t *testing.T, dir, flag string) bool {
	src := filepath.Join(dir, "probe.c")
	os.WriteFile(src, []byte("int main(void){return 0;}\n"), 0o644)
	err := exec.Command("gcc", flag, "-g", "-o", filepath.Join(dir, "probe"), src).Run()
	return err == nil
}

func testdataPath(t *testing.T, name string) string {
	p, err := filepath.Abs(filepath.Join("..", "testdata", "symbolize", name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("missing test source: %v", err)
	}
	return p
}

func TestDiffC(t *testing.T) {
	t.Parallel()
	needTool(t, "gcc")
	src := testdataPath(t, "prog.c")
	dir := t.TempDir()
	cases := []struct {
		name  string
		flags []string
	}{
		{"O0-g-pie", []string{"-O0", "-g"}},
		{"O2-g-pie", []string{"-O2", "-g"}},
		{"O2-g-nopie", []string{"-O2", "-g", "-no-pie"}},
		{"O2-nog", []string{"-O2"}},
		{"O0-nog-nopie", []string{"-O0", "-no-pie"}},
		{"O2-g-dwarf4", []string{"-O2", "-gdwarf-4"}},
		{"O2-g-gz-zlib", []string{"-O2", "-g", "-gz=zlib"}},
		{"O2-g-gz-zstd", []string{"-O2", "-g", "-gz=zstd"}},
		// GNU's older .zdebug_* sections ("ZLIB", size, zlib stream),
		// with DWARF 5 and 4.
		{"O2-g-gz-zlib-gnu", []string{"-O2", "-g", "-gz=zlib-gnu"}},
		{"O2-g-dwarf4-gz-zlib-gnu", []string{"-O2", "-gdwarf-4", "-gz=zlib-gnu"}},
		{"O2-g-gc-sections", []string{"-O2", "-g", "-ffunction-sections", "-Wl,--gc-sections"}},
		// gcc 12 lacks -gz=zstd; objcopy (binutils 2.40) can compress
		// with zstd after the fact (ELFCOMPRESS_ZSTD, type 2).
		{"O2-g-objcopy-zstd", []string{"-O2", "-g"}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, f := range c.flags {
				if strings.HasPrefix(f, "-gz=") && !gccSupports(t, dir, f) {
					t.Skipf("gcc or ld here does not support %s", f)
				}
			}
			p := compile(t, dir, c.name, "gcc", src, c.flags...)
			if strings.HasSuffix(c.name, "objcopy-zstd") {
				needTool(t, "objcopy")
				if o, err := exec.Command("objcopy", "--compress-debug-sections=zstd", p).CombinedOutput(); err != nil {
					t.Skipf("objcopy cannot compress with zstd here: %v\n%s", err, o)
				}
				if !hasZstdSection(t, p) {
					t.Fatal("objcopy left no zstd-compressed section")
				}
			}
			if strings.HasSuffix(c.name, "zlib-gnu") && !hasZdebugSection(t, p) {
				t.Fatal("gcc left no .zdebug_info section with the ZLIB header")
			}
			diffTest(t, p, Options{}, int64(i+1))
		})
	}
}

// hasZdebugSection reports whether p has a .zdebug_info section in GNU's
// compressed format (it starts with "ZLIB").
func hasZdebugSection(t *testing.T, p string) bool {
	ef, err := elf.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	s := ef.Section(".zdebug_info")
	if s == nil {
		return false
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var magic [4]byte
	_, err = f.ReadAt(magic[:], int64(s.Offset))
	return err == nil && string(magic[:]) == "ZLIB"
}

func TestDiffCPlusPlus(t *testing.T) {
	t.Parallel()
	needTool(t, "g++")
	src := testdataPath(t, "prog.cc")
	dir := t.TempDir()
	for i, flags := range [][]string{{"-O0", "-g"}, {"-O2", "-g"}, {"-O2"}, {"-O2", "-g", "-no-pie"}} {
		name := strings.Join(flags, "")
		t.Run(name, func(t *testing.T) {
			p := compile(t, dir, name, "g++", src, flags...)
			diffTest(t, p, Options{}, int64(100+i))
		})
	}
}

// TestDiffSplitDebug strips a binary and keeps its DWARF in a separate file
// linked with --add-gnu-debuglink, as distributions ship them; addr2line and
// llvm-symbolizer find it the same way (next to the binary).
func TestDiffSplitDebug(t *testing.T) {
	t.Parallel()
	needTool(t, "gcc")
	needTool(t, "objcopy")
	dir := t.TempDir()
	p := compile(t, dir, "split", "gcc", testdataPath(t, "prog.c"), "-O2", "-g")
	dbg := p + ".debug"
	for _, args := range [][]string{
		{"--only-keep-debug", p, dbg},
		{"--strip-debug", "--strip-unneeded", "--add-gnu-debuglink=" + dbg, p},
	} {
		if o, err := exec.Command("objcopy", args...).CombinedOutput(); err != nil {
			t.Fatalf("objcopy %v: %v\n%s", args, err, o)
		}
	}
	b, err := Open(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := b.DebugFile(); got != dbg {
		t.Fatalf("DebugFile() = %q, want %q", got, dbg)
	}
	b.Close()
	diffTest(t, p, Options{}, 7)

	// The locator is honored, and a wrong debug file is refused.
	other := compile(t, dir, "other", "gcc", testdataPath(t, "prog.c"), "-O0", "-g")
	b, err = Open(p, Options{DebugFile: func(q DebugQuery) (string, error) { return other, nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if got := b.DebugFile(); got != "" {
		t.Errorf("a debug file with another build-id was used: %q", got)
	}
}

func TestDiffRust(t *testing.T) {
	t.Parallel()
	rustc := "/root/.cargo/bin/rustc"
	if _, err := os.Stat(rustc); err != nil {
		p, err := exec.LookPath("rustc")
		if err != nil {
			t.Skip("rustc not installed")
		}
		rustc = p
	}
	dir := t.TempDir()
	for i, flags := range [][]string{
		{"-C", "opt-level=2", "-g"},
		{"-C", "opt-level=0", "-g", "-C", "symbol-mangling-version=v0", "-Z", "unstable-options"},
		{"-C", "opt-level=2", "-g", "-C", "symbol-mangling-version=legacy", "-Z", "unstable-options"},
	} {
		name := fmt.Sprintf("rust%d", i)
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, name)
			args := append(append([]string{}, flags...), "-o", p, testdataPath(t, "prog.rs"))
			cmd := exec.Command(rustc, args...)
			cmd.Env = append(os.Environ(), "RUSTC_BOOTSTRAP=1")
			if o, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("rustc %v: %v\n%s", args, err, o)
			}
			diffTest(t, p, Options{}, int64(200+i))
		})
	}
}

func TestDiffGo(t *testing.T) {
	t.Parallel()
	gobin := needTool(t, "go")
	dir := goProgDir(t)
	// The default build first: the stripped one is checked against it.
	for i, ld := range []string{"", "-s -w"} {
		name := "go-default"
		if ld != "" {
			name = "go-stripped"
		}
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(dir, name)
			if o, err := goBuild(gobin, dir, out, "-ldflags="+ld); err != nil {
				t.Fatalf("go build: %v\n%s", err, o)
			}
			twin := ""
			if ld != "" {
				twin = filepath.Join(dir, "go-default")
				if _, err := os.Stat(twin); err != nil {
					t.Fatalf("the default build must run first: %v", err)
				}
			}
			diffTestTwin(t, out, twin, Options{}, int64(300+i))
			if twin != "" {
				checkGoInlines(t, out, twin)
			}
		})
	}
}

// checkGoInlines compares, on every function of a stripped Go binary and
// at random points, our pclntab inline chains with our DWARF answers on its
// twin, and requires that some addresses do have inlined frames, so that
// the pclntab inline decoder is exercised. Every address is asked twice,
// in two passes: a function's pc-value tables are scanned at its first
// lookup and decoded into runs at its second, and both must answer alike.
func checkGoInlines(t *testing.T, stripped, twin string) {
	bs, err := Open(stripped, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer bs.Close()
	bt, err := Open(twin, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer bt.Close()
	addrs := textAddrs(t, stripped, 2000)
	addrs = append(addrs, addrs...)
	multi := 0
	for _, a := range addrs {
		s, err1 := bs.Frames(a, nil)
		d, err2 := bt.Frames(a, nil)
		if err1 != nil || err2 != nil || len(d) == 0 || d[len(d)-1].File == "" {
			continue
		}
		ref := make([]refFrame, len(d))
		for i, f := range d {
			ref[i] = refFrame{fn: f.Function, file: f.File, line: f.Line, col: -1}
		}
		if !sameAsTwin(s, ref) {
			t.Errorf("%#x: pclntab %s, DWARF %s", a, fmtOurs(s), fmtOurs(d))
		}
		if len(s) > 1 {
			multi++
		}
	}
	if multi == 0 {
		t.Error("no inlined frames decoded from pclntab")
	}
	t.Logf("pclntab inline chains agree with DWARF; %d of %d addresses inside inlined code", multi, len(addrs))
}

// TestGoInlinesBigEndian runs checkGoInlines on a big-endian binary (Go
// cross-compiled for s390x, default and -s -w): pclntab's words are read
// in the binary's byte order.
func TestGoInlinesBigEndian(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("cross-compiles the standard library for s390x (a minute when not cached)")
	}
	gobin := needTool(t, "go")
	dir := goProgDir(t)
	var out [2]string
	for i, ld := range []string{"", "-s -w"} {
		out[i] = filepath.Join(dir, fmt.Sprintf("goprog-s390x-%d", i))
		if o, err := goBuildFor(gobin, dir, out[i], "s390x", "-ldflags="+ld); err != nil {
			t.Fatalf("go build for s390x: %v\n%s", err, o)
		}
	}
	checkGoInlines(t, out[1], out[0])
}

// TestGoStrippedPIE checks the pclntab inline decoder on a stripped
// position-independent Go binary, where moduledata's pointers live in
// relocations.
func TestGoStrippedPIE(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the standard library in PIE mode (a minute when not cached)")
	}
	gobin := needTool(t, "go")
	dir := goProgDir(t)
	for _, v := range []struct{ out, ld string }{{"pie", ""}, {"pie-stripped", "-s -w"}} {
		if o, err := goBuild(gobin, dir, v.out, "-buildmode=pie", "-ldflags="+v.ld); err != nil {
			t.Skipf("go build -buildmode=pie: %v\n%s", err, o)
		}
	}
	checkGoInlines(t, filepath.Join(dir, "pie-stripped"), filepath.Join(dir, "pie"))
}

func TestDiffSystemLibs(t *testing.T) {
	t.Parallel()
	for i, name := range []string{"libc.so.6", "libm.so.6"} {
		t.Run(name, func(t *testing.T) {
			var p string
			for _, dir := range []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64"} {
				if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
					p = filepath.Join(dir, name)
					break
				}
			}
			if p == "" {
				t.Skipf("%s not found", name)
			}
			diffTest(t, p, Options{}, int64(400+i))
		})
	}
}

// goProgDir writes testdata/goprog (main.go and a go.mod) into a new
// directory and returns it; goBuild builds it there.
func goProgDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src, err := os.ReadFile(testdataPath(t, "goprog/main.go"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module goprog\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// goBuild runs `go build -o out ARGS... .` in dir (pure Go, this
// toolchain) and returns the output and the error.
func goBuild(gobin, dir, out string, args ...string) ([]byte, error) {
	return goBuildFor(gobin, dir, out, "", args...)
}

// goBuildFor is goBuild cross-compiling for linux/goarch ("": this
// machine's).
func goBuildFor(gobin, dir, out, goarch string, args ...string) ([]byte, error) {
	cmd := exec.Command(gobin, append(append([]string{"build", "-o", out}, args...), ".")...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod")
	if goarch != "" {
		cmd.Env = append(cmd.Env, "GOOS=linux", "GOARCH="+goarch)
	}
	return cmd.CombinedOutput()
}
