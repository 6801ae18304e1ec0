package symbolize

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLoadersSurviveTruncation truncates a binary (or its separate debug
// file) after it is opened and before any index is loaded, as cp onto a
// binary being profiled does, and then calls each entry point that loads
// indexes: Warnings, DebugFile and Symbol reach the DWARF and .gopclntab
// loaders just as Frames does, and each must report the damage (an error,
// a warning) rather than answer from bytes that are gone or crash.
func TestLoadersSurviveTruncation(t *testing.T) {
	t.Parallel()
	needTool(t, "gcc")
	needTool(t, "objcopy")
	self, err := os.Executable()
	require.NoError(t, err)
	src := t.TempDir()
	full := compile(t, src, "full", "gcc", testdataPath(t, "prog.c"), "-O2", "-g")
	// A stripped copy with its DWARF and .symtab in a separate debug
	// file, which Symbol reads through the DWARF loader.
	for _, args := range [][]string{
		{"--only-keep-debug", full, filepath.Join(src, "stripped.debug")},
		{"--strip-all", full, filepath.Join(src, "stripped")},
		// This test binary without DWARF: Warnings loads its .gopclntab.
		{"--strip-debug", self, filepath.Join(src, "go")},
	} {
		o, err := exec.Command("objcopy", args...).CombinedOutput()
		require.NoError(t, err, "objcopy %v\n%s", args, o)
	}
	addr := elfSymbol(t, full, "main").Value
	for _, mode := range []string{"frames", "warnings", "debugfile", "symbol", "warnings-go"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			bin, dbg := filepath.Join(dir, "bin"), filepath.Join(dir, "bin.debug")
			from, victim := "full", bin
			switch mode {
			case "symbol":
				from, victim = "stripped", dbg
				copyTestFile(t, filepath.Join(src, "stripped.debug"), dbg)
			case "warnings-go":
				from = "go"
			}
			copyTestFile(t, filepath.Join(src, from), bin)
			b, err := Open(bin, Options{DebugFile: func(DebugQuery) (string, error) { return dbg, nil }})
			require.NoError(t, err)
			defer b.Close()
			require.NoError(t, os.Truncate(victim, 0))
			checkTruncated(t, b, mode, addr)
		})
	}
}

// checkTruncated calls the entry point of mode on b, whose file was
// truncated after it was opened.
func checkTruncated(t *testing.T, b *Binary, mode string, addr uint64) {
	var got string
	switch mode {
	case "frames":
		// The DWARF load fails (a warning) and the symbol table,
		// read from the now empty file, knows nothing.
		fr, err := b.Frames(addr, nil)
		assert.Error(t, err, "Frames on a truncated file: %v", fr)
		assert.NotEmpty(t, b.Warnings())
		got = fmt.Sprint(err)
	case "warnings", "warnings-go":
		w := b.Warnings()
		got = strings.Join(w, "\n")
		assert.Contains(t, got, "unexpected EOF", "Warnings() on a truncated file")
	case "debugfile":
		assert.Empty(t, b.DebugFile())
		assert.ErrorIs(t, b.dwErr, io.ErrUnexpectedEOF, "DWARF load error")
		got = fmt.Sprint(b.dwErr)
	case "symbol":
		name, _, _, ok := b.Symbol(addr)
		assert.NotEmpty(t, b.Warnings(), "Warnings() with a truncated debug file")
		got = fmt.Sprintf("Symbol = %q, %v", name, ok)
	default:
		t.Fatalf("unknown mode %q", mode)
	}
	t.Logf("%s: %s", mode, got)
}

func copyTestFile(t *testing.T, src, dst string) {
	t.Helper()
	d, err := os.ReadFile(src)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(dst, d, 0o755))
}
