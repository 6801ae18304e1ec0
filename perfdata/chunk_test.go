package perfdata

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// digestOrdered reads every record of name in time order and returns a
// digest of each (printed in full), the error text and the warnings.
// copying selects the queue that copies every record (the reference)
// over the one that keeps positions in the stream's chunks.
func digestOrdered(t *testing.T, name string, data []byte, copying bool) (sums [][32]byte, errText string, warns []string) {
	t.Helper()
	defer func(v bool) { copyQueued = v }(copyQueued)
	copyQueued = copying
	var (
		rs   *Records
		warn func() []string
	)
	switch {
	case data != nil:
		f, err := NewFile(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return nil, "open: " + err.Error(), nil
		}
		rs, warn = f.Records(RecordsOptions{Ordered: true}), f.Warnings
	case filepath.Ext(name) == ".stream":
		in, err := os.Open(name[:len(name)-len(".stream")])
		if err != nil {
			t.Fatal(err)
		}
		defer in.Close()
		r, err := NewReader(in)
		if err != nil {
			return nil, "open: " + err.Error(), nil
		}
		rs, warn = r.Records(RecordsOptions{Ordered: true}), r.Warnings
	default:
		f, err := Open(name)
		if err != nil {
			return nil, "open: " + err.Error(), nil
		}
		defer f.Close()
		rs, warn = f.Records(RecordsOptions{Ordered: true}), f.Warnings
	}
	if prefetchMin == 0 && data == nil && rs.stopPrefetch == nil && filepath.Ext(name) != ".stream" {
		t.Errorf("%s: no read-ahead", name)
	}
	for rs.Next() {
		sums = append(sums, sha256.Sum256(fmt.Appendf(nil, "%T %+v", rs.Record(), rs.Record())))
		if copying && len(rs.streams) > 0 && rs.streams[0].chunked {
			t.Fatal("the reference run uses chunks")
		}
	}
	if rs.Err() != nil {
		errText = rs.Err().Error()
	}
	return sums, errText, warn()
}

func compareOrdered(t *testing.T, name string, data []byte) {
	t.Helper()
	a, aerr, awarn := digestOrdered(t, name, data, false)
	b, berr, bwarn := digestOrdered(t, name, data, true)
	if aerr != berr || fmt.Sprint(awarn) != fmt.Sprint(bwarn) {
		t.Errorf("chunks: error %q warnings %q; copies: error %q warnings %q", aerr, awarn, berr, bwarn)
	}
	if len(a) != len(b) {
		t.Fatalf("%d records with chunks, %d with copies", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("record %d differs", i)
		}
	}
}

// TestChunkedSameOrder: the ordered queue that keeps records where the
// stream read them (in chunks it does not reuse while they are queued)
// delivers exactly the records, in exactly the order, of the queue that
// copied each, for every fixture and corpus recording, through Open and,
// for the fixtures, through NewReader.
func TestChunkedSameOrder(t *testing.T) {
	rdNeedFixtures(t)
	names := rdGlob(t, filepath.Join(rdFixtures, "*.data"))
	for _, n := range names {
		if st, err := os.Stat(n); err == nil && st.Mode().IsRegular() {
			names = append(names, n+".stream")
		}
	}
	if _, err := os.Stat(corpusDir); err == nil {
		names = append(names, corpusRecordings(t)...)
	} else {
		t.Logf("shared corpus absent: fixtures only (%v)", err)
	}
	for _, name := range names {
		t.Run(filepath.Base(name), func(t *testing.T) { compareOrdered(t, name, nil) })
	}
}

// TestChunkedSameOrderTruncated: the same on a fixture cut at many points
// (records cut short, the data section running past the end).
func TestChunkedSameOrderTruncated(t *testing.T) {
	rdNeedFixtures(t)
	for _, fx := range []string{"forkexec.data", "zstd.data", "pipe.data"} {
		full := readFixture(t, fx)
		for cut := len(full) / 17; cut < len(full); cut += len(full)/17 + 1 {
			t.Run(fmt.Sprintf("%s/%d", fx, cut), func(t *testing.T) { compareOrdered(t, fx, full[:cut]) })
		}
	}
}

// TestChunkedQueueLimit: with chunks the queue holds positions, but the
// bytes it stands for are bounded the same way: past maxQueueBytes the
// earlier half is delivered, in the order of the copying queue; and the
// chunks held stay few.
func TestChunkedQueueLimit(t *testing.T) {
	fixtures.Corpus(t, "")
	defer func(n int) { maxQueueBytes = n }(maxQueueBytes)
	maxQueueBytes = 16 << 10
	name := corpusDir + "/perf.data.callgraph-3.8"
	f, err := Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rs := f.Records(RecordsOptions{Ordered: true})
	n, maxQueued := 0, 0
	for rs.Next() {
		n++
		maxQueued = max(maxQueued, rs.oq.bytes)
		if len(rs.oq.arena) != 0 {
			t.Fatalf("record %d: %d bytes copied to the arena", n, len(rs.oq.arena))
		}
	}
	if rs.Err() != nil || n == 0 {
		t.Fatalf("%d records, err %v", n, rs.Err())
	}
	if maxQueued > 2*maxQueueBytes || maxQueued == 0 {
		t.Errorf("queue held %d bytes, limit %d", maxQueued, maxQueueBytes)
	}
	if c := len(rs.streams[0].chunks); c > 3 {
		t.Errorf("%d chunks for a %d-byte queue", c, maxQueueBytes)
	}
	compareOrdered(t, name, nil)
}

// TestPrefetchSameRecords: reading ahead on another goroutine changes
// nothing in what is delivered, for every fixture and corpus recording
// and for a fixture cut at many points (read through Open from a file).
func TestPrefetchSameRecords(t *testing.T) {
	rdNeedFixtures(t)
	names := rdGlob(t, filepath.Join(rdFixtures, "*.data"))
	if _, err := os.Stat(corpusDir); err == nil {
		corpus := corpusRecordings(t)
		if raceEnabled {
			// The race detector slows decoding tenfold (this test took
			// 160 s of the suite under it). The reader and decoder
			// goroutines hand over chunks the same way in every file;
			// the largest corpus file has the most hand-overs, and the
			// run without -race covers every file.
			largest, size := "", int64(-1)
			for _, n := range corpus {
				if st, err := os.Stat(n); err == nil && st.Size() > size {
					largest, size = n, st.Size()
				}
			}
			corpus = []string{largest}
		}
		names = append(names, corpus...)
	}
	dir := t.TempDir()
	full := readFixture(t, "forkexec.data")
	for cut := len(full) / 7; cut < len(full); cut += len(full)/7 + 1 {
		name := filepath.Join(dir, fmt.Sprintf("forkexec-%d.data", cut))
		if err := os.WriteFile(name, full[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	defer func(n int64) { prefetchMin = n }(prefetchMin)
	for _, name := range names {
		t.Run(filepath.Base(name), func(t *testing.T) {
			prefetchMin = 0
			a, aerr, awarn := digestOrdered(t, name, nil, false)
			prefetchMin = -1
			b, berr, bwarn := digestOrdered(t, name, nil, false)
			if aerr != berr || fmt.Sprint(awarn) != fmt.Sprint(bwarn) {
				t.Errorf("read ahead: error %q warnings %q; not: error %q warnings %q", aerr, awarn, berr, bwarn)
			}
			if fmt.Sprint(a) != fmt.Sprint(b) {
				t.Errorf("read ahead: %d records; not: %d, or they differ", len(a), len(b))
			}
		})
	}
}
