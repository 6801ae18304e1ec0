package perfdata

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// TestStashedRecordOrdered: a kernel record written uncompressed in
// the middle of a zstd block (the decoder reads past it, zfeeder stashes a
// copy) must be delivered with its own bytes by the ordered reader too.
// A stash that kept the stream's stable/chunk/bufAt from nextOuter would
// make the ordered queue refer to a chunk position that the stream may
// have compacted in place (nextChunk) before the record was pushed.
func TestStashedRecordOrdered(t *testing.T) {
	orig := readFixture(t, "pipe.data")
	recs := rawRecords(t, orig[16:])
	var prefix, kernel [][]byte
	var sample []byte
	for _, r := range recs {
		typ := RecordType(binary.LittleEndian.Uint32(r))
		if typ >= recordUserStart {
			if len(kernel) == 0 {
				prefix = append(prefix, r)
			}
			continue
		}
		kernel = append(kernel, r)
		if typ == RecordSample && sample == nil {
			sample = r
		}
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(1))
	var zout bytes.Buffer
	enc.Reset(&zout)
	out := bytes.Clone(orig[:16])
	for _, r := range prefix {
		out = append(out, r...)
	}
	var carry []byte
	put := func(chunk []byte) {
		h := make([]byte, 8)
		binary.LittleEndian.PutUint32(h, uint32(RecordCompressed))
		binary.LittleEndian.PutUint16(h[6:], uint16(8+len(chunk)))
		out = append(append(out, h...), chunk...)
	}
	emit := func(split bool) {
		z := append(carry, zout.Bytes()...)
		carry = nil
		zout.Reset()
		if split && len(z) > 1 {
			k := 1 + rng.Intn(len(z)-1)
			carry = bytes.Clone(z[k:])
			z = z[:k]
		}
		for len(z) > 0 {
			n := min(len(z), 1+rng.Intn(3000))
			put(z[:n])
			z = z[n:]
		}
		if split {
			out = append(out, sample...) // uncompressed, inside the block
			fr := make([]byte, 8)
			binary.LittleEndian.PutUint32(fr, uint32(RecordFinishedRound))
			binary.LittleEndian.PutUint16(fr[6:], 8)
			out = append(out, fr...)
		}
	}
	for len(out) < 4<<20 {
		for i, r := range kernel {
			enc.Write(r)
			if i%7 == 6 {
				enc.Flush()
				emit(true)
			}
		}
	}
	enc.Close()
	emit(false)

	dump := func(ordered bool) []string {
		r, err := NewReader(bytes.NewReader(out))
		if err != nil {
			t.Fatal(err)
		}
		rs := r.Records(RecordsOptions{Ordered: ordered})
		var d []string
		for rs.Next() {
			x := rs.Record()
			if x.Type().IsUser() {
				continue
			}
			h := x.Header()
			h.Offset, h.Compressed = 0, false
			d = append(d, fmt.Sprintf("%T %+v", x, x))
		}
		if rs.Err() != nil {
			t.Fatalf("ordered=%v: %v", ordered, rs.Err())
		}
		slices.Sort(d)
		return d
	}
	plain, ord := dump(false), dump(true)
	if len(plain) != len(ord) {
		t.Fatalf("%d records in order, %d unordered", len(ord), len(plain))
	}
	bad := 0
	for i := range plain {
		if plain[i] != ord[i] {
			if bad < 3 {
				t.Errorf("record %d:\n ordered   %.300s\n unordered %.300s", i, ord[i], plain[i])
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d records differ", bad, len(plain))
	}
	t.Logf("%d bytes, %d kernel records", len(out), len(plain))
}
