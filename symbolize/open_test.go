package symbolize

import (
	"debug/elf"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenTruncatedELF cuts a real binary inside its ELF header, its
// program headers and its section headers: Open must fail with an error
// wrapping ErrMalformed and io.ErrUnexpectedEOF (not a bare "EOF") that
// names the file.
func TestOpenTruncatedELF(t *testing.T) {
	needTool(t, "gcc")
	dir := t.TempDir()
	p := compile(t, dir, "prog", "gcc", testdataPath(t, "prog.c"), "-O2", "-g")
	orig, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	ef, err := elf.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	ef.Close()
	for _, n := range []int{5, 20, 63, 64 + 10} {
		q := filepath.Join(dir, "trunc")
		os.WriteFile(q, orig[:n], 0o644)
		_, err := Open(q, Options{NoDebugFile: true})
		if err == nil {
			t.Errorf("cut at %d: no error", n)
			continue
		}
		if !errors.Is(err, ErrMalformed) || !errors.Is(err, io.ErrUnexpectedEOF) || !strings.Contains(err.Error(), q) {
			t.Errorf("cut at %d: %v: want ErrMalformed and io.ErrUnexpectedEOF, naming %s", n, err, q)
		}
		if strings.Count(err.Error(), "symbolize:") > 1 {
			t.Errorf("cut at %d: prefix repeated: %v", n, err)
		}
	}
	// A bad ELF class: debug/elf's FormatError gives the offset.
	d := append([]byte(nil), orig...)
	d[elf.EI_CLASS] = 9
	q := filepath.Join(dir, "badclass")
	os.WriteFile(q, d, 0o644)
	if _, err := Open(q, Options{NoDebugFile: true}); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), q) || !strings.Contains(err.Error(), "at byte 0x") {
		t.Errorf("bad class: %v: want ErrMalformed naming the file and offset", err)
	}
}
