package symbolize

import (
	"bytes"
	"compress/flate"
	"compress/zlib"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"testing"

	kzlib "github.com/klauspost/compress/zlib"
)

// rawInflate decompresses the raw deflate stream data, declared to give
// size bytes, recording checkpoints every interval bytes.
func rawInflate(data []byte, size int, interval int64) ([]byte, *inflateIndex, error) {
	out := make([]byte, size)
	src := inflateSrc{src: bytes.NewReader(data), n: int64(len(data)), name: ".test"}
	ix, _, _, err := inflateFull(src, out, interval)
	return out, ix, err
}

// checkFills fills ranges of want again from ix: from every checkpoint
// (and the start), a range that starts there, one inside its interval and
// a few random ones, into a buffer full of a sentinel byte, and checks
// that exactly [lo, hi) was written, with want's bytes.
func checkFills(t testing.TB, ix *inflateIndex, want []byte, r *rand.Rand) {
	t.Helper()
	ix.keepWindows(want)
	dst := bytes.Repeat([]byte{0xa5}, len(want))
	sentinel := bytes.Repeat([]byte{0xa5}, len(want))
	try := func(lo, hi int) {
		t.Helper()
		if err := ix.fill(dst, lo, hi); err != nil {
			t.Fatalf("fill [%d, %d) of %d: %v", lo, hi, len(want), err)
		}
		if !bytes.Equal(dst[lo:hi], want[lo:hi]) {
			i := 0
			for dst[lo+i] == want[lo+i] {
				i++
			}
			t.Fatalf("fill [%d, %d) of %d: wrong byte at %d (%d checkpoints)", lo, hi, len(want), lo+i, len(ix.cps))
		}
		if !bytes.Equal(dst[:lo], sentinel[:lo]) || !bytes.Equal(dst[hi:], sentinel[hi:]) {
			t.Fatalf("fill [%d, %d) of %d wrote bytes outside the range", lo, hi, len(want))
		}
		copy(dst[lo:hi], sentinel)
	}
	if len(want) == 0 {
		return
	}
	starts := []int{0}
	for _, cp := range ix.cps {
		starts = append(starts, int(cp.out))
	}
	for _, lo := range starts {
		if lo >= len(want) {
			t.Fatalf("checkpoint at %d, output is %d bytes", lo, len(want))
		}
		if len(starts) < 20 || r.Intn(len(starts)) < 10 {
			try(lo, len(want))
		}
		try(lo, lo+1)
		try(lo, min(len(want), lo+1+r.Intn(300000)))
		if lo > 0 {
			try(lo-1, lo+1)
		}
	}
	for range 8 {
		lo := r.Intn(len(want))
		try(lo, lo+1+r.Intn(len(want)-lo))
	}
}

// testInputs returns data of the kinds sections hold and the kinds that
// exercise other code paths: a real binary's DWARF-ish bytes, text,
// random bytes (stored blocks), runs (long overlapping matches).
func testInputs(t testing.TB) map[string][]byte {
	in := map[string][]byte{}
	exe, err := os.Executable()
	if err == nil {
		if b, err := os.ReadFile(exe); err == nil {
			in["binary"] = b[:min(len(b), 1<<20)]
		}
	}
	var text bytes.Buffer
	for i := 0; text.Len() < 600<<10; i++ {
		fmt.Fprintf(&text, "line %d: the quick brown fox %x jumps over %d lazy dogs\n", i, i*i, i%97)
	}
	in["text"] = text.Bytes()
	r := rand.New(rand.NewSource(1))
	rnd := make([]byte, 300<<10)
	r.Read(rnd)
	in["random"] = rnd
	in["zeros"] = make([]byte, 1<<20)
	mixed := append([]byte(nil), text.Bytes()[:100<<10]...)
	mixed = append(mixed, rnd[:70<<10]...)
	mixed = append(mixed, bytes.Repeat([]byte("ab"), 40000)...)
	mixed = append(mixed, text.Bytes()[200<<10:300<<10]...)
	in["mixed"] = mixed
	in["small"] = []byte("hello, hello, hello")
	in["empty"] = nil
	return in
}

// blockTypes returns the types of the blocks of a raw deflate stream, as
// compress/flate would read them, by decoding it with our inflater and
// noting each header: the test must cover stored, fixed and dynamic
// blocks.
func TestInflateDifferential(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	seen := map[int]bool{}
	for name, data := range testInputs(t) {
		for _, level := range []int{flate.NoCompression, flate.HuffmanOnly, flate.BestSpeed, flate.DefaultCompression, flate.BestCompression} {
			var buf bytes.Buffer
			w, _ := flate.NewWriter(&buf, level)
			// Flushes in the middle make small blocks, which
			// compress/flate writes as fixed Huffman ones.
			for off := 0; off < len(data); {
				n := min(len(data)-off, 1+r.Intn(200<<10))
				if r.Intn(4) == 0 {
					n = min(n, 1+r.Intn(64))
				}
				w.Write(data[off : off+n])
				w.Flush()
				off += n
			}
			w.Close()
			comp := buf.Bytes()
			for _, ty := range blockTypes(t, comp) {
				seen[ty] = true
			}
			for _, interval := range []int64{1 << 10, 64 << 10, inflateInterval} {
				t.Run(fmt.Sprintf("%s/level%d/interval%d", name, level, interval), func(t *testing.T) {
					got, ix, err := rawInflate(comp, len(data), interval)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(got, data) {
						t.Fatal("output differs")
					}
					checkFills(t, ix, data, r)
					// The declared size must be exact.
					if _, _, err := rawInflate(comp, len(data)+1, interval); !errors.Is(err, ErrMalformed) {
						t.Errorf("size+1: %v", err)
					}
					if len(data) > 0 {
						if _, _, err := rawInflate(comp, len(data)-1, interval); !errors.Is(err, ErrMalformed) {
							t.Errorf("size-1: %v", err)
						}
					}
				})
			}
		}
	}
	for ty, what := range []string{"stored", "fixed", "dynamic"} {
		if !seen[ty] {
			t.Errorf("no %s block in the inputs", what)
		}
	}
}

// blockTypes lists the block types of a raw deflate stream in order,
// read by a decoder that stops at each block header.
func blockTypes(t testing.TB, comp []byte) []int {
	var types []int
	f := inflaters.Get().(*inflater)
	defer inflaters.Put(f)
	out := make([]byte, 64<<20)
	f.dst, f.lo, f.hi, f.full, f.sum = out, 0, int64(len(out)), true, nil
	f.onCp = nil
	f.start(inflateSrc{src: bytes.NewReader(comp), n: int64(len(comp)), name: ".test"}, 0)
	f.setOutput(0, nil)
	for {
		hdr := f.bits(3)
		types = append(types, int(hdr>>1))
		if err := f.block(hdr); err != nil {
			t.Fatal(err)
		}
		if hdr&1 != 0 {
			break
		}
	}
	f.dst = nil
	return types
}

// TestInflateZlib checks the zlib framing on streams written by
// compress/zlib and klauspost/compress: header, Adler-32, the errors for
// a wrong sum, a truncated stream, a bad header and a preset dictionary.
func TestInflateZlib(t *testing.T) {
	data := testInputs(t)["text"]
	for _, w := range []struct {
		name string
		new  func(io.Writer) io.WriteCloser
	}{
		{"compress/zlib", func(w io.Writer) io.WriteCloser { return zlib.NewWriter(w) }},
		{"klauspost", func(w io.Writer) io.WriteCloser { return kzlib.NewWriter(w) }},
	} {
		var buf bytes.Buffer
		zw := w.new(&buf)
		zw.Write(data)
		zw.Close()
		comp := buf.Bytes()
		inflate := func(comp []byte, size int) error {
			out := make([]byte, size)
			ix, err := inflateZlib(inflateSrc{src: bytes.NewReader(comp), n: int64(len(comp)), name: ".debug_test", secOff: 0x1234}, out, 4096)
			if err == nil && !bytes.Equal(out, data) {
				t.Fatalf("%s: output differs", w.name)
			}
			if err == nil {
				checkFills(t, ix, data, rand.New(rand.NewSource(3)))
			}
			return err
		}
		if err := inflate(comp, len(data)); err != nil {
			t.Fatalf("%s: %v", w.name, err)
		}
		bad := func(what string, comp []byte, size int, msg string) {
			t.Helper()
			err := inflate(comp, size)
			if !errors.Is(err, ErrMalformed) || !bytes.Contains([]byte(err.Error()), []byte(msg)) || !bytes.Contains([]byte(err.Error()), []byte(".debug_test at offset 0x1234")) {
				t.Errorf("%s, %s: error %v, want one naming the section and %q", w.name, what, err, msg)
			}
		}
		sum := bytes.Clone(comp)
		sum[len(sum)-1] ^= 1
		bad("wrong sum", sum, len(data), "Adler-32")
		bad("no sum", comp[:len(comp)-4], len(data), "checksum missing")
		bad("truncated", comp[:len(comp)/2], len(data), "truncated")
		hdr := bytes.Clone(comp)
		hdr[1] ^= 1
		bad("bad header", hdr, len(data), "not a zlib stream")
		dict := bytes.Clone(comp)
		dict[1] = 0x20
		dict[1] += byte(31 - (uint(dict[0])<<8|uint(dict[1]))%31)
		bad("preset dictionary", dict, len(data), "preset dictionary")
		bad("short", comp, len(data)+10, "decompresses to")
		bad("long", comp, len(data)-10, "more output than")
	}
}

// FuzzInflate compares the inflater with compress/flate on arbitrary raw
// deflate streams: when flate decodes a stream, ours must give the same
// bytes at the same declared size (and fail at any other), and every fill
// from its checkpoints must give them again; when flate fails, ours must
// fail too. Neither may panic.
func FuzzInflate(f *testing.F) {
	r := rand.New(rand.NewSource(4))
	for _, data := range [][]byte{[]byte("hello, hello, hello, hello"), bytes.Repeat([]byte("abcdefgh"), 5000), nil} {
		for _, level := range []int{flate.NoCompression, flate.HuffmanOnly, flate.BestSpeed, flate.BestCompression} {
			var buf bytes.Buffer
			w, _ := flate.NewWriter(&buf, level)
			w.Write(data)
			w.Close()
			f.Add(buf.Bytes(), uint16(100))
		}
	}
	rnd := make([]byte, 3000)
	r.Read(rnd)
	var buf bytes.Buffer
	w, _ := flate.NewWriter(&buf, flate.DefaultCompression)
	w.Write(rnd)
	w.Write(bytes.Repeat(rnd[:100], 30))
	w.Flush()
	w.Write([]byte("fixed"))
	w.Close()
	f.Add(buf.Bytes(), uint16(700))
	f.Fuzz(func(t *testing.T, comp []byte, interval uint16) {
		// Outputs are bounded so that checking every fill stays fast.
		want, err := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(comp)), 256<<10))
		if len(want) >= 256<<10 {
			return
		}
		iv := int64(interval) + 1024
		if err != nil {
			for _, size := range []int{len(want), len(want) + 1000} {
				if _, _, ourErr := rawInflate(comp, size, iv); ourErr == nil {
					t.Fatalf("flate fails (%v) after %d bytes, ours decodes %d bytes", err, len(want), size)
				}
			}
			return
		}
		got, ix, err := rawInflate(comp, len(want), iv)
		if err != nil {
			t.Fatalf("flate decodes %d bytes, ours fails: %v", len(want), err)
		}
		if !bytes.Equal(got, want) {
			t.Fatal("output differs from flate's")
		}
		checkFills(t, ix, want, rand.New(rand.NewSource(int64(len(comp)))))
		if _, _, err := rawInflate(comp, len(want)+1, iv); err == nil {
			t.Fatal("decodes with a declared size one too large")
		}
		if len(want) > 0 {
			if _, _, err := rawInflate(comp, len(want)-1, iv); err == nil {
				t.Fatal("decodes with a declared size one too small")
			}
		}
	})
}

// BenchmarkInflate decompresses the compressed .debug_info of the bench
// binary (SYMBOLIZE_BENCH_BIN; it is skipped when that section is not
// zlib-compressed) with our inflater, recording checkpoints as a load
// does, and with klauspost/compress and compress/zlib; and fills one
// 64 KiB range from its checkpoint, as a unit's refill does.
func BenchmarkInflate(b *testing.B) {
	p := benchBinary(b)
	ef, err := elf.Open(p)
	if err != nil {
		b.Fatal(err)
	}
	defer ef.Close()
	s := ef.Section(".debug_info")
	if s == nil || s.Flags&elf.SHF_COMPRESSED == 0 {
		b.Skipf("%s: .debug_info is not compressed", p)
	}
	raw, err := os.ReadFile(p)
	if err != nil {
		b.Fatal(err)
	}
	raw = raw[s.Offset : s.Offset+s.FileSize]
	var hdr [24]byte
	copy(hdr[:], raw)
	if elf.CompressionType(ef.ByteOrder.Uint32(hdr[:])) != elf.COMPRESS_ZLIB {
		b.Skip("not zlib")
	}
	size := int(ef.ByteOrder.Uint64(hdr[8:]))
	comp := raw[24:]
	src := inflateSrc{src: bytes.NewReader(comp), n: int64(len(comp)), name: ".debug_info"}
	out := make([]byte, size)
	b.Run("ours", func(b *testing.B) {
		b.SetBytes(int64(size))
		for b.Loop() {
			if _, err := inflateZlib(src, out, inflateInterval); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, c := range []struct {
		name string
		open func(io.Reader) (io.ReadCloser, error)
	}{{"klauspost", kzlib.NewReader}, {"compress-zlib", zlib.NewReader}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				zr, err := c.open(bytes.NewReader(comp))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(zr, out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	ix, err := inflateZlib(src, out, inflateInterval)
	if err != nil {
		b.Fatal(err)
	}
	ix.keepWindows(out)
	b.Logf("%d bytes, %d checkpoints", size, len(ix.cps))
	b.Run("fill64k", func(b *testing.B) {
		r := rand.New(rand.NewSource(1))
		for b.Loop() {
			lo := r.Intn(size - 64<<10)
			if err := ix.fill(out, lo, lo+64<<10); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestInflateRetarget moves the checkpoints next to given fill starts:
// as many as before, each at a block boundary, fills still exact, and the
// distance decoded before the targets no larger than with evenly spaced
// checkpoints.
func TestInflateRetarget(t *testing.T) {
	data, got, ix, r := manyBlocks(t, 6)
	targets := make([]int, 40)
	for i := range targets {
		targets[i] = r.Intn(len(data))
	}
	skip := func() (n int64) {
		for _, tg := range targets {
			k := len(ix.cps)
			for k > 0 && ix.cps[k-1].out > int64(tg) {
				k--
			}
			if k > 0 {
				n += int64(tg) - ix.cps[k-1].out
			} else {
				n += int64(tg)
			}
		}
		return n
	}
	bounds := map[inflateCheckpoint]bool{}
	for _, b := range ix.bounds {
		bounds[b] = true
	}
	n, even := len(ix.cps), skip()
	ix.retarget(got, targets)
	if len(ix.cps) != n || skip() > even {
		t.Fatalf("retarget: %d checkpoints (had %d), %d bytes before the targets (evenly spaced: %d)", len(ix.cps), n, skip(), even)
	}
	for _, cp := range ix.cps {
		if !bounds[cp] {
			t.Fatalf("checkpoint %+v is not a block boundary", cp)
		}
	}
	t.Logf("%d checkpoints: %d bytes decoded before %d targets, %d evenly spaced", n, skip(), len(targets), even)
	checkFills(t, ix, data, r)
}

// TestInflateKeepsWindowsLate checks that a full pass records checkpoints
// without deflating their windows (the first give-back or retarget keeps
// them), that a fill before then is an error rather than wrong bytes, and
// that keepWindows keeps them once.
func TestInflateKeepsWindowsLate(t *testing.T) {
	data := testInputs(t)["text"]
	var buf bytes.Buffer
	zw := zlib.NewWriter(&buf)
	zw.Write(data)
	zw.Close()
	out := make([]byte, len(data))
	ix, err := inflateZlib(inflateSrc{src: bytes.NewReader(buf.Bytes()), n: int64(buf.Len()), name: ".debug_test"}, out, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if len(ix.cps) == 0 {
		t.Fatal("no checkpoints: the test would check nothing")
	}
	if ix.zoff != nil || ix.zwin != nil {
		t.Fatal("the full pass deflated the windows")
	}
	dst := make([]byte, len(out))
	last := int(ix.cps[len(ix.cps)-1].out)
	if err := ix.fill(dst, last, last+1); err == nil {
		t.Fatal("a fill from a checkpoint whose window is not kept succeeded")
	}
	ix.keepWindows(out)
	zwin := ix.zwin
	if zwin == nil {
		t.Fatal("keepWindows kept no window")
	}
	ix.keepWindows(make([]byte, len(out)))
	if &ix.zwin[0] != &zwin[0] {
		t.Fatal("keepWindows again replaced the windows")
	}
	checkFills(t, ix, data, rand.New(rand.NewSource(1)))
	// Without checkpoints (what a failed keepWindows leaves), fills
	// decode from the stream's start, and are right.
	ix.cps, ix.zwin, ix.zoff = nil, nil, nil
	checkFills(t, ix, data, rand.New(rand.NewSource(2)))
}

// TestInflateRetargetSpaced checks the linear placement retarget falls
// back to when the greedy one would cost too much: chosen for a binary
// with gigabytes of DWARF (and not for the Go compiler's), at most as
// many checkpoints as before, each a block boundary, and every target at
// most two intervals plus a block's output past the checkpoint before
// it; fills from them are right.
func TestInflateRetargetSpaced(t *testing.T) {
	if !retargetGreedy(40, 500, 215) {
		t.Error("the Go compiler's .debug_info (40 checkpoints, 500 boundaries, 215 units) not placed greedily")
	}
	if retargetGreedy(4000, 65000, 20000) {
		t.Error("1 GB of DWARF (4,000 checkpoints, 65,000 boundaries, 20,000 units) placed greedily")
	}
	data, got, ix, r := manyBlocks(t, 7)
	targets := make([]int, 200)
	for i := range targets {
		targets[i] = r.Intn(len(data))
	}
	bounds := map[inflateCheckpoint]bool{}
	maxBlock := int64(0)
	for i, b := range ix.bounds {
		bounds[b] = true
		if i > 0 {
			maxBlock = max(maxBlock, b.out-ix.bounds[i-1].out)
		}
	}
	n := len(ix.cps)
	if n < 4 {
		t.Fatalf("%d checkpoints: the test would check little", n)
	}
	defer func(w int64) { retargetWork = w }(retargetWork)
	retargetWork = 0
	ix.retarget(got, targets)
	if len(ix.cps) == 0 || len(ix.cps) > n {
		t.Fatalf("%d checkpoints placed, had %d", len(ix.cps), n)
	}
	interval := int64(len(data)) / int64(n)
	for _, cp := range ix.cps {
		if !bounds[cp] {
			t.Fatalf("checkpoint %+v is not a block boundary", cp)
		}
	}
	for _, tg := range targets {
		k := ix.before(int64(tg))
		from := int64(0)
		if k > 0 {
			from = ix.cps[k-1].out
		}
		if d := int64(tg) - from; d > 2*interval+maxBlock {
			t.Fatalf("target %d: %d bytes past the checkpoint before it (interval %d, largest block %d)", tg, d, interval, maxBlock)
		}
	}
	checkFills(t, ix, data, r)
}

// manyBlocks deflates the "mixed" input flushed at random points (a block
// boundary at each, every 20 KiB at most) with a generator seeded seed,
// and inflates it with checkpoints every 32 KiB: data, the output, its
// index and the generator.
func manyBlocks(t *testing.T, seed int64) (data, got []byte, ix *inflateIndex, r *rand.Rand) {
	t.Helper()
	data = testInputs(t)["mixed"]
	var buf bytes.Buffer
	w, _ := flate.NewWriter(&buf, flate.BestSpeed)
	r = rand.New(rand.NewSource(seed))
	for off := 0; off < len(data); {
		n := min(len(data)-off, 1+r.Intn(20<<10))
		w.Write(data[off : off+n])
		w.Flush()
		off += n
	}
	w.Close()
	got, ix, err := rawInflate(buf.Bytes(), len(data), 32<<10)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("inflate: %v", err)
	}
	return data, got, ix, r
}
