package perfdata

import (
	"bytes"
	"encoding/binary"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestSteadyStateAllocs: decoding records allocates nothing per record
// once the reused structs and buffers have grown. Each recording is read
// whole (open included) twice over: once as it is, with N kernel records,
// and once with each round's kernel records repeated, 2N records. Both
// passes must make the same number of allocations give or take a small
// constant (the ordered queue growing a few more times), whatever N is;
// one allocation per record, or per ten, would show as N or N/10 more.
// Mallocs is counted over the whole pass because testing.AllocsPerRun
// rounds down to whole allocations per call (0.9 per record reads as 0).
//
// The doubled inputs are built here from the real recordings: a file's
// data section is replaced (its feature table moved after it, as
// TestRecompressedFile does), a pipe stream's records are appended to;
// compressed recordings are decompressed and recompressed the way perf
// record -z writes them, both the N and the 2N version, so that the two
// differ only in their number of records.
func TestSteadyStateAllocs(t *testing.T) {
	var paths []string
	for _, p := range rdGlob(t, rdFixtures+"/*.data") {
		// The directory form (threads.data) is merged from several
		// streams; its files are ordinary file-format recordings.
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			paths = append(paths, p)
		}
	}
	if _, err := os.Stat(corpusDir); err == nil {
		paths = append(paths, corpusDir+"/with-callchain.perf.data", corpusDir+"/modern/fibo.compressed2.pipe.data",
			corpusDir+"/perf.data.callgraph_and_branch-3.8", corpusDir+"/perf.data.branch_stack_hw_index")
	} else {
		t.Logf("corpus %s absent: reading the fixtures only", corpusDir)
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			single, double, n := doubledRecording(t, b)
			if n < 50 {
				t.Fatalf("only %d kernel records: too few to see a per-record allocation", n)
			}
			// SampleHeadersOnly (perfcheck stats) takes the in-place path
			// for samples: it must not allocate either.
			for _, opts := range []RecordsOptions{{}, {Ordered: true}, {SampleHeadersOnly: true}} {
				ordered := opts.Ordered
				m1, r1 := passMallocs(t, single, opts)
				m2, r2 := passMallocs(t, double, opts)
				if r2-r1 != n {
					t.Fatalf("%+v: %d and %d records read, want %d more", opts, r1, r2, n)
				}
				t.Logf("%+v: %d records: %d allocations; %d records: %d", opts, r1, m1, r2, m2)
				// In file order nothing grows. In time order the
				// queue holds rounds twice as long, and its items and
				// arena grow a few more times (a file without
				// FINISHED_ROUND, such as with-callchain.perf.data, is
				// one round).
				slack := uint64(2)
				if ordered {
					// The queue's growth steps, and a margin for what
					// the runtime allocates beside the pass on a busy
					// machine; an allocation per record, or even per
					// 64, is still far past it.
					slack = 16 + uint64(n)/64
				}
				if m2 > m1+slack {
					t.Errorf("%+v: %d more records cost %d more allocations", opts, n, int64(m2)-int64(m1))
				}
			}
		})
	}
}

// passMallocs opens a recording held in memory and reads every record,
// returning the allocations made and the number of records.
func passMallocs(t *testing.T, b []byte, opts RecordsOptions) (mallocs uint64, records int) {
	t.Helper()
	// The least of five passes: the runtime and the testing package
	// allocate now and then on their own.
	mallocs = ^uint64(0)
	for range 5 {
		m, n := passMallocsOnce(t, b, opts)
		mallocs, records = min(mallocs, m), n
	}
	return mallocs, records
}

func passMallocsOnce(t *testing.T, b []byte, opts RecordsOptions) (mallocs uint64, records int) {
	pipe := binary.LittleEndian.Uint64(b[8:]) == pipeHeaderSize || binary.BigEndian.Uint64(b[8:]) == pipeHeaderSize
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var rs *Records
	if pipe {
		r, err := NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		rs = r.Records(opts)
	} else {
		f, err := NewFile(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatal(err)
		}
		rs = f.Records(opts)
	}
	for rs.Next() {
		// COMPRESSED records are not counted: recompressing cuts the
		// zstd stream into a number of them of its own choosing.
		if typ := rs.Record().Type(); typ != RecordCompressed && typ != RecordCompressed2 {
			records++
		}
	}
	runtime.ReadMemStats(&after)
	if rs.Err() != nil {
		t.Fatal(rs.Err())
	}
	return after.Mallocs - before.Mallocs, records
}

// doubledRecording returns the recording b rebuilt with its records (the
// N version) and with its kernel records and rounds repeated (the 2N
// version), and N, the number of records added.
func doubledRecording(t *testing.T, b []byte) (single, double []byte, n int) {
	t.Helper()
	if binary.LittleEndian.Uint64(b[8:]) > 1<<16 {
		t.Skip("big-endian recording") // recompress writes little-endian
	}
	pipe := binary.LittleEndian.Uint64(b[8:]) == pipeHeaderSize
	// The records as they come, compressed ones expanded.
	var flat [][]byte
	var ztype RecordType
	var rs *Records
	var f *File
	if pipe {
		r, err := NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		rs = r.Records(RecordsOptions{})
	} else {
		var err error
		f, err = NewFile(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatal(err)
		}
		rs = f.Records(RecordsOptions{})
	}
	for {
		raw, err := rs.nextRaw()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if raw.extraSize > 0 {
			t.Skipf("%v record with a payload after it", raw.typ)
		}
		if raw.typ == RecordCompressed || raw.typ == RecordCompressed2 {
			ztype = raw.typ
			continue
		}
		flat = append(flat, bytes.Clone(raw.data))
	}
	// Each round's kernel records are repeated before the FINISHED_ROUND
	// that ends it, so that timestamps never go back across rounds and
	// the ordered queue holds twice a round, not the whole file.
	var more, round [][]byte
	for _, r := range flat {
		typ := RecordType(binary.LittleEndian.Uint32(r))
		if typ == RecordFinishedRound {
			more = append(more, round...)
			n += len(round)
			round = round[:0]
		}
		more = append(more, r)
		if !typ.IsUser() {
			round = append(round, r)
		}
	}
	more = append(more, round...)
	n += len(round)
	encode := func(recs [][]byte) []byte {
		if ztype != 0 {
			return recompress(t, recs, ztype, rand.New(rand.NewSource(1)), false)
		}
		return bytes.Join(recs, nil)
	}
	return withData(t, b, f, encode(flat)), withData(t, b, f, encode(more)), n
}

// withData returns the recording b with its records replaced by data: after
// the 16-byte header of a pipe stream; as the data section of a file (f),
// the feature table that follows it moved by the change in size.
func withData(t *testing.T, b []byte, f *File, data []byte) []byte {
	if f == nil {
		return append(bytes.Clone(b[:pipeHeaderSize]), data...)
	}
	off, size := f.DataRange()
	if off+size > int64(len(b)) {
		t.Fatalf("data section [%d,+%d) past the end of the file", off, size)
	}
	delta := int64(len(data)) - size
	out := append(bytes.Clone(b[:off]), data...)
	tail := bytes.Clone(b[off+size:])
	for i := range f.Features().IDs() {
		o := binary.LittleEndian.Uint64(tail[16*i:])
		binary.LittleEndian.PutUint64(tail[16*i:], uint64(int64(o)+delta))
	}
	out = append(out, tail...)
	binary.LittleEndian.PutUint64(out[48:], uint64(len(data)))
	return out
}
