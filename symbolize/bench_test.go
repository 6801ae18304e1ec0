package symbolize

import (
	"compress/zlib"
	"debug/elf"
	"io"
	"math/rand"
	"os"
	"testing"

	kzlib "github.com/klauspost/compress/zlib"
)

// benchBinary is the binary the benchmarks symbolize: $SYMBOLIZE_BENCH_BIN
// (bench/symbolize.sh sets it to a large Go toolchain binary) or else this
// test binary, which has DWARF.
func benchBinary(b *testing.B) string {
	if p := os.Getenv("SYMBOLIZE_BENCH_BIN"); p != "" {
		return p
	}
	p, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// textAddrs returns n addresses spread uniformly over p's .text, seeded.
func textAddrs(tb testing.TB, p string, n int) []uint64 {
	ef, err := elf.Open(p)
	if err != nil {
		tb.Fatal(err)
	}
	defer ef.Close()
	text := ef.Section(".text")
	if text == nil {
		tb.Fatalf("%s: no .text", p)
	}
	r := rand.New(rand.NewSource(1))
	addrs := make([]uint64, n)
	for i := range addrs {
		addrs[i] = text.Addr + uint64(r.Int63n(int64(text.Size)))
	}
	return addrs
}

// BenchmarkFirstAnswer measures opening a binary and answering one address:
// the latency a user sees before the first line.
func BenchmarkFirstAnswer(b *testing.B) {
	p := benchBinary(b)
	addr := textAddrs(b, p, 1)[0]
	b.ReportAllocs()
	for b.Loop() {
		bin, err := Open(p, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := bin.Frames(addr, nil); err != nil {
			b.Fatal(err)
		}
		bin.Close()
	}
}

// BenchmarkBatch100k symbolizes 100,000 addresses spread over the binary
// from a fresh open, as bench/symbolize.sh feeds the external tools.
func BenchmarkBatch100k(b *testing.B) {
	p := benchBinary(b)
	addrs := textAddrs(b, p, 100000)
	b.ReportAllocs()
	for b.Loop() {
		bin, err := Open(p, Options{})
		if err != nil {
			b.Fatal(err)
		}
		var buf []Frame
		for _, a := range addrs {
			buf, _ = bin.Frames(a, buf)
		}
		bin.Close()
	}
}

// BenchmarkSteady measures lookups once every index is built.
func BenchmarkSteady(b *testing.B) {
	p := benchBinary(b)
	addrs := textAddrs(b, p, 100000)
	bin, err := Open(p, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer bin.Close()
	var buf []Frame
	for _, a := range addrs {
		buf, _ = bin.Frames(a, buf)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		buf, _ = bin.Frames(addrs[i%len(addrs)], buf)
		i++
	}
}

// BenchmarkDecodeUnits decodes every unit with code of the binary's DWARF,
// walking DIEs with the package's reader and with debug/dwarf's Reader:
// the measurement behind keeping dieread.go
// (bench/README.md).
func BenchmarkDecodeUnits(b *testing.B) {
	p := benchBinary(b)
	for _, reader := range []string{"dieReader", "debug-dwarf"} {
		b.Run(reader, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				bin, err := Open(p, Options{NoDebugFile: true})
				if err != nil {
					b.Fatal(err)
				}
				x := bin.loadDWARF()
				if x == nil || !x.hasData {
					b.Fatalf("%s: no DWARF", p)
				}
				if reader == "debug-dwarf" {
					x.dies = nil
				}
				for u := range x.units {
					if x.units[u].base != ^uint64(0) {
						if _, err := x.unit(int32(u)); err != nil {
							b.Fatal(err)
						}
					}
				}
				bin.Close()
			}
		})
	}
}

// BenchmarkInflate decompresses the binary's .debug_info (zlib, as the Go
// linker writes it) with klauspost/compress and with compress/zlib: the
// measurement behind using the former (bench/README.md).
func BenchmarkInflate(b *testing.B) {
	p := benchBinary(b)
	ef, err := elf.Open(p)
	if err != nil {
		b.Fatal(err)
	}
	defer ef.Close()
	s := ef.Section(".debug_info")
	if s == nil || s.Flags&elf.SHF_COMPRESSED == 0 {
		b.Skipf("%s: no compressed .debug_info", p)
	}
	f, err := os.Open(p)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	for _, lib := range []string{"klauspost", "compress-zlib"} {
		b.Run(lib, func(b *testing.B) {
			b.SetBytes(int64(s.Size))
			out := make([]byte, s.Size)
			for b.Loop() {
				src := io.NewSectionReader(f, int64(s.Offset)+24, int64(s.FileSize)-24)
				var r io.ReadCloser
				if lib == "klauspost" {
					r, err = kzlib.NewReader(src)
				} else {
					r, err = zlib.NewReader(src)
				}
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(r, out); err != nil {
					b.Fatal(err)
				}
				r.Close()
			}
		})
	}
}
