package perfdata

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math/bits"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"sync/atomic"
	"testing"
)

// headerOnly describes r for the comparison of a full and a
// SampleHeadersOnly reading: a sample keeps its header and Fields, which
// is all the header-only reading decodes; with headersOnly, the rest must
// be as for a sample of no fields already (zero, BranchHWIndex -1).
func headerOnly(t *testing.T, r Record, headersOnly bool) Record {
	t.Helper()
	s, ok := r.(*Sample)
	if !ok {
		return r
	}
	c := &Sample{RecordHeader: s.RecordHeader, Fields: s.Fields, BranchHWIndex: -1}
	if headersOnly && !sameRecords(c, s) {
		t.Fatalf("SampleHeadersOnly: sample at %d has fields past its header: %s", s.Offset, describe(s))
	}
	return c
}

// sameRecords tells whether two records are alike: equal
// (reflect.DeepEqual, which answers most calls cheaply), or printing alike
// with their byte fields by checksum (empty and nil slices alike).
func sameRecords(a, b Record) bool {
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

// compareHeaders reads b with and without SampleHeadersOnly, as a File in
// file and in time order and as a stream cut into small reads, and fails
// unless both readings give the same records (of samples, the headers)
// and the same error, message and offset included.
func compareHeaders(t *testing.T, name string, b []byte, seed int64) (records int, err error) {
	t.Helper()
	open := func(headersOnly bool, mode string) *Records {
		opts := RecordsOptions{SampleHeadersOnly: headersOnly, Ordered: mode == "time order"}
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
		full, headers := open(false, mode), open(true, mode)
		if full == nil || headers == nil {
			if (full == nil) != (headers == nil) {
				t.Fatalf("%s (%s): opened only with SampleHeadersOnly %v", name, mode, headers != nil)
			}
			continue
		}
		n := 0
		for {
			nf, nh := full.Next(), headers.Next()
			if nf != nh {
				t.Fatalf("%s (%s): %d records, with SampleHeadersOnly %d", name, mode, n+count(full, nf), n+count(headers, nh))
			}
			if !nf {
				break
			}
			a, b := headerOnly(t, full.Record(), false), headerOnly(t, headers.Record(), true)
			if !sameRecords(a, b) {
				t.Fatalf("%s (%s): record %d differs:\n%s\nwith SampleHeadersOnly:\n%s", name, mode, n, describe(a), describe(b))
			}
			n++
		}
		if fmt.Sprint(full.Err()) != fmt.Sprint(headers.Err()) {
			t.Fatalf("%s (%s): error %v, with SampleHeadersOnly %v", name, mode, full.Err(), headers.Err())
		}
		if mode == "file" {
			records, err = n, full.Err()
		}
	}
	return records, err
}

// TestSampleHeadersOnlySame: reading with SampleHeadersOnly gives the same
// records, of samples the headers, and the same errors as full decoding, on every
// fixture and corpus recording (both byte orders: the corpus has
// big-endian files) and on damaged copies of the fixtures made here: cut at many
// places, record sizes and sample counts overwritten, bytes flipped at
// random (seeded) in the data section.
func TestSampleHeadersOnlySame(t *testing.T) {
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
			compareHeaders(t, "whole", b, 1)
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
				compareHeaders(t, what, c, int64(i))
			}
		})
	}
}

// TestSampleHeadersOnlyBoundary: a recording whose records straddle the
// stream's reads (as they do every 256 KiB in a large file) reads the same
// with SampleHeadersOnly, including a sample cut at the very end.
func TestSampleHeadersOnlyBoundary(t *testing.T) {
	t.Parallel()
	b := readFixture(t, "cshared-fp.data")
	for seed := range int64(20) {
		compareHeaders(t, fmt.Sprintf("seed %d", seed), b, seed)
	}
	f, err := NewFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	off, size := f.DataRange()
	_, err = compareHeaders(t, "cut in the last record", b[:off+size-3], 7)
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

// TestSampleFitsAgrees: sampleFits, and the in-place decoding of a
// sample's header (decodeSampleHeader, which checks the common layouts
// itself), accept exactly the little-endian SAMPLE payloads that
// decodeSample decodes without an error, and give the same header, for
// random layouts of every sample_type bit, read_format,
// branch_sample_type and register mask, on payloads built to hold each
// field (a count, a length, a register ABI) with a value near what fits,
// then cut or extended at random. The fixtures and corpus hold only the
// layouts perf and simpleperf wrote; this covers the others (AUX,
// weights, cgroups…). (Big-endian input takes the general path, which
// decodes samples whole: TestSampleHeadersOnlySame reads the corpus's
// big-endian files.)
func TestSampleFitsAgrees(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewSource(1))
	var accepted, refused int
	for i := range 200000 {
		a := Attr{
			SampleType:       SampleType(rng.Int63n(int64(sampleTypeMax))),
			ReadFormat:       ReadFormat(rng.Intn(32)),
			BranchSampleType: uint64(rng.Intn(2))*BranchHWIndex | uint64(rng.Intn(2))*BranchCounters,
			SampleRegsUser:   uint64(rng.Int63n(1 << 8)),
			SampleRegsIntr:   uint64(rng.Int63n(1 << 8)),
		}
		switch i % 8 {
		case 0:
			a.SampleType |= sampleTypeMax << uint(rng.Intn(3)) // unknown bits
		case 1, 2, 3:
			a.SampleType &= sampleFixed | SampleCallchain // the layouts checked inline
		}
		b := samplePayload(rng, &a)
		for _, n := range []int{len(b), rng.Intn(len(b) + 1), len(b) + rng.Intn(16)} {
			p := make([]byte, 8, 8+n)
			binary.LittleEndian.PutUint32(p, uint32(RecordSample))
			binary.LittleEndian.PutUint16(p[6:], uint16(8+n))
			p = append(p, b[:min(n, len(b))]...)
			p = append(p, make([]byte, max(0, n-len(b)))...)
			d := newDecoder(p, 0, binary.LittleEndian, "SAMPLE record")
			d.skip(8)
			var full Sample
			var chain []uint64
			decodeSample(&d, &a, &full, &chain)
			if a.SampleType >= sampleTypeMax {
				d.err = errCount // decodeSampleRecord refuses these first
			}
			what := func() string {
				return fmt.Sprintf("sample_type %#x read_format %#x branch %#x regs %#x/%#x, %d bytes",
					a.SampleType, a.ReadFormat, a.BranchSampleType, a.SampleRegsUser, a.SampleRegsIntr, n)
			}
			fits := sampleFits(p[8:], &a)
			if fits != (d.err == nil) {
				t.Fatalf("%s: sampleFits %v, decodeSample error %v", what(), fits, d.err)
			}
			var ps parser
			ps.little, ps.order = true, binary.LittleEndian
			ps.events = &eventSet{}
			ps.events.add(a, nil, "")
			if got := ps.decodeSampleHeader(p, 99, false, 0); got != fits {
				t.Fatalf("%s: decodeSampleHeader %v, sampleFits %v", what(), got, fits)
			}
			if fits && ps.sample.SampleID != full.SampleID {
				t.Fatalf("%s: SampleID %+v, decoded whole %+v", what(), ps.sample.SampleID, full.SampleID)
			}
			if fits {
				accepted++
			} else {
				refused++
			}
		}
	}
	t.Logf("%d payloads accepted, %d refused", accepted, refused)
	if accepted < 1000 || refused < 1000 {
		t.Fatalf("%d accepted, %d refused: the payloads do not cover both answers", accepted, refused)
	}
}

// samplePayload builds a SAMPLE payload for a's layout in which every
// count and length is near what the payload built so far can hold.
func samplePayload(rng *rand.Rand, a *Attr) []byte {
	le := binary.LittleEndian
	var b []byte
	u64 := func(v uint64) { b = le.AppendUint64(b, v) }
	count := func() uint64 { return uint64(rng.Intn(6)) }
	st := a.SampleType
	for range bits.OnesCount64(uint64(st & sampleFixed)) {
		u64(rng.Uint64())
	}
	if st&SampleRead != 0 {
		rf := a.ReadFormat
		nr, per := uint64(1), 1
		if rf&FormatID != 0 {
			per++
		}
		if rf&FormatLost != 0 {
			per++
		}
		if rf&FormatGroup != 0 {
			nr = count()
			u64(nr)
		}
		for range bits.OnesCount64(uint64(rf & (FormatTotalTimeEnabled | FormatTotalTimeRunning))) {
			u64(1)
		}
		b = append(b, make([]byte, int(nr)*per*8)...)
	}
	if st&SampleCallchain != 0 {
		nr := count()
		u64(nr)
		b = append(b, make([]byte, nr*8)...)
	}
	if st&SampleRaw != 0 {
		n := uint32(rng.Intn(20))
		b = le.AppendUint32(b, n)
		b = append(b, make([]byte, n)...)
	}
	if st&SampleBranchStack != 0 {
		nr := count()
		u64(nr)
		if a.BranchSampleType&BranchHWIndex != 0 {
			u64(3)
		}
		per := uint64(24)
		if a.BranchSampleType&BranchCounters != 0 {
			per += 8
		}
		b = append(b, make([]byte, nr*per)...)
	}
	regs := func(mask uint64) {
		abi := uint64(rng.Intn(3))
		u64(abi)
		if abi != 0 {
			b = append(b, make([]byte, 8*bits.OnesCount64(mask))...)
		}
	}
	if st&SampleRegsUser != 0 {
		regs(a.SampleRegsUser)
	}
	if st&SampleStackUser != 0 {
		n := uint64(rng.Intn(3)) * 8
		u64(n)
		if n != 0 {
			b = append(b, make([]byte, n)...)
			u64(n)
		}
	}
	for range bits.OnesCount64(uint64(st & (SampleWeight | SampleWeightStruct | SampleDataSrc | SampleTransaction))) {
		u64(0)
	}
	if st&SampleRegsIntr != 0 {
		regs(a.SampleRegsIntr)
	}
	for range bits.OnesCount64(uint64(st & (SamplePhysAddr | SampleCgroup | SampleDataPageSize | SampleCodePageSize))) {
		u64(0)
	}
	if st&SampleAux != 0 {
		n := uint64(rng.Intn(20))
		u64(n)
		b = append(b, make([]byte, n)...)
	}
	// A count or length overwritten now and then: past what fits, or
	// huge, so that the bounds are met from both sides.
	if len(b) >= 8 && rng.Intn(4) == 0 {
		at := 8 * rng.Intn(len(b)/8)
		le.PutUint64(b[at:], []uint64{0, 1, 7, 1 << 20, 1 << 61, ^uint64(0)}[rng.Intn(6)])
	}
	return b
}
