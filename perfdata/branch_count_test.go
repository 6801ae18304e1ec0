package perfdata

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// TestBadBranchCount: a sample whose branch stack claims more entries than
// the record holds is an error at the count, found before anything of the
// claimed size is allocated (perf's evsel__parse_sample checks the same
// against the record's end).
func TestBadBranchCount(t *testing.T) {
	const limit = 1 << 20 // no case may allocate a megabyte
	t.Run("built", func(t *testing.T) {
		// Built in test code: IP, then a branch stack of two entries,
		// with hw_idx; the count is then overwritten.
		for _, o := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
			a := Attr{SampleType: SampleIP | SampleBranchStack, BranchSampleType: BranchHWIndex}
			es := &eventSet{}
			es.add(a, nil, "")
			w := &recBuilder{o: o}
			w.u64(0x401000)
			w.u64(2)          // nr
			w.u64(^uint64(0)) // hw_idx
			for i := range 2 {
				w.u64(uint64(0x1000 + i))
				w.u64(uint64(0x2000 + i))
				w.u64(0)
			}
			rec := w.record(RecordSample, uint16(CPUModeUser))
			s, err := decodeOne(t, o, es, rec)
			if err != nil || len(s.(*Sample).Branches) != 2 {
				t.Fatalf("%v: the record as built: %v", o, err)
			}
			// 3 entries need 72 bytes where 48 remain; 1<<59*24
			// overflows 64 bits.
			for _, nr := range []uint64{3, 1 << 20, 1 << 59, ^uint64(0)} {
				c := bytes.Clone(rec)
				o.PutUint64(c[16:], nr)
				var err error
				grew := allocated(func() { _, err = decodeOne(t, o, es, c) })
				if grew > limit {
					t.Errorf("%v nr %d: %d bytes allocated", o, nr, grew)
				}
				// The error is at the end of nr and hw_idx, in
				// decodeOne's record at offset 1000.
				wantErrAt(t, err, 1000+32, ErrMalformed, "branch stack of")
			}
		}
	})
	t.Run("corpus", func(t *testing.T) {
		// A real recording with branch stacks (perf 4.14, -b), its
		// first sample's count overwritten.
		fixtures.Corpus(t, "")
		b, err := os.ReadFile(filepath.Join(corpusDir, "perf.data.branch-4.14"))
		if err != nil {
			t.Fatal(err)
		}
		sigs, f := recordOffsets(t, b)
		a := f.Events()[0].Attr
		if a.SampleType != SampleIP|SampleTID|SampleTime|SamplePeriod|SampleBranchStack || a.BranchSampleType&BranchHWIndex != 0 {
			t.Fatalf("sample_type %v, branch_sample_type %#x: the offsets below assume IP, TID, TIME, PERIOD, BRANCH_STACK", a.SampleType, uint64(a.BranchSampleType))
		}
		var at int64 = -1
		for _, s := range sigs {
			if s.typ == RecordSample {
				at = s.off
				break
			}
		}
		pos := at + 8 + 4*8 // header, then ip, pid/tid, time, period
		for _, nr := range []uint64{1 << 60, 1 << 20, 3000} {
			c := bytes.Clone(b)
			binary.LittleEndian.PutUint64(c[pos:], nr)
			f, err := NewFile(bytes.NewReader(c), int64(len(c)))
			if err != nil {
				t.Fatal(err)
			}
			var got []recSig
			grew := allocated(func() { got, err = readSigs(f, RecordsOptions{}) })
			if grew > 4<<20 {
				t.Errorf("nr %d: %d bytes allocated", nr, grew)
			}
			wantErrAt(t, err, pos+8, ErrMalformed, "branch stack of")
			if !isPrefix(got, sigs) || len(got) == 0 || got[len(got)-1].off >= at {
				t.Errorf("nr %d: %d records before the bad one", nr, len(got))
			}
		}
	})
}
