package perfdata

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fuzzSeeds adds the small real recordings as seeds: the fixtures and the
// corpus files under maxSeed bytes, when present.
func fuzzSeeds(f *testing.F, pipeOnly bool) {
	const maxSeed = 64 << 10
	var paths []string
	for _, pat := range []string{rdFixtures + "/*.data", corpusDir + "/*perf.data*", corpusDir + "/modern/*.data"} {
		m, _ := filepath.Glob(pat)
		paths = append(paths, m...)
	}
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil || !st.Mode().IsRegular() || st.Size() > maxSeed || strings.HasSuffix(p, ".buildids") {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil || len(b) < 16 {
			continue
		}
		if pipeOnly && !bytes.Equal(b[8:16], []byte{16, 0, 0, 0, 0, 0, 0, 0}) {
			continue
		}
		f.Add(b)
	}
}

// checkRecords reads rs to its end and checks the iterator's contract:
// no nil record, the reuse of records is consistent, Next stays false
// after the end, and an error ends the iteration with no record.
func checkRecords(t *testing.T, rs *Records) int {
	events := rs.Events
	n := 0
	for rs.Next() {
		r := rs.Record()
		if r == nil {
			t.Fatal("Next true with a nil record")
		}
		h := r.Header()
		if h.Type() != r.Type() {
			t.Fatal("header type differs")
		}
		_ = h.CPUMode().String()
		_ = r.Type().String()
		if h.EventIndex >= len(events()) {
			t.Fatalf("event index %d of %d events", h.EventIndex, len(events()))
		}
		switch x := r.(type) {
		case *Sample:
			for m, ip := range x.Frames() {
				_, _ = m, ip
			}
			_ = x.WeightVar1() + uint32(x.WeightVar2()) + uint32(x.WeightVar3())
			for _, b := range x.Branches {
				_ = b.Cycles() + uint16(b.BranchType()) + uint16(b.Priv())
			}
		case *Mmap2:
			_ = x.BuildID.String()
		}
		n++
	}
	if rs.Record() != nil {
		t.Fatal("a record after Next returned false")
	}
	if rs.Next() {
		t.Fatal("Next true after false")
	}
	return n
}

func fuzzFeatures(t *testing.T, fs *Features) {
	if err := callAll(fs); err != nil && strings.Contains(err.Error(), "a result came with") {
		t.Fatal(err)
	}
}

// FuzzFile feeds arbitrary bytes to NewFile and reads everything.
func FuzzFile(f *testing.F) {
	fuzzSeeds(f, false)
	f.Fuzz(func(t *testing.T, data []byte) {
		pf, err := NewFile(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			if pf != nil {
				t.Fatal("error and a File")
			}
			return
		}
		_ = pf.Truncated()
		_ = pf.Warnings()
		n1 := checkRecords(t, pf.Records(RecordsOptions{}))
		rs := pf.Records(RecordsOptions{})
		for rs.Next() {
		}
		err1 := rs.Err()
		rs2 := pf.Records(RecordsOptions{Ordered: true})
		n2 := checkRecords(t, rs2)
		if err1 == nil && rs2.Err() == nil && n1 != n2 {
			t.Fatalf("file order %d records, time order %d", n1, n2)
		}
		// Decoding the samples' headers alone (perfcheck stats) reads
		// the same records and fails with the same error.
		rs3 := pf.Records(RecordsOptions{SampleHeadersOnly: true})
		n3 := checkRecords(t, rs3)
		if n3 != n1 || fmt.Sprint(rs3.Err()) != fmt.Sprint(err1) {
			t.Fatalf("SampleHeadersOnly: %d records, error %v; in full %d, %v", n3, rs3.Err(), n1, err1)
		}
		fuzzFeatures(t, pf.Features())
		if ids, err := pf.BuildIDs(); err != nil && ids != nil {
			t.Fatal("build-ids with an error")
		}
	})
}

// FuzzReader feeds arbitrary bytes to NewReader as a stream.
func FuzzReader(f *testing.F) {
	fuzzSeeds(f, false) // pipe and file-format streams
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := NewReader(bytes.NewReader(data))
		if err != nil {
			if r != nil {
				t.Fatal("error and a Reader")
			}
			return
		}
		checkRecords(t, r.Records(RecordsOptions{Ordered: len(data)%2 == 0}))
		_ = r.Warnings()
		fuzzFeatures(t, r.Features())
	})
}
