package symbolize

import (
	"debug/elf"
	"math/rand"
	"os"
	"testing"
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
