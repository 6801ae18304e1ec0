package symbolize

import (
	"debug/elf"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOpenTruncatedELF cuts a real binary inside its ELF header, its
// program headers and its section headers: Open must fail with an error
// wrapping ErrMalformed and io.ErrUnexpectedEOF (not a bare "EOF") that
// names the file.
func TestOpenTruncatedELF(t *testing.T) {
	t.Parallel()
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

// TestOpenNonELF checks which text files Open reads as symbol lists (see
// Open's rule): a file named kallsyms, or one whose first line reads as
// kallsyms, whatever its name; a perf-PID.map. Anything else, such as
// /etc/passwd or an empty file, is an error wrapping ErrMalformed.
func TestOpenNonELF(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const ks = "ffffffff81000000 T _text\nffffffff81000010 t helper\n"
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	for _, c := range []struct {
		name, content string
		format        Format
	}{
		{"kallsyms", ks, FormatKallsyms},
		{"kernel-symbols.txt", "\n" + ks, FormatKallsyms},
		{"perf-42.map", "1000 10 jitted\n", FormatPerfMap},
	} {
		b, err := Open(write(c.name, c.content), Options{})
		require.NoError(t, err, c.name)
		assert.Equal(t, c.format, b.Format(), c.name)
		b.Close()
	}
	for _, c := range []struct{ name, content, want string }{
		{"passwd", "root:x:0:0:root:/root:/bin/bash\n", "neither an ELF file"},
		{"empty", "", "neither an ELF file"},
		{"notes.txt", "ffffffff81000000 is an address\n", "neither an ELF file"},
		// Named kallsyms, it is read as one and fails as one.
		{"kallsyms", "root:x:0:0:root:/root:/bin/bash\n", "not a kallsyms line"},
	} {
		sub := filepath.Join(dir, "bad-"+c.name)
		require.NoError(t, os.Mkdir(sub, 0o755))
		p := filepath.Join(sub, c.name)
		require.NoError(t, os.WriteFile(p, []byte(c.content), 0o644))
		_, err := Open(p, Options{})
		require.Error(t, err, c.name)
		assert.ErrorIs(t, err, ErrMalformed, c.name)
		assert.Contains(t, err.Error(), p, c.name)
		assert.Contains(t, err.Error(), c.want, c.name)
	}
	if _, err := os.Stat("/etc/passwd"); err == nil {
		_, err := Open("/etc/passwd", Options{})
		assert.ErrorIs(t, err, ErrMalformed)
	}
}
