package perfdata

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// recompress rebuilds the records of a real recording the way perf record
// -z writes them: runs of kernel records go through one long-lived zstd
// stream, flushed at the end of each run, and the flushed bytes are cut into
// COMPRESSED (81) or COMPRESSED2 (83) records at random points, so that
// zstd blocks and perf records straddle compressed records. perf's own
// records (>= 64) stay uncompressed, as perf record writes them.
//
// With split, the compressed bytes flushed before a perf record are cut at
// a random point and the perf record goes between the two parts, so that
// the decoder must read past it in the middle of a zstd block.
func recompress(t *testing.T, recs [][]byte, typ RecordType, rng *rand.Rand, split bool) []byte {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	var zout bytes.Buffer
	enc.Reset(&zout)
	var out, carry []byte
	emit := func() {
		z := append(carry, zout.Bytes()...)
		carry = nil
		if split && len(z) > 1 {
			k := rng.Intn(len(z))
			carry = bytes.Clone(z[k:])
			z = z[:k]
		}
		for len(z) > 0 {
			n := min(len(z), 1+rng.Intn(3000))
			chunk := z[:n]
			z = z[n:]
			switch typ {
			case RecordCompressed:
				h := make([]byte, 8)
				binary.LittleEndian.PutUint32(h, uint32(typ))
				binary.LittleEndian.PutUint16(h[6:], uint16(8+len(chunk)))
				out = append(append(out, h...), chunk...)
			case RecordCompressed2:
				size := (16 + len(chunk) + 7) &^ 7
				h := make([]byte, 16)
				binary.LittleEndian.PutUint32(h, uint32(typ))
				binary.LittleEndian.PutUint16(h[6:], uint16(size))
				binary.LittleEndian.PutUint64(h[8:], uint64(len(chunk)))
				out = append(append(out, h...), chunk...)
				out = append(out, make([]byte, size-16-len(chunk))...)
			}
		}
		zout.Reset()
	}
	pending := false
	for _, r := range recs {
		if RecordType(binary.LittleEndian.Uint32(r)) < recordUserStart {
			enc.Write(r)
			pending = true
			continue
		}
		if pending {
			enc.Flush()
			emit()
			pending = false
		}
		out = append(out, r...)
	}
	enc.Close()
	split = false
	emit()
	return out
}

// rawRecords splits a data section into records.
func rawRecords(t *testing.T, data []byte) [][]byte {
	var out [][]byte
	for len(data) > 0 {
		n := int(binary.LittleEndian.Uint16(data[6:]))
		if n < 8 || n > len(data) {
			t.Fatalf("bad record size %d", n)
		}
		out = append(out, data[:n])
		data = data[n:]
	}
	return out
}

// kernelDump prints the kernel records of rs, without their offsets.
func kernelDump(t *testing.T, rs *Records) (dump []string, user, compressed int) {
	for rs.Next() {
		r := rs.Record()
		h := r.Header()
		if r.Type().IsUser() {
			user++
			if r.Type() == RecordCompressed || r.Type() == RecordCompressed2 {
				compressed++
			}
			continue
		}
		if !h.Compressed {
			t.Fatalf("kernel record at %d not from compressed data", h.Offset)
		}
		h.Offset, h.Compressed = 0, false
		dump = append(dump, fmt.Sprintf("%T %+v", r, r))
	}
	if rs.Err() != nil {
		t.Fatal(rs.Err())
	}
	return
}

func TestRecompressedPipe(t *testing.T) {
	t.Parallel()
	orig := readFixture(t, "pipe.data")
	recs := rawRecords(t, orig[16:])
	r, err := NewReader(bytes.NewReader(orig))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	rs := r.Records(RecordsOptions{})
	for rs.Next() {
		x := rs.Record()
		if !x.Type().IsUser() {
			x.Header().Offset = 0
			want = append(want, fmt.Sprintf("%T %+v", x, x))
		}
	}
	for _, typ := range []RecordType{RecordCompressed, RecordCompressed2} {
		for seed := int64(1); seed <= 6; seed++ {
			split := seed%2 == 0
			t.Run(fmt.Sprintf("%v/%d/split=%v", typ, seed, split), func(t *testing.T) {
				z := append(bytes.Clone(orig[:16]), recompress(t, recs, typ, rand.New(rand.NewSource(seed)), split)...)
				r, err := NewReader(bytes.NewReader(z))
				if err != nil {
					t.Fatal(err)
				}
				got, _, compressed := kernelDump(t, r.Records(RecordsOptions{}))
				if compressed < 3 {
					t.Fatalf("only %d compressed records: the test would not straddle", compressed)
				}
				if len(got) != len(want) {
					t.Fatalf("%d kernel records, want %d", len(got), len(want))
				}
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("record %d:\n got %s\nwant %s", i, got[i], want[i])
					}
				}
				// Truncating inside the compressed data is an error naming
				// a compressed record's offset.
				cut := z[:len(z)-40]
				r, _ = NewReader(bytes.NewReader(cut))
				rs := r.Records(RecordsOptions{})
				for rs.Next() {
				}
				if rs.Err() == nil {
					t.Error("no error for a cut compressed stream")
				}
			})
		}
	}
}

func TestRecompressedFile(t *testing.T) {
	t.Parallel()
	orig := readFixture(t, "twoevents.data")
	f, err := NewFile(bytes.NewReader(orig), int64(len(orig)))
	if err != nil {
		t.Fatal(err)
	}
	want, _, _ := kernelDumpPlain(t, f.Records(RecordsOptions{}))
	off, size := f.DataRange()
	recs := rawRecords(t, orig[off:off+size])
	data := recompress(t, recs, RecordCompressed2, rand.New(rand.NewSource(7)), true)
	delta := int64(len(data)) - size
	// The new file: everything before the data, the new data, then the
	// feature table with its offsets moved by delta and the payloads.
	var z []byte
	z = append(z, orig[:off]...)
	z = append(z, data...)
	tail := bytes.Clone(orig[off+size:])
	n := len(f.Features().IDs())
	for i := 0; i < n; i++ {
		o := binary.LittleEndian.Uint64(tail[16*i:])
		binary.LittleEndian.PutUint64(tail[16*i:], uint64(int64(o)+delta))
	}
	z = append(z, tail...)
	binary.LittleEndian.PutUint64(z[48:], uint64(len(data)))
	zf, err := NewFile(bytes.NewReader(z), int64(len(z)))
	if err != nil {
		t.Fatal(err)
	}
	if h, err := zf.Features().Hostname(); err != nil || h == "" {
		t.Fatalf("features moved wrongly: %q %v", h, err)
	}
	for _, ordered := range []bool{false, true} {
		got, _, _ := kernelDump(t, zf.Records(RecordsOptions{Ordered: ordered}))
		if ordered {
			w, _, _ := kernelDumpPlain(t, f.Records(RecordsOptions{Ordered: true}))
			want = w
		}
		if len(got) != len(want) {
			t.Fatalf("ordered=%v: %d kernel records, want %d", ordered, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("ordered=%v: record %d:\n got %s\nwant %s", ordered, i, got[i], want[i])
			}
		}
	}
}

func kernelDumpPlain(t *testing.T, rs *Records) (dump []string, user, compressed int) {
	for rs.Next() {
		r := rs.Record()
		if r.Type().IsUser() {
			user++
			continue
		}
		h := r.Header()
		h.Offset = 0
		dump = append(dump, fmt.Sprintf("%T %+v", r, r))
	}
	if rs.Err() != nil {
		t.Fatal(rs.Err())
	}
	return
}

// TestZstdBomb: compressed data that expands far beyond what perf data
// compresses to is refused instead of decoded for gigabytes.
func TestZstdBomb(t *testing.T) {
	t.Parallel()
	orig := readFixture(t, "pipe.data")
	enc, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest))
	// 64 MiB of one record repeated compresses to a few KiB.
	rec := make([]byte, 64)
	binary.LittleEndian.PutUint32(rec, 200) // an unknown kernel type
	binary.LittleEndian.PutUint16(rec[6:], 64)
	big := bytes.Repeat(rec, 1<<20)
	z := enc.EncodeAll(big, nil)
	h := make([]byte, 16)
	binary.LittleEndian.PutUint32(h, uint32(RecordCompressed2))
	size := (16 + len(z) + 7) &^ 7
	if size > 0xffff {
		t.Fatalf("bomb of %d bytes does not fit a record", size)
	}
	binary.LittleEndian.PutUint16(h[6:], uint16(size))
	binary.LittleEndian.PutUint64(h[8:], uint64(len(z)))
	stream := append(bytes.Clone(orig[:16]), h...)
	stream = append(stream, z...)
	stream = append(stream, make([]byte, size-16-len(z))...)
	r, err := NewReader(bytes.NewReader(stream))
	if err != nil {
		t.Fatal(err)
	}
	rs := r.Records(RecordsOptions{})
	n := 0
	for rs.Next() {
		n++
	}
	if rs.Err() == nil || n >= 1<<20 || !strings.Contains(rs.Err().Error(), "expands") {
		t.Fatalf("%d records, err %v: want an error before most of the bomb", n, rs.Err())
	}
}

// TestCompressedTailClipped rebuilds a real pipe recording the way perf 6.1
// writes a large `perf record -z` file whose last COMPRESSED record was
// clipped: the zstd stream is flushed but never ended, and the
// decompressed data stops inside the last kernel record. Every whole record
// must come back, then a warning that names the dropped bytes, and no error
// (perf itself reads such files without complaint). Both ways the end can
// show are built: with the frame left open (the decoder asks for more input
// than there is) and with it closed (the partial record is left over).
func TestCompressedTailClipped(t *testing.T) {
	t.Parallel()
	orig := readFixture(t, "pipe.data")
	recs := rawRecords(t, orig[16:])
	last := -1
	for i, r := range recs {
		if RecordType(binary.LittleEndian.Uint32(r)) < recordUserStart {
			last = i
		}
	}
	if last < 0 {
		t.Fatal("no kernel record in pipe.data")
	}
	var want []string
	{
		r, err := NewReader(bytes.NewReader(orig))
		if err != nil {
			t.Fatal(err)
		}
		dump, _, _ := kernelDumpPlain(t, r.Records(RecordsOptions{}))
		want = dump[:len(dump)-1] // all but the clipped one
	}
	for _, closeFrame := range []bool{false, true} {
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
		if err != nil {
			t.Fatal(err)
		}
		var zout bytes.Buffer
		enc.Reset(&zout)
		out := bytes.Clone(orig[:16])
		for i, r := range recs {
			switch {
			case RecordType(binary.LittleEndian.Uint32(r)) >= recordUserStart:
				out = append(out, r...)
			case i == last:
				enc.Write(r[:len(r)-5])
			default:
				enc.Write(r)
			}
		}
		if closeFrame {
			enc.Close()
		} else {
			enc.Flush()
		}
		z := zout.Bytes()
		for len(z) > 0 {
			chunk := z[:min(len(z), 4000)]
			z = z[len(chunk):]
			size := (16 + len(chunk) + 7) &^ 7
			h := make([]byte, 16)
			binary.LittleEndian.PutUint32(h, uint32(RecordCompressed2))
			binary.LittleEndian.PutUint16(h[6:], uint16(size))
			binary.LittleEndian.PutUint64(h[8:], uint64(len(chunk)))
			out = append(append(out, h...), chunk...)
			out = append(out, make([]byte, size-16-len(chunk))...)
		}
		r, err := NewReader(bytes.NewReader(out))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		rs := r.Records(RecordsOptions{})
		for rs.Next() {
			x := rs.Record()
			if !x.Type().IsUser() {
				x.Header().Offset, x.Header().Compressed = 0, false
				got = append(got, fmt.Sprintf("%T %+v", x, x))
			}
		}
		if err := rs.Err(); err != nil {
			t.Fatalf("closed frame %v: %v", closeFrame, err)
		}
		if len(got) != len(want) {
			t.Fatalf("closed frame %v: %d kernel records, want %d", closeFrame, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("closed frame %v: record %d\n got %s\nwant %s", closeFrame, i, got[i], want[i])
			}
		}
		warned := false
		for _, w := range r.Warnings() {
			warned = warned || strings.Contains(w, "stops inside a record")
		}
		if !warned {
			t.Errorf("closed frame %v: no warning about the dropped bytes: %q", closeFrame, r.Warnings())
		}
	}
}
