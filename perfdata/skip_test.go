package perfdata

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"sync/atomic"
	"testing"
)

// withoutArrays describes r for the comparison of a full and a
// SkipSampleArrays reading: a sample loses its arrays, which only the
// full reading has, and with skipping its arrays must be empty already.
func withoutArrays(t *testing.T, r Record, skipping bool) Record {
	t.Helper()
	s, ok := r.(*Sample)
	if !ok {
		return r
	}
	c := *s
	if skipping && len(c.Callchain)+len(c.Branches)+len(c.BranchCounters)+len(c.RegsUser)+len(c.RegsIntr) != 0 {
		t.Fatalf("SkipSampleArrays: sample at %d has arrays: %d ips, %d branches, %d counters, %d+%d registers",
			s.Offset, len(c.Callchain), len(c.Branches), len(c.BranchCounters), len(c.RegsUser), len(c.RegsIntr))
	}
	c.Callchain, c.Branches, c.BranchCounters, c.RegsUser, c.RegsIntr = nil, nil, nil, nil, nil
	return &c
}

// sameWithoutArrays tells whether two records, arrays left out, are
// alike: equal (reflect.DeepEqual, which answers most calls cheaply), or
// printing alike with their byte fields by checksum.
func sameWithoutArrays(a, b Record) bool {
	if reflect.DeepEqual(a, b) {
		return true
	}
	return describe(a) == describe(b)
}

// describe prints r, a sample's byte fields by checksum (printing dwarf
// stacks would make the test slow).
func describe(r Record) string {
	s, ok := r.(*Sample)
	if !ok {
		return fmt.Sprintf("%T %+v", r, r)
	}
	c := *s
	sums := fmt.Sprintf("raw %d/%08x stack %d/%08x aux %d/%08x", len(c.Raw), crc32.ChecksumIEEE(c.Raw),
		len(c.StackUser), crc32.ChecksumIEEE(c.StackUser), len(c.Aux), crc32.ChecksumIEEE(c.Aux))
	c.Raw, c.StackUser, c.Aux = nil, nil, nil
	return fmt.Sprintf("%+v %s", c, sums)
}

// chunkyReader returns at most a few hundred bytes per Read, so that
// records straddle the stream's reads and the in-place sample path must
// hand over to the general one.
type chunkyReader struct {
	r   io.Reader
	rng *rand.Rand
}

func (c *chunkyReader) Read(p []byte) (int, error) {
	n := 1 + c.rng.Intn(700)
	return c.r.Read(p[:min(len(p), n)])
}

// compareSkip reads b with and without SkipSampleArrays, as a File in
// file and in time order and as a stream cut into small reads, and fails
// unless both readings give the same records (arrays aside) and the same
// error, message and offset included.
func compareSkip(t *testing.T, name string, b []byte, seed int64) (records int, err error) {
	t.Helper()
	open := func(skip bool, mode string) *Records {
		opts := RecordsOptions{SkipSampleArrays: skip, Ordered: mode == "time order"}
		if mode == "stream" {
			r, err := NewReader(&chunkyReader{bytes.NewReader(b), rand.New(rand.NewSource(seed))})
			if err != nil {
				return nil
			}
			return r.Records(opts)
		}
		f, err := NewFile(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			return nil
		}
		return f.Records(opts)
	}
	// File order from a File and from a stream cut into small reads
	// (the in-place path and its hand-over), and time order (the
	// general path, through the queue). The two readings go in step.
	for _, mode := range []string{"file", "stream", "time order"} {
		full, skip := open(false, mode), open(true, mode)
		if full == nil || skip == nil {
			if (full == nil) != (skip == nil) {
				t.Fatalf("%s (%s): opened only with SkipSampleArrays %v", name, mode, skip != nil)
			}
			continue
		}
		n := 0
		for {
			nf, ns := full.Next(), skip.Next()
			if nf != ns {
				t.Fatalf("%s (%s): %d records, with SkipSampleArrays %d", name, mode, n+count(full, nf), n+count(skip, ns))
			}
			if !nf {
				break
			}
			a, b := withoutArrays(t, full.Record(), false), withoutArrays(t, skip.Record(), true)
			if !sameWithoutArrays(a, b) {
				t.Fatalf("%s (%s): record %d differs:\n%s\nwith SkipSampleArrays:\n%s", name, mode, n, describe(a), describe(b))
			}
			n++
		}
		if fmt.Sprint(full.Err()) != fmt.Sprint(skip.Err()) {
			t.Fatalf("%s (%s): error %v, with SkipSampleArrays %v", name, mode, full.Err(), skip.Err())
		}
		if mode == "file" {
			records, err = n, full.Err()
		}
	}
	return records, err
}

// TestSkipSampleArraysSame: reading with SkipSampleArrays gives the same
// records, arrays aside, and the same errors as full decoding, on every
// fixture and corpus recording (both byte orders: the corpus has
// big-endian files) and on damaged copies of the fixtures made here: cut at many
// places, record sizes and sample counts overwritten, bytes flipped at
// random (seeded) in the data section.
func TestSkipSampleArraysSame(t *testing.T) {
	t.Parallel()
	paths := rdGlob(t, rdFixtures+"/*.data")
	if _, err := os.Stat(corpusDir); err == nil {
		paths = append(paths, corpusDataFiles(t)...)
	} else {
		t.Logf("corpus %s absent: reading the fixtures only", corpusDir)
	}
	var samples atomic.Int64
	t.Cleanup(func() {
		if samples.Load() == 0 {
			t.Error("no uncompressed samples were damaged: the test checked nothing of the sample path")
		}
	})
	for _, path := range paths {
		st, err := os.Stat(path)
		if err != nil || !st.Mode().IsRegular() {
			continue // the directory form: its files are fixtures of their own
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		fixture := filepath.Dir(path) == filepath.Clean(rdFixtures)
		t.Run(filepath.Base(path), func(t *testing.T) {
			t.Parallel()
			compareSkip(t, "whole", b, 1)
			if !fixture {
				// The corpus files are read whole only; damaging
				// the small fixtures recorded here covers every
				// path (pipe, zstd, two events, dwarf stacks) in
				// seconds.
				return
			}
			f, err := NewFile(bytes.NewReader(b), int64(len(b)))
			if err != nil {
				return
			}
			rng := rand.New(rand.NewSource(int64(len(b))))
			off, size := f.DataRange()
			end := min(off+size, int64(len(b)))
			// Sample records and where their variable part starts.
			var at []int64
			rs := f.Records(RecordsOptions{})
			for rs.Next() {
				if h := rs.Record().Header(); h.RecType == RecordSample && !h.Compressed {
					at = append(at, h.Offset)
				}
			}
			samples.Add(int64(len(at)))
			trials := 60
			if testing.Short() {
				trials = 15
			}
			for i := range trials {
				c := bytes.Clone(b)
				what := ""
				switch k := i % 4; {
				case k == 0 && end > off:
					cut := off + rng.Int63n(end-off)
					c = c[:cut]
					what = fmt.Sprintf("cut at %d", cut)
				case k == 1 && len(at) > 0:
					// A sample's size, or a u64 in its variable part
					// (a callchain or branch count, a register ABI).
					s := at[rng.Intn(len(at))]
					sz := int64(f.ByteOrder().Uint16(c[s+6:]))
					if rng.Intn(2) == 0 {
						v := uint16(rng.Intn(int(sz) + 64))
						f.ByteOrder().PutUint16(c[s+6:], v)
						what = fmt.Sprintf("sample at %d: size %d", s, v)
					} else if sz >= 16 {
						p := s + 8 + 8*rng.Int63n((sz-8)/8)
						v := []uint64{0, 1, 3, 200, 1 << 20, 1 << 62}[rng.Intn(6)]
						f.ByteOrder().PutUint64(c[p:], v)
						what = fmt.Sprintf("u64 at %d = %d", p, v)
					}
				case end > off:
					for range 1 + rng.Intn(4) {
						p := off + rng.Int63n(end-off)
						c[p] ^= byte(1 + rng.Intn(255))
					}
					what = "bytes flipped"
				}
				compareSkip(t, what, c, int64(i))
			}
		})
	}
}

// TestSkipSampleArraysBoundary: a recording whose records straddle the
// stream's reads (as they do every 256 KiB in a large file) reads the same
// with SkipSampleArrays, including a sample cut at the very end.
func TestSkipSampleArraysBoundary(t *testing.T) {
	t.Parallel()
	b := readFixture(t, "cshared-fp.data")
	for seed := range int64(20) {
		compareSkip(t, fmt.Sprintf("seed %d", seed), b, seed)
	}
	f, err := NewFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	off, size := f.DataRange()
	_, err = compareSkip(t, "cut in the last record", b[:off+size-3], 7)
	if err == nil {
		t.Fatal("no error for a file cut 3 bytes before the end of its data")
	}
}

// TestResetSampleEveryField: resetSample, which clears a reused Sample
// field by field, clears every field after the header, so that no value
// of the previous sample shows through in the next (a field added to
// Sample and forgotten there fails this test).
func TestResetSampleEveryField(t *testing.T) {
	t.Parallel()
	var s Sample
	v := reflect.ValueOf(&s).Elem()
	for i := range v.NumField() {
		if v.Type().Field(i).Name != "RecordHeader" {
			setNonZero(v.Field(i))
		}
	}
	s.RecordHeader = RecordHeader{RecType: RecordSample, Offset: 99, EventIndex: 1}
	hdr := s.RecordHeader
	resetSample(&s, SampleIP|SampleCallchain)
	if s.RecordHeader != hdr {
		t.Errorf("header changed: %+v", s.RecordHeader)
	}
	if s.Fields != SampleIP|SampleCallchain || s.BranchHWIndex != -1 {
		t.Errorf("Fields %v, BranchHWIndex %d", s.Fields, s.BranchHWIndex)
	}
	for i := range v.NumField() {
		switch name := v.Type().Field(i).Name; name {
		case "RecordHeader", "Fields", "BranchHWIndex":
		default:
			if !zeroish(v.Field(i)) {
				t.Errorf("%s not cleared: %v", name, v.Field(i))
			}
		}
	}
	if cap(s.Read.Values) == 0 {
		t.Error("the slices' storage was not kept for reuse")
	}
	// The callchain may have been a record's own bytes (u64sView): it is
	// dropped, never kept to append into; its decoding buffer is the
	// parser's (TestSteadyStateAllocs shows it is reused).
	if s.Callchain != nil {
		t.Errorf("Callchain kept after reset: len %d cap %d", len(s.Callchain), cap(s.Callchain))
	}
}

// setNonZero gives v and everything in it a non-zero value.
func setNonZero(v reflect.Value) {
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.String:
		v.SetString("x")
	case reflect.Float32, reflect.Float64:
		v.SetFloat(7)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		setNonZero(v.Index(0))
	case reflect.Array:
		for i := range v.Len() {
			setNonZero(v.Index(i))
		}
	case reflect.Struct:
		for i := range v.NumField() {
			setNonZero(v.Field(i))
		}
	default:
		panic("setNonZero: kind " + v.Kind().String())
	}
}

// zeroish reports whether v is zero, slices counting as zero when empty.
func zeroish(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Slice:
		return v.Len() == 0
	case reflect.Struct:
		for i := range v.NumField() {
			if !zeroish(v.Field(i)) {
				return false
			}
		}
		return true
	}
	return v.IsZero()
}
