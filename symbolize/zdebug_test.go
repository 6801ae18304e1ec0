package symbolize

import (
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestZdebugSections reads GNU's older compressed DWARF (.zdebug_*: "ZLIB",
// the size as 8 big-endian bytes, a zlib stream), as gcc -gz=zlib-gnu
// writes it: main gets its file and line. Then the declared size of
// .zdebug_info is made to lie, beyond what deflate can expand to and
// beyond what the stream holds: each is refused with a warning naming the
// section, as for SHF_COMPRESSED sections, and never allocated.
// (TestDiffC compares such binaries with addr2line and llvm-symbolizer.)
func TestZdebugSections(t *testing.T) {
	t.Parallel()
	needTool(t, "gcc")
	dir := t.TempDir()
	if !gccSupports(t, dir, "-gz=zlib-gnu") {
		t.Skip("gcc or ld here does not support -gz=zlib-gnu")
	}
	p := compile(t, dir, "zg", "gcc", testdataPath(t, "prog.c"), "-O2", "-g", "-gz=zlib-gnu")
	if !hasZdebugSection(t, p) {
		t.Fatal("gcc left no .zdebug_info section with the ZLIB header")
	}
	main := elfSymbol(t, p, "main")
	b := mustOpenOpts(t, p, Options{NoDebugFile: true})
	fr := mustFrames(t, b, main.Value)
	if last := fr[len(fr)-1]; last.Function != "main" || !strings.HasSuffix(last.File, "prog.c") || last.Line == 0 {
		t.Errorf("Frames(main) = %+v, want main with its file and line", fr)
	}
	if w := b.Warnings(); len(w) != 0 {
		t.Errorf("warnings on an intact binary: %q", w)
	}

	ef, err := elf.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	info := ef.Section(".zdebug_info")
	ef.Close()
	orig, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		size uint64
		want string
	}{
		{"beyond-deflate", 1 << 40, "claims"},
		{"beyond-stream", info.FileSize * 8, "decompresses to"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := append([]byte(nil), orig...)
			binary.BigEndian.PutUint64(d[info.Offset+4:], c.size)
			q := filepath.Join(dir, c.name)
			if err := os.WriteFile(q, d, 0o644); err != nil {
				t.Fatal(err)
			}
			b := mustOpenOpts(t, q, Options{NoDebugFile: true})
			fr := mustFrames(t, b, main.Value)
			if len(fr) != 1 || fr[0].Function != "main" || fr[0].Line != 0 {
				t.Errorf("Frames(main) = %+v, want the symbol name alone", fr)
			}
			w := strings.Join(b.Warnings(), "\n")
			if !strings.Contains(w, ".zdebug_info") || !strings.Contains(w, c.want) {
				t.Errorf("Warnings() = %q, want %q about .zdebug_info", w, c.want)
			}
		})
	}
}
