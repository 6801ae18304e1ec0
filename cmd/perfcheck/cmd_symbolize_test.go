package main

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// buildSymbolizeProg compiles testdata/symbolize/prog.c with gcc into a
// temporary directory and returns its path and the address of work.
func buildSymbolizeProg(t *testing.T) (string, uint64) {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed")
	}
	src, err := filepath.Abs("../../testdata/symbolize/prog.c")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "prog")
	if out, err := exec.Command("gcc", "-O2", "-g", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	ef, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	syms, _ := ef.Symbols()
	for _, s := range syms {
		if s.Name == "work" {
			return bin, s.Value
		}
	}
	t.Fatal("no symbol work")
	return "", 0
}

func TestSymbolizeLikeAddr2line(t *testing.T) {
	t.Parallel()
	bin, work := buildSymbolizeProg(t)
	if _, err := exec.LookPath("addr2line"); err != nil {
		t.Skip("addr2line not installed")
	}
	addr := fmt.Sprintf("%#x", work)
	for _, flags := range [][]string{{"-f", "-C"}, {"-f", "-C", "-i"}} {
		want, err := exec.Command("addr2line", append(flags, "-e", bin, addr)...).Output()
		if err != nil {
			t.Fatal(err)
		}
		args := []string{"symbolize", "-e", bin, addr}
		if len(flags) == 3 {
			args = []string{"symbolize", "--inlines", "-e", bin, addr}
		}
		var out, errb bytes.Buffer
		if code := run(args, nil, &out, &errb); code != exitOK {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		if out.String() != string(want) {
			t.Errorf("%v:\n got %q\nwant %q", args, out.String(), want)
		}
	}
}

func TestSymbolizeUnknownAndStdin(t *testing.T) {
	t.Parallel()
	bin, work := buildSymbolizeProg(t)
	in := strings.NewReader(fmt.Sprintf("0x1\n%x\n", work))
	var out, errb bytes.Buffer
	if code := runSymbolize([]string{"-a", "-e", bin}, in, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	lines := strings.Split(out.String(), "\n")
	if len(lines) < 6 || lines[0] != "0x0000000000000001" || lines[1] != "??" || lines[2] != "??:0" {
		t.Fatalf("unknown address, addr2line style expected:\n%s", out.String())
	}
	if lines[4] != "work" || !strings.Contains(lines[5], "prog.c:") {
		t.Fatalf("stdin address:\n%s", out.String())
	}
}

func TestSymbolizeJSON(t *testing.T) {
	t.Parallel()
	bin, work := buildSymbolizeProg(t)
	var out, errb bytes.Buffer
	if code := run([]string{"symbolize", "--json", "--inlines", "-e", bin, fmt.Sprintf("%x", work), "zz"}, nil, &out, &errb); code != exitError {
		t.Fatalf("a bad address must give exit %d, got %d", exitError, code)
	}
	var res []symbolizeAddrJSON
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(res) != 1 || len(res[0].Frames) == 0 {
		t.Fatalf("got %+v", res)
	}
	f := res[0].Frames[len(res[0].Frames)-1]
	if f.Function != "work" || f.RawName != "work" || !strings.HasSuffix(f.File, "prog.c") || f.Line == 0 || f.Inlined {
		t.Errorf("outermost frame %+v", f)
	}
	if !strings.Contains(out.String(), `"raw_name"`) {
		t.Error("JSON field names must be snake_case")
	}
}

// readelfBuildID is bin's build-id as readelf -n prints it; the test is
// skipped without readelf or a build-id.
func readelfBuildID(t *testing.T, bin string) string {
	t.Helper()
	out, err := exec.Command("readelf", "-n", bin).Output()
	if err != nil {
		t.Skip("readelf not installed")
	}
	var id string
	for _, l := range strings.Split(string(out), "\n") {
		if i := strings.Index(l, "Build ID: "); i >= 0 {
			id = strings.TrimSpace(l[i+len("Build ID: "):])
		}
	}
	if id == "" {
		t.Skip("gcc here adds no build-id")
	}
	return id
}

func TestSymbolizeBuildID(t *testing.T) {
	t.Parallel()
	bin, work := buildSymbolizeProg(t)
	id := readelfBuildID(t, bin)
	var o, errb bytes.Buffer
	args := []string{"symbolize", "--build-id", id, "--path", bin, "--buildid-dir", t.TempDir(), "--debug-dir", t.TempDir(), fmt.Sprintf("%x", work)}
	if code := run(args, nil, &o, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.HasPrefix(o.String(), "work\n") {
		t.Errorf("got %q", o.String())
	}
	o.Reset()
	errb.Reset()
	args[2] = strings.Repeat("ab", 20)
	if code := run(args, nil, &o, &errb); code != exitError || errb.Len() == 0 {
		t.Errorf("an unknown build-id: exit %d, stderr %q", code, errb.String())
	}
}

func TestSymbolizeUsage(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	if code := run([]string{"symbolize", "0x10"}, nil, &out, &errb); code != exitError || !strings.Contains(errb.String(), "-e FILE") {
		t.Errorf("missing -e: exit %d, %q", code, errb.String())
	}
	errb.Reset()
	if code := run([]string{"symbolize", "-e", filepath.Join(os.TempDir(), "does-not-exist-perfcheck"), "0x10"}, nil, &out, &errb); code != exitError {
		t.Errorf("missing file: exit %d", code)
	}
}

// TestSymbolizeBuildIDLookupFlags: --build-id takes the shared lookup
// flags (--symfs, --debuginfod) and reads code from the executable, not
// from the .debug file that verified first, with symbols from the .debug
// file when the executable is stripped.
func TestSymbolizeBuildIDLookupFlags(t *testing.T) {
	t.Parallel()
	bin, work := buildSymbolizeProg(t)
	for _, tool := range []string{"objcopy", "strip", "readelf"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	id := readelfBuildID(t, bin)
	symfs := t.TempDir()
	exePath := filepath.Join(symfs, "usr", "bin", "prog")
	os.MkdirAll(filepath.Dir(exePath), 0o755)
	debugDir := t.TempDir()
	dbg := filepath.Join(debugDir, ".build-id", id[:2], id[2:]+".debug")
	os.MkdirAll(filepath.Dir(dbg), 0o755)
	for _, c := range [][]string{
		{"objcopy", "--only-keep-debug", bin, dbg},
		{"strip", "-s", "-o", exePath, bin},
	} {
		if b, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", c, err, b)
		}
	}
	var o, errb bytes.Buffer
	args := []string{"symbolize", "--build-id", id, "--path", "/usr/bin/prog", "--symfs", symfs,
		"--buildid-dir", t.TempDir(), "--debug-dir", debugDir, "--debuginfod", "none", fmt.Sprintf("%x", work)}
	if code := run(args, nil, &o, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.HasPrefix(o.String(), "work\n") {
		t.Errorf("got %q", o.String())
	}
	if want := "build-id " + id + ": " + exePath + " (path), symbols from " + dbg + " (debug-dir)"; !strings.Contains(errb.String(), want) {
		t.Errorf("stderr %q, want %q", errb.String(), want)
	}
}

// TestSymbolizeExeDebugDir: -e FILE finds the separate debug file of a
// stripped binary in --debug-dir, and under --symfs in its debug
// directory, as the other commands do.
func TestSymbolizeExeDebugDir(t *testing.T) {
	t.Parallel()
	bin, work := buildSymbolizeProg(t)
	for _, tool := range []string{"objcopy", "strip", "readelf"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	id := readelfBuildID(t, bin)
	debugDir, symfs := t.TempDir(), t.TempDir()
	exe := filepath.Join(symfs, "usr", "bin", "prog")
	byID := filepath.Join(".build-id", id[:2], id[2:]+".debug")
	inDir := filepath.Join(debugDir, byID)
	inSymFS := filepath.Join(symfs, "usr", "lib", "debug", byID)
	for _, d := range []string{filepath.Dir(exe), filepath.Dir(inDir), filepath.Dir(inSymFS)} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	for _, c := range [][]string{
		{"objcopy", "--only-keep-debug", bin, inDir},
		{"objcopy", "--only-keep-debug", bin, inSymFS},
		{"strip", "-s", "-o", exe, bin},
	} {
		b, err := exec.Command(c[0], c[1:]...).CombinedOutput()
		require.NoError(t, err, "%v: %s", c, b)
	}
	addr := fmt.Sprintf("%x", work)
	for name, flags := range map[string][]string{
		"none":      nil, // the stripped binary alone has no name for it
		"debug-dir": {"--debug-dir", debugDir},
		"symfs":     {"--symfs", symfs},
	} {
		var o, errb bytes.Buffer
		args := append(append([]string{"symbolize", "-e", exe}, flags...), addr)
		require.Equal(t, exitOK, run(args, nil, &o, &errb), "%s: %s", name, errb.String())
		if name == "none" {
			assert.True(t, strings.HasPrefix(o.String(), "??\n"), "%s: %q", name, o.String())
			continue
		}
		assert.True(t, strings.HasPrefix(o.String(), "work\n"), "%s: %q", name, o.String())
		assert.Contains(t, o.String(), "prog.c:", name)
	}
}

// TestSymbolizeWarnsCorruptDWARF: a binary whose .debug_info cannot be
// decoded still gets names, and the command says on stderr why it has no
// file:line.
func TestSymbolizeWarnsCorruptDWARF(t *testing.T) {
	t.Parallel()
	bin, work := buildSymbolizeProg(t)
	d, ok := fixtures.CorruptDWARF(t, bin) // DWARF version 0xffff
	if !ok {
		t.Skip("no uncompressed .debug_info")
	}
	if err := os.WriteFile(bin, d, 0o755); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"symbolize", "--debug-file=false", "-e", bin, fmt.Sprintf("%#x", work)}, nil, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if got := out.String(); got != "work\n??:?\n" {
		t.Errorf("stdout %q, want the symbol name without a line", got)
	}
	if e := errb.String(); !strings.Contains(e, "warning:") || !strings.Contains(e, bin) || !strings.Contains(e, "DWARF") {
		t.Errorf("stderr %q, want a warning naming %s and DWARF", e, bin)
	}
}

// TestSymbolizeTruncatedELF: a cut ELF file is named with the reason,
// without "symbolize:" repeated after the command's prefix.
func TestSymbolizeTruncatedELF(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "trunc")
	os.WriteFile(p, []byte("\x7fELF\x02\x01\x01"), 0o644)
	var out, errb bytes.Buffer
	if code := run([]string{"symbolize", "-e", p, "0x10"}, nil, &out, &errb); code != exitError {
		t.Fatalf("exit %d, want %d", code, exitError)
	}
	e := errb.String()
	if !strings.Contains(e, p) || !strings.Contains(e, "unexpected EOF") || strings.Contains(e, "symbolize: symbolize:") {
		t.Errorf("stderr %q: want the file and unexpected EOF, the prefix once", e)
	}
}

// TestSymbolizeDemangleFlag: --demangle=false prints the mangled name of a
// C++ function, as addr2line without -C does; the default demangles.
func TestSymbolizeDemangleFlag(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("g++"); err != nil {
		t.Skip("g++ not installed")
	}
	src := filepath.Join(t.TempDir(), "a.cc")
	os.WriteFile(src, []byte("namespace ns { __attribute__((noinline)) int twice(int x) { return 2 * x; } }\nint main(int c, char**) { return ns::twice(c); }\n"), 0o644)
	bin := filepath.Join(filepath.Dir(src), "a")
	if out, err := exec.Command("g++", "-O1", "-g", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("g++: %v\n%s", err, out)
	}
	ef, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	syms, _ := ef.Symbols()
	ef.Close()
	var addr uint64
	for _, s := range syms {
		if s.Name == "_ZN2ns5twiceEi" {
			addr = s.Value
		}
	}
	if addr == 0 {
		t.Fatal("no _ZN2ns5twiceEi")
	}
	for _, c := range []struct {
		flag, want string
	}{{"--demangle=true", "ns::twice(int)\n"}, {"--demangle=false", "_ZN2ns5twiceEi\n"}} {
		var out, errb bytes.Buffer
		if code := run([]string{"symbolize", c.flag, "-e", bin, fmt.Sprintf("%#x", addr)}, nil, &out, &errb); code != exitOK {
			t.Fatalf("%s: exit %d: %s", c.flag, code, errb.String())
		}
		if first, _, _ := strings.Cut(out.String(), "\n"); first+"\n" != c.want {
			t.Errorf("%s: %q, want first line %q", c.flag, out.String(), c.want)
		}
	}
}

// Addresses on stdin are split as strings.Fields splits them: several to
// a line, tabs, CRLF, a last line without a newline, and a line longer
// than the 64 KiB read buffer (gathered whole, no address cut in two);
// each answer in input order.
func TestSymbolizeStdinTokens(t *testing.T) {
	t.Parallel()
	bin, work := buildSymbolizeProg(t)
	w := fmt.Sprintf("%#x", work)
	long := strings.Repeat(w+" ", (70<<10)/(len(w)+1)) // over 64 KiB, spans reads
	in := "0x1 " + w + "\t0x2\r\n\n  " + w + "\n" + long + "\n\t" + w
	want := 3 + 1 + strings.Count(long, w) + 1 // unknown answers count too
	var out, errb bytes.Buffer
	if code := runSymbolize([]string{"-a", "-e", bin}, strings.NewReader(in), &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 3*want {
		t.Fatalf("%d lines for %d addresses, want 3 each", len(lines), want)
	}
	for i := 0; i < want; i++ {
		addr, fn := lines[3*i], lines[3*i+1]
		switch {
		case i == 0 && (addr != "0x0000000000000001" || fn != "??"),
			i == 2 && (addr != "0x0000000000000002" || fn != "??"),
			i != 0 && i != 2 && (addr != fmt.Sprintf("0x%016x", work) || fn != "work"):
			t.Fatalf("answer %d: %q %q", i, addr, fn)
		}
	}
}
