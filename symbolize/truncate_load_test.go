//go:build linux

package symbolize

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// truncateChildEnv names the entry point TestLoadersSurviveTruncation's
// child process calls on a file truncated under its mappings.
const truncateChildEnv = "SYMBOLIZE_TRUNCATE_CHILD"

// TestLoadersSurviveTruncation truncates a binary (or its separate debug
// file) right after a section of it is mapped and before the bytes are
// read, as cp onto a binary being loaded does, and then calls each entry
// point that loads indexes: Warnings, DebugFile and Symbol reach the DWARF
// and .gopclntab loaders just as Frames does, and each must report the
// damage (ErrMalformed, in Warnings) instead of killing the process with
// SIGBUS. The hook makes the fault happen on every run; the entry point
// runs in a child process, so that a regression fails this test rather
// than the whole test binary.
func TestLoadersSurviveTruncation(t *testing.T) {
	if os.Getenv(truncateChildEnv) != "" {
		t.Skip("in the child")
	}
	needTool(t, "gcc")
	needTool(t, "objcopy")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	full := compile(t, dir, "full", "gcc", testdataPath(t, "prog.c"), "-O2", "-g")
	// A stripped copy with its DWARF and .symtab in a separate debug
	// file, which Symbol reads through the DWARF loader.
	stripped, dbg := filepath.Join(dir, "stripped"), filepath.Join(dir, "stripped.debug")
	for _, args := range [][]string{
		{"--only-keep-debug", full, dbg},
		{"--strip-all", full, stripped},
	} {
		if o, err := exec.Command("objcopy", args...).CombinedOutput(); err != nil {
			t.Fatalf("objcopy %v: %v\n%s", args, err, o)
		}
	}
	// This test binary without DWARF: Warnings loads its mapped
	// .gopclntab.
	goBin := filepath.Join(dir, "go")
	if o, err := exec.Command("objcopy", "--strip-debug", self, goBin).CombinedOutput(); err != nil {
		t.Fatalf("objcopy --strip-debug: %v\n%s", err, o)
	}
	for _, mode := range []string{"frames", "warnings", "debugfile", "symbol", "warnings-go"} {
		t.Run(mode, func(t *testing.T) {
			cmd := exec.Command(self, "-test.run=^TestLoadersSurviveTruncationChild$", "-test.v")
			cmd.Env = append(os.Environ(), truncateChildEnv+"="+mode, "SYMBOLIZE_TRUNCATE_DIR="+dir)
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "child survived: "+mode) {
				s := string(out)
				if len(s) > 3000 {
					s = s[:3000]
				}
				t.Fatalf("child (%s on a file truncated while mapped): %v\n%s", mode, err, s)
			}
		})
	}
}

// TestLoadersSurviveTruncationChild is TestLoadersSurviveTruncation's child.
func TestLoadersSurviveTruncationChild(t *testing.T) {
	mode := os.Getenv(truncateChildEnv)
	if mode == "" {
		t.Skip("run by TestLoadersSurviveTruncation")
	}
	src := os.Getenv("SYMBOLIZE_TRUNCATE_DIR")
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	dbg := filepath.Join(dir, "bin.debug")
	from := "full"
	switch mode {
	case "symbol":
		from = "stripped"
		copyTestFile(t, filepath.Join(src, "stripped.debug"), dbg)
	case "warnings-go":
		from = "go"
	}
	copyTestFile(t, filepath.Join(src, from), bin)
	addr := elfSymbol(t, filepath.Join(src, "full"), "main").Value
	var truncated sync.Once
	testHookMapped = func(f *os.File) {
		truncated.Do(func() {
			if err := os.Truncate(f.Name(), 0); err != nil {
				t.Error(err)
			}
		})
	}
	defer func() { testHookMapped = nil }()
	b, err := Open(bin, Options{DebugFile: func(DebugQuery) (string, error) { return dbg, nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var got string
	switch mode {
	case "frames":
		// The DWARF load fails (a warning) and the symbol table,
		// read from the now empty file, knows nothing.
		fr, err := b.Frames(addr, nil)
		if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnknownAddr) {
			t.Errorf("Frames: %v, %v, want ErrMalformed or ErrUnknownAddr", fr, err)
		}
		if !strings.Contains(strings.Join(b.Warnings(), "\n"), "truncated") {
			t.Errorf("Warnings() = %q, want the truncation reported", b.Warnings())
		}
		got = fmt.Sprint(err)
	case "warnings", "warnings-go":
		w := b.Warnings()
		if len(w) == 0 || !strings.Contains(strings.Join(w, "\n"), "truncated") {
			t.Errorf("Warnings() = %q, want the truncation reported", w)
		}
		got = strings.Join(w, "\n")
	case "debugfile":
		if p := b.DebugFile(); p != "" {
			t.Errorf("DebugFile() = %q, want none", p)
		}
		if err := b.dwErr; !errors.Is(err, ErrMalformed) {
			t.Errorf("DWARF load error %v, want ErrMalformed", err)
		}
		got = fmt.Sprint(b.dwErr)
	case "symbol":
		name, _, _, ok := b.Symbol(addr)
		if !strings.Contains(strings.Join(b.Warnings(), "\n"), "truncated") {
			t.Errorf("Warnings() = %q, want the debug file's truncation reported", b.Warnings())
		}
		got = fmt.Sprintf("Symbol = %q, %v", name, ok)
	default:
		t.Fatalf("unknown mode %q", mode)
	}
	t.Logf("child survived: %s: %s", mode, got)
}

func copyTestFile(t *testing.T, src, dst string) {
	t.Helper()
	d, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, d, 0o755); err != nil {
		t.Fatal(err)
	}
}
