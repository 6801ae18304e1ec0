package symbolize

import (
	"bytes"
	"debug/dwarf"
	"debug/elf"
	"debug/gosym"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/metrics"
	"testing"

	"github.com/perfcheck/perfcheck/addrspace"
	"github.com/perfcheck/perfcheck/internal/budget"
	"github.com/perfcheck/perfcheck/internal/fixtures"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ulikunitz/xz"
)

// tinyC is the source of the fuzz targets' small binaries: a function with
// an inlined call, so that DWARF has a subprogram, an inlined subroutine
// and a line table, in a couple of KB.
const tinyC = "static inline int sq(int x){return x*x;}\nint f(int a){return sq(a)+1;}\nint g(int a){return f(a)*3;}\n"

// tinyBinaries compiles tinyC into small ELF files (no libc, no page
// alignment: 2 to 3 KB), one per kind of DWARF the symbolizer reads:
// DWARF 5 and 4, zlib-compressed (SHF_COMPRESSED and GNU .zdebug), zstd
// when objcopy can write it, and a stripped binary whose symbols are in
// .gnu_debugdata (MiniDebugInfo, xz). Kinds a missing tool cannot build
// are left out; without gcc there are none.
func tinyBinaries(tb testing.TB) map[string][]byte {
	tb.Helper()
	out := map[string][]byte{}
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		return out
	}
	dir := tb.TempDir()
	src := filepath.Join(dir, "tiny.c")
	if err := os.WriteFile(src, []byte(tinyC), 0o644); err != nil {
		tb.Fatal(err)
	}
	build := func(name string, flags ...string) string {
		p := filepath.Join(dir, name)
		args := append([]string{"-O2", "-g", "-nostdlib", "-static", "-Wl,-n", "-Wl,--build-id=none", "-Wl,-e,g", "-o", p, src}, flags...)
		if exec.Command(gcc, args...).Run() != nil {
			return ""
		}
		d, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		out[name] = d
		return p
	}
	build("dwarf5", "-gdwarf-5")
	build("dwarf4", "-gdwarf-4")
	build("zlib", "-gz=zlib")
	build("zlib-gnu", "-gz=zlib-gnu")
	if p := build("zstd"); p != "" {
		delete(out, "zstd")
		if exec.Command("objcopy", "--compress-debug-sections=zstd", p).Run() == nil {
			out["zstd"], _ = os.ReadFile(p)
		}
	}
	if d := out["dwarf5"]; d != nil {
		if m, ok := miniDebugInfoOf(tb, dir, d); ok {
			out["minidebuginfo"] = m
		}
	}
	return out
}

// miniDebugInfoOf returns bin stripped of everything but what it loads,
// with its symbol table in .gnu_debugdata, as Fedora builds MiniDebugInfo:
// objcopy --strip-all for the binary, --strip-debug for the ELF file xz
// compresses.
func miniDebugInfoOf(tb testing.TB, dir string, bin []byte) ([]byte, bool) {
	tb.Helper()
	p := filepath.Join(dir, "mini-src")
	if err := os.WriteFile(p, bin, 0o755); err != nil {
		tb.Fatal(err)
	}
	if exec.Command("objcopy", "--strip-debug", p, p+".syms").Run() != nil ||
		exec.Command("objcopy", "--strip-all", p, p+".stripped").Run() != nil {
		return nil, false
	}
	syms, _ := os.ReadFile(p + ".syms")
	stripped, _ := os.ReadFile(p + ".stripped")
	var z bytes.Buffer
	w, err := xz.WriterConfig{DictCap: 1 << 16}.NewWriter(&z)
	if err != nil {
		tb.Fatal(err)
	}
	w.Write(syms)
	w.Close()
	return fixtures.ELFWithSection(tb, stripped, ".gnu_debugdata", elf.SHT_PROGBITS, 0, z.Bytes()), true
}

// heapAllocated returns the bytes the process has allocated so far.
func heapAllocated() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// allocatedBy returns the bytes the process allocates while f runs. The
// count is the process's: a fuzzing worker's own goroutines allocate
// meanwhile too, so a count above want is measured again, up to three
// times, and the least is returned (f allocates the same each time).
func allocatedBy(want uint64, f func()) uint64 {
	least := uint64(math.MaxUint64)
	for range 3 {
		before := heapAllocated()
		f()
		least = min(least, heapAllocated()-before)
		if least <= want {
			break
		}
	}
	return least
}

// FuzzLineTables gives debug/dwarf's LineReader an arbitrary .debug_line
// (with the other sections of a small real binary, whose one unit's
// program is at offset 0) when checkLineTables lets it through, and
// checks that the reader then allocates no more than the check
// estimated, give or take what does not depend on the input: an
// estimate too low is how a hostile table would get past the check.
func FuzzLineTables(f *testing.F) {
	bins := tinyBinaries(f)
	if bins["dwarf5"] == nil {
		f.Skip("gcc not installed")
	}
	sections := func(bin []byte) map[string][]byte {
		ef, err := elf.NewFile(bytes.NewReader(bin))
		if err != nil {
			f.Fatal(err)
		}
		m := map[string][]byte{}
		for _, n := range []string{"abbrev", "info", "line", "str", "line_str", "addr", "rnglists", "str_offsets"} {
			if s := ef.Section(".debug_" + n); s != nil {
				m[n], _ = s.Data()
			}
		}
		return m
	}
	sec := sections(bins["dwarf5"])
	f.Add(sec["line"])
	if b := bins["dwarf4"]; b != nil {
		f.Add(sections(b)["line"])
	}
	const slack = 64 << 10 // the reader, its opcode table and formats
	f.Fuzz(func(t *testing.T, line []byte) {
		d, err := dwarf.New(sec["abbrev"], nil, nil, sec["info"], line, nil, nil, sec["str"])
		if err != nil {
			return
		}
		d.AddSection(".debug_line_str", sec["line_str"])
		cu, err := d.Reader().Next()
		if err != nil || cu == nil {
			return
		}
		compDir, _ := cu.Val(dwarf.AttrCompDir).(string)
		s := &lineSections{line: line, str: sec["str"], lineStr: sec["line_str"], order: binary.LittleEndian}
		est, err := s.lineTablesCost(0, compDir)
		if err != nil {
			return
		}
		got := allocatedBy(uint64(est)+slack, func() {
			_ = safely(func() error {
				lr, err := d.LineReader(cu)
				if err != nil || lr == nil {
					return err
				}
				var e dwarf.LineEntry
				for range 1 << 16 {
					if err := lr.Next(&e); err != nil {
						break
					}
				}
				return nil
			})
		})
		if got > uint64(est)+slack {
			t.Fatalf("LineReader allocated %d bytes, the check estimated %d", got, est)
		}
	})
}

// FuzzPclntab builds debug/gosym's table from an arbitrary .gopclntab
// when gosymCost accepts it, and checks that gosym allocates no more than
// gosymCost said, give or take what does not depend on the input.
func FuzzPclntab(f *testing.F) {
	ef, err := elf.Open(filepath.Join("..", "testdata", "perf", "bin", "goprog"))
	if err != nil {
		f.Fatal(err)
	}
	pcln, err := ef.Section(".gopclntab").Data()
	ef.Close()
	if err != nil {
		f.Fatal(err)
	}
	// The header and the first functions' records: the tables they
	// point into are cut, as a fuzzer would cut them.
	f.Add(pcln[:4096])
	const slack = 64 << 10
	f.Fuzz(func(t *testing.T, data []byte) {
		est, err := gosymCost(data, 1<<30)
		if err != nil || est > 1<<30 {
			return
		}
		got := allocatedBy(uint64(est)+slack, func() {
			_ = safely(func() error {
				_, err := gosym.NewTable(nil, gosym.NewLineTable(data, 0x401000))
				return err
			})
		})
		if got > uint64(est)+slack {
			t.Fatalf("gosym allocated %d bytes, gosymCost said %d", got, est)
		}
	})
}

// fuzzSeedsOpen are FuzzOpen's seeds: the small binaries of every kind,
// a kallsyms line, and hostile inputs of the tests built from libhot.so.
func fuzzSeedsOpen(f *testing.F) [][]byte {
	var seeds [][]byte
	for _, b := range tinyBinaries(f) {
		seeds = append(seeds, b)
	}
	seeds = append(seeds, []byte("ffffffff81000000 T _text\n"))
	hot := fixtureBin(f, "libhot.so")
	seeds = append(seeds, hot)
	seeds = append(seeds, fixtures.ELFWithSection(f, hot, ".gnu_debugdata", elf.SHT_PROGBITS, 0, fixtures.XZDictBomb(f, 2)))
	// Go: goprog, with its DWARF (zlib, by the Go linker), and with
	// it renamed away (".debug_" to ".xebug_"), so that .gopclntab
	// answers. The largest seeds by far.
	g := fixtureBin(f, "goprog")
	seeds = append(seeds, g, bytes.ReplaceAll(g, []byte("\x00.debug_"), []byte("\x00.xebug_")))
	return seeds
}

// FuzzOpen writes arbitrary bytes to a file and opens, symbolizes, looks
// up symbols and computes a bias on it: an error, never a panic, and every
// byte reserved from the decompression budget is given back by Close.
func FuzzOpen(f *testing.F) {
	for _, s := range fuzzSeedsOpen(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "f")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		bud := budget.New(budget.DefaultBase)
		b, err := Open(p, Options{NoDebugFile: true, budget: bud})
		if err != nil {
			if b != nil {
				t.Fatal("binary and error")
			}
			if bud.Used() != 0 {
				t.Fatalf("%d bytes still reserved after a failed open", bud.Used())
			}
			return
		}
		b.Warnings()
		for _, a := range []uint64{0, 0x1000, 0x1139, 0x401000, 0x401010, 0xffffffff81000010} {
			fr, err := b.Frames(a, nil)
			if err != nil && len(fr) > 0 {
				t.Fatal("frames and error")
			}
			if err != nil && !errors.Is(err, ErrUnknownAddr) && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("an error wrapping none of the sentinels: %v", err)
			}
			b.Symbol(a)
			b.Bias(addrspace.Mapping{Start: 0x555555554000, Limit: 0x555555556000, Pgoff: 0})
		}
		b.BuildID()
		b.DebugFile()
		b.Close()
		if bud.Used() != 0 {
			t.Fatalf("%d bytes still reserved after Close", bud.Used())
		}
	})
}

// TestTinyBinaries checks the fuzz targets' seeds: every kind is built
// (gcc and binutils are installed here) and names the function at the
// start of .text, with the warnings of none.
func TestTinyBinaries(t *testing.T) {
	bins := tinyBinaries(t)
	if len(bins) == 0 {
		t.Skip("gcc not installed")
	}
	for _, kind := range []string{"dwarf5", "dwarf4", "zlib", "zlib-gnu", "minidebuginfo"} {
		data := bins[kind]
		require.NotNil(t, data, kind)
		p := filepath.Join(t.TempDir(), kind)
		require.NoError(t, os.WriteFile(p, data, 0o755))
		b, err := Open(p, Options{NoDebugFile: true})
		require.NoError(t, err, kind)
		var addr uint64
		for _, s := range b.ef.Sections {
			if s.Name == ".text" {
				addr = s.Addr
			}
		}
		name, _, _, ok := b.Symbol(addr + 1)
		require.True(t, ok, kind)
		fr, err := b.Frames(addr+1, nil)
		require.NoError(t, err, kind)
		t.Logf("%s: %d bytes, %s: %+v", kind, len(data), name, fr)
		assert.Empty(t, b.Warnings(), kind)
		require.NoError(t, b.Close())
	}
}
