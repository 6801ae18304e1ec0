package perfdata

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"
)

// recSig is what identifies a record across two readings.
type recSig struct {
	typ RecordType
	off int64
	cmp bool
}

// readSigs reads all records of a File and returns their signatures and
// the error.
func readSigs(f *File, opts RecordsOptions) ([]recSig, error) {
	var out []recSig
	rs := f.Records(opts)
	for rs.Next() {
		h := rs.Record().Header()
		out = append(out, recSig{h.RecType, h.Offset, h.Compressed})
	}
	return out, rs.Err()
}

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(rdFixtures + "/" + name)
	if err != nil {
		t.Skipf("fixture %s absent: %v", name, err)
	}
	return b
}

func isPrefix(short, long []recSig) bool {
	if len(short) > len(long) {
		return false
	}
	for i := range short {
		if short[i] != long[i] {
			return false
		}
	}
	return true
}

// TestTruncatedEveryByte cuts a real recording at every byte: NewFile fails
// with a FormatError, or the records read are a prefix of the whole file's,
// followed, when the cut falls inside the data section, by a FormatError
// that unwraps to io.ErrUnexpectedEOF.
func TestTruncatedEveryByte(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"twoevents.data", "zstd.data"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := readFixture(t, name)
			full, err := NewFile(bytes.NewReader(b), int64(len(b)))
			if err != nil {
				t.Fatal(err)
			}
			all, err := readSigs(full, RecordsOptions{})
			if err != nil {
				t.Fatal(err)
			}
			dataOff, dataSize := full.DataRange()
			dataEnd := dataOff + dataSize
			step := 1
			if testing.Short() || raceEnabled {
				step = 7
			}
			for cut := 0; cut < len(b); cut += step {
				f, err := NewFile(bytes.NewReader(b[:cut]), int64(cut))
				if err != nil {
					var fe *FormatError
					if !errors.As(err, &fe) {
						t.Fatalf("cut %d: NewFile error %v is not a FormatError", cut, err)
					}
					if f != nil {
						t.Fatalf("cut %d: error and a File", cut)
					}
					continue
				}
				got, err := readSigs(f, RecordsOptions{})
				if !isPrefix(got, all) {
					t.Fatalf("cut %d: records are not a prefix of the file's", cut)
				}
				if int64(cut) < dataEnd {
					if !errors.Is(err, io.ErrUnexpectedEOF) {
						t.Fatalf("cut %d inside the data section: err %v, want ErrUnexpectedEOF", cut, err)
					}
					var fe *FormatError
					if !errors.As(err, &fe) || fe.Offset < dataOff || fe.Offset > int64(cut) {
						t.Fatalf("cut %d: error %v has no offset inside the data read", cut, err)
					}
				} else if err != nil || len(got) != len(all) {
					t.Fatalf("cut %d after the data: %d of %d records, err %v", cut, len(got), len(all), err)
				}
				// The ordered reader yields the same records, as a set.
				ord, oerr := readSigs(f, RecordsOptions{Ordered: true})
				if (oerr == nil) != (err == nil) || len(ord) != len(got) {
					t.Fatalf("cut %d: ordered %d records (err %v), file order %d (err %v)", cut, len(ord), oerr, len(got), err)
				}
				// Feature accessors must fail cleanly, not panic.
				f.BuildIDs()
				f.Features().Hostname()
			}
		})
	}
}

// TestTruncatedPipeEveryByte cuts a pipe stream at every byte.
func TestTruncatedPipeEveryByte(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"pipe.data", "zstd-pipe.data"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := readFixture(t, name)
			r, err := NewReader(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			var all []recSig
			var ends []int64
			rs := r.Records(RecordsOptions{})
			for rs.Next() {
				h := rs.Record().Header()
				all = append(all, recSig{h.RecType, h.Offset, h.Compressed})
				ends = append(ends, h.Offset+int64(h.Size))
			}
			if rs.Err() != nil {
				t.Fatal(rs.Err())
			}
			step := 1
			if testing.Short() || raceEnabled {
				step = 7
			}
			for cut := 0; cut < len(b); cut += step {
				r, err := NewReader(bytes.NewReader(b[:cut]))
				if err != nil {
					if cut >= pipeHeaderSize || !errors.Is(err, io.ErrUnexpectedEOF) {
						t.Fatalf("cut %d: %v", cut, err)
					}
					continue
				}
				var got []recSig
				rs := r.Records(RecordsOptions{})
				for rs.Next() {
					h := rs.Record().Header()
					got = append(got, recSig{h.RecType, h.Offset, h.Compressed})
				}
				if !isPrefix(got, all) {
					t.Fatalf("cut %d: records are not a prefix of the stream's", cut)
				}
				if err := rs.Err(); err != nil {
					if !errors.Is(err, io.ErrUnexpectedEOF) {
						t.Fatalf("cut %d: %v, want ErrUnexpectedEOF", cut, err)
					}
				} else {
					// A cut at a record boundary is a clean end of
					// stream: every record before it was read.
					n := 0
					for _, e := range ends {
						if e <= int64(cut) {
							n++
						}
					}
					if len(got) < n-1 || len(got) > n {
						t.Fatalf("cut %d: clean end after %d records, %d end before the cut", cut, len(got), n)
					}
				}
			}
		})
	}
}

// TestDataSizeZero builds, from a real recording, the file perf leaves
// when it is killed before rewriting the header: data size 0 and nothing
// after the records.
func TestDataSizeZero(t *testing.T) {
	t.Parallel()
	b := readFixture(t, "cshared-fp.data")
	full, err := NewFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	all, err := readSigs(full, RecordsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if full.Truncated() {
		t.Fatal("a complete file reported as truncated")
	}
	off, size := full.DataRange()
	killed := bytes.Clone(b[:off+size])
	binary.LittleEndian.PutUint64(killed[48:], 0)

	f, err := NewFile(bytes.NewReader(killed), int64(len(killed)))
	if err != nil {
		t.Fatal(err)
	}
	if !f.Truncated() || len(f.Warnings()) == 0 || !strings.Contains(f.Warnings()[0], "did not exit cleanly") {
		t.Errorf("Truncated %v, warnings %q", f.Truncated(), f.Warnings())
	}
	got, err := readSigs(f, RecordsOptions{})
	if err != nil || len(got) != len(all) || !isPrefix(got, all) {
		t.Errorf("recovered %d of %d records, err %v", len(got), len(all), err)
	}
	if len(f.Events()) != len(full.Events()) {
		t.Errorf("%d events, want %d", len(f.Events()), len(full.Events()))
	}
	if _, err := f.BuildIDs(); !errors.Is(err, ErrNoFeature) {
		t.Errorf("BuildIDs of a killed file: %v, want ErrNoFeature", err)
	}

	// Killed in the middle of writing the last record: everything before
	// it, a warning, no error.
	cut := killed[:len(killed)-5]
	f, err = NewFile(bytes.NewReader(cut), int64(len(cut)))
	if err != nil {
		t.Fatal(err)
	}
	got, err = readSigs(f, RecordsOptions{})
	if err != nil || len(got) != len(all)-1 {
		t.Errorf("recovered %d of %d records, err %v", len(got), len(all)-1, err)
	}
	w := f.Warnings()
	if len(w) != 2 || !strings.Contains(w[1], "cut short") {
		t.Errorf("warnings %q", w)
	}
}

// recordOffsets returns the offsets of the records of a fixture.
func recordOffsets(t *testing.T, b []byte) ([]recSig, *File) {
	f, err := NewFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	sigs, err := readSigs(f, RecordsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return sigs, f
}

func wantErrAt(t *testing.T, err error, off int64, cause error, text string) {
	t.Helper()
	var fe *FormatError
	if !errors.As(err, &fe) {
		t.Fatalf("error %v is not a FormatError", err)
	}
	if fe.Offset != off {
		t.Errorf("error %q at offset %d, want %d", err, fe.Offset, off)
	}
	if !errors.Is(err, cause) {
		t.Errorf("error %q does not wrap %v", err, cause)
	}
	if !strings.Contains(err.Error(), text) {
		t.Errorf("error %q does not say %q", err, text)
	}
}

// TestBadRecordSizes corrupts the size of real records.
func TestBadRecordSizes(t *testing.T) {
	t.Parallel()
	b := readFixture(t, "twoevents.data")
	sigs, full := recordOffsets(t, b)
	target := sigs[len(sigs)/2]
	for _, tc := range []struct {
		size  uint16
		cause error
		text  string
	}{
		{0, ErrMalformed, "size 0 is smaller than its 8-byte header"},
		{4, ErrMalformed, "size 4 is smaller"},
		{0xfff8, io.ErrUnexpectedEOF, "cut short"},
	} {
		c := bytes.Clone(b)
		// The last record, so that a large size runs past the data.
		at := target.off
		if tc.size > 8 {
			at = sigs[len(sigs)-1].off
		}
		binary.LittleEndian.PutUint16(c[at+6:], tc.size)
		f, err := NewFile(bytes.NewReader(c), int64(len(c)))
		if err != nil {
			t.Fatal(err)
		}
		got, err := readSigs(f, RecordsOptions{})
		wantErrAt(t, err, at, tc.cause, tc.text)
		if !isPrefix(got, sigs) || got[len(got)-1].off >= at {
			t.Errorf("size %d: %d records before the bad one", tc.size, len(got))
		}
	}
	_ = full
}

// TestBadCallchainCount makes a real sample's callchain claim more entries
// than the record holds.
func TestBadCallchainCount(t *testing.T) {
	b := readFixture(t, "cshared-fp.data")
	sigs, f := recordOffsets(t, b)
	a := f.Events()[0].Attr
	if a.SampleType&SampleCallchain == 0 || a.SampleType&(SampleRead) != 0 {
		t.Fatalf("fixture sample_type %#x: want a callchain without READ", a.SampleType)
	}
	var at int64 = -1
	for _, s := range sigs {
		if s.typ == RecordSample {
			at = s.off
			break
		}
	}
	// The callchain's nr follows the fixed u64 fields before it.
	pos := at + 8
	for _, bit := range []SampleType{SampleIdentifier, SampleIP, SampleTID, SampleTime, SampleAddr, SampleID, SampleStreamID, SampleCPU, SamplePeriod} {
		if a.SampleType&bit != 0 {
			pos += 8
		}
	}
	for _, nr := range []uint64{1 << 60, 1 << 20, 1000} {
		c := bytes.Clone(b)
		binary.LittleEndian.PutUint64(c[pos:], nr)
		f, err := NewFile(bytes.NewReader(c), int64(len(c)))
		if err != nil {
			t.Fatal(err)
		}
		before := allocBytes()
		_, err = readSigs(f, RecordsOptions{})
		if grew := allocBytes() - before; grew > 4<<20 {
			t.Errorf("nr %d: %d bytes allocated", nr, grew)
		}
		wantErrAt(t, err, pos+8, ErrMalformed, "callchain of")
	}
}

func allocBytes() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

// TestHostileHeader: sizes in the header that the file cannot hold are
// errors before anything of that size is allocated.
func TestHostileHeader(t *testing.T) {
	b := readFixture(t, "twoevents.data")
	for _, tc := range []struct {
		name  string
		at    int
		val   uint64
		cause error
	}{
		{"attrs size", 32, 1 << 40, ErrMalformed}, // overlaps the data section
		{"attrs offset", 24, 1 << 62, io.ErrUnexpectedEOF},
		{"attr entry size", 16, 1 << 30, ErrMalformed},
		{"data offset", 40, 1 << 62, io.ErrUnexpectedEOF},
		{"header size", 8, 200, ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := bytes.Clone(b)
			binary.LittleEndian.PutUint64(c[tc.at:], tc.val)
			before := allocBytes()
			f, err := NewFile(bytes.NewReader(c), int64(len(c)))
			if grew := allocBytes() - before; grew > 1<<20 {
				t.Errorf("%d bytes allocated", grew)
			}
			if f != nil || !errors.Is(err, tc.cause) {
				t.Fatalf("got %v, %v; want an error wrapping %v", f, err, tc.cause)
			}
		})
	}
	t.Run("data size", func(t *testing.T) {
		// A data size past the end of the file (and past any int64
		// offset): the records that are there, then truncation.
		for _, size := range []uint64{1 << 62, 1<<63 - 1, uint64(len(b))} {
			c := bytes.Clone(b)
			binary.LittleEndian.PutUint64(c[48:], size)
			f, err := NewFile(bytes.NewReader(c), int64(len(c)))
			if err != nil {
				t.Fatal(err)
			}
			if !f.Truncated() {
				t.Errorf("size %d: not reported truncated", size)
			}
			if _, err := readSigs(f, RecordsOptions{}); !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, ErrMalformed) {
				t.Errorf("size %d: %v", size, err)
			}
		}
	})
	t.Run("magic", func(t *testing.T) {
		c := bytes.Clone(b)
		copy(c, "NOTPERF!")
		_, err := NewFile(bytes.NewReader(c), int64(len(c)))
		if !errors.Is(err, ErrNotPerfData) {
			t.Fatalf("%v", err)
		}
		_, err = NewReader(bytes.NewReader(c))
		if !errors.Is(err, ErrNotPerfData) {
			t.Fatalf("%v", err)
		}
	})
	t.Run("feature offset", func(t *testing.T) {
		f, err := NewFile(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatal(err)
		}
		off, size := f.DataRange()
		c := bytes.Clone(b)
		// The first feature section entry (the lowest set bit).
		binary.LittleEndian.PutUint64(c[off+size:], 1<<62)
		f, err = NewFile(bytes.NewReader(c), int64(len(c)))
		if err != nil {
			t.Fatal(err)
		}
		var first error
		for _, id := range f.Features().IDs() {
			if _, err := f.Features().Raw(id); err != nil {
				first = err
				break
			}
		}
		var fe *FormatError
		if !errors.As(first, &fe) || fe.Offset != 1<<62 {
			t.Errorf("feature at an absurd offset: %v", first)
		}
		// The records are unaffected.
		if _, err := readSigs(f, RecordsOptions{}); err != nil {
			t.Error(err)
		}
	})
}
