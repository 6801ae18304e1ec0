package perfdata

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"math"
	"math/rand"
	"reflect"
	"slices"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStashedRecordOrdered: a kernel record written uncompressed in
// the middle of a zstd block (the decoder reads past it, zfeeder stashes a
// copy) must be delivered with its own bytes by the ordered reader too.
// A stash that kept the stream's stable/chunk/bufAt from nextOuter would
// make the ordered queue refer to a chunk position that the stream may
// have compacted in place (nextChunk) before the record was pushed.
func TestStashedRecordOrdered(t *testing.T) {
	t.Parallel()
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

	// Each reading's records as a multiset of digests; printing 600,000
	// records to compare them would take most of the test's time.
	digests := func(ordered bool) []uint64 {
		r, err := NewReader(bytes.NewReader(out))
		require.NoError(t, err)
		rs := r.Records(RecordsOptions{Ordered: ordered})
		var d []uint64
		for rs.Next() {
			x := rs.Record()
			if x.Type().IsUser() {
				continue
			}
			h := x.Header()
			h.Offset, h.Compressed = 0, false
			d = append(d, recordDigest(x))
		}
		require.NoError(t, rs.Err(), "ordered=%v", ordered)
		slices.Sort(d)
		return d
	}
	plain, ord := digests(false), digests(true)
	require.Len(t, ord, len(plain), "records in order and unordered")
	bad := 0
	for i := range plain {
		if plain[i] != ord[i] {
			bad++
		}
	}
	assert.Zero(t, bad, "of %d records, digests differ at %d places of the sorted lists", len(plain), bad)
	t.Logf("%d bytes, %d kernel records", len(out), len(plain))
}

// recordDigest hashes every field of r, as "%T %+v" would print them
// (types, numbers, strings, the bytes of slices), without fmt's cost.
func recordDigest(r Record) uint64 {
	var h maphash.Hash
	h.SetSeed(digestSeed)
	v := reflect.ValueOf(r)
	h.WriteString(v.Type().String())
	digestValue(&h, v)
	return h.Sum64()
}

var digestSeed = maphash.MakeSeed()

func digestValue(h *maphash.Hash, v reflect.Value) {
	var b [8]byte
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			h.WriteByte(0)
			return
		}
		h.WriteByte(1)
		digestValue(h, v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			digestValue(h, v.Field(i))
		}
	case reflect.Slice, reflect.Array:
		binary.LittleEndian.PutUint64(b[:], uint64(v.Len()))
		h.Write(b[:])
		if v.Type().Elem().Kind() == reflect.Uint8 && v.Kind() == reflect.Slice {
			h.Write(v.Bytes())
			return
		}
		for i := range v.Len() {
			digestValue(h, v.Index(i))
		}
	case reflect.String:
		binary.LittleEndian.PutUint64(b[:], uint64(v.Len()))
		h.Write(b[:])
		h.WriteString(v.String())
	case reflect.Bool:
		if v.Bool() {
			h.WriteByte(1)
		} else {
			h.WriteByte(0)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		binary.LittleEndian.PutUint64(b[:], uint64(v.Int()))
		h.Write(b[:])
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		binary.LittleEndian.PutUint64(b[:], v.Uint())
		h.Write(b[:])
	case reflect.Float32, reflect.Float64:
		binary.LittleEndian.PutUint64(b[:], math.Float64bits(v.Float()))
		h.Write(b[:])
	default:
		// A field kind records do not have yet (map, func, chan): the
		// digest must learn it before it can vouch for it.
		panic("recordDigest: field of kind " + v.Kind().String())
	}
}
