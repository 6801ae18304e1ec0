package symbolize

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// TestWarningsCorruptDWARF breaks the header of the first unit of a real
// binary's .debug_info: lookups still answer from the symbol table, and
// Warnings says why they have no file:line, naming the file.
func TestWarningsCorruptDWARF(t *testing.T) {
	t.Parallel()
	needTool(t, "gcc")
	dir := t.TempDir()
	p := compile(t, dir, "prog", "gcc", testdataPath(t, "prog.c"), "-O2", "-g")
	// DWARF version 0xffff in the first unit header: debug/dwarf refuses
	// the section.
	d, ok := fixtures.CorruptDWARF(t, p)
	if !ok {
		t.Skip("gcc here gives no uncompressed .debug_info")
	}
	good, err := Open(p, Options{NoDebugFile: true})
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	if w := good.Warnings(); len(w) != 0 {
		t.Fatalf("warnings on an intact binary: %q", w)
	}
	q := filepath.Join(dir, "bad")
	if err := os.WriteFile(q, d, 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := Open(q, Options{NoDebugFile: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	main := elfSymbol(t, p, "main")
	fr := mustFrames(t, b, main.Value)
	if len(fr) != 1 || fr[0].Function != "main" || fr[0].Line != 0 {
		t.Errorf("Frames(main) = %+v, want the symbol name alone", fr)
	}
	w := b.Warnings()
	if len(w) != 1 || !strings.Contains(w[0], q) || !strings.Contains(w[0], "DWARF") {
		t.Errorf("Warnings() = %q, want one naming %s and DWARF", w, q)
	}
}

// TestWarningsRefusedDebugFile offers a stripped binary a debug file of
// another build: it is refused, and Warnings says so.
func TestWarningsRefusedDebugFile(t *testing.T) {
	t.Parallel()
	needTool(t, "gcc")
	needTool(t, "objcopy")
	dir := t.TempDir()
	p := compile(t, dir, "prog", "gcc", testdataPath(t, "prog.c"), "-O2", "-g")
	other := compile(t, dir, "other", "gcc", testdataPath(t, "prog.c"), "-O0", "-g")
	if o, err := exec.Command("objcopy", "--strip-debug", p).CombinedOutput(); err != nil {
		t.Fatalf("objcopy: %v\n%s", err, o)
	}
	b, err := Open(p, Options{DebugFile: func(DebugQuery) (string, error) { return other, nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	w := b.Warnings()
	if len(w) != 1 || !strings.Contains(w[0], p) || !strings.Contains(w[0], other) || !strings.Contains(w[0], "build-id") {
		t.Errorf("Warnings() = %q, want the refused %s named", w, other)
	}
}

// TestWarningsCorruptGopclntab damages a stripped Go binary's .gopclntab
// header: Warnings reports it.
func TestWarningsCorruptGopclntab(t *testing.T) {
	t.Parallel()
	gobin := needTool(t, "go")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() { println(1) }\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module w\n\ngo 1.26\n"), 0o644)
	cmd := exec.Command(gobin, "build", "-o", "w", "-ldflags=-s -w", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod")
	if o, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, o)
	}
	p := filepath.Join(dir, "w")
	ef, err := elf.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	s := ef.Section(".gopclntab")
	ef.Close()
	if s == nil {
		t.Skip("no .gopclntab section")
	}
	d, _ := os.ReadFile(p)
	copy(d[s.Offset:], []byte{0xde, 0xad, 0xbe, 0xef})
	os.WriteFile(p, d, 0o755)
	b, err := Open(p, Options{NoDebugFile: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	b.Frames(0x401000, nil)
	w := b.Warnings()
	if len(w) == 0 || !strings.Contains(strings.Join(w, "\n"), ".gopclntab") {
		t.Errorf("Warnings() = %q, want the broken .gopclntab reported", w)
	}
}
