package perfdata

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// orderedReading is one time-ordered iteration over a recording, with
// its own File or Reader so that warnings are its own.
type orderedReading struct {
	rs      *Records
	warn    func() []string
	openErr string // set when the recording did not open (rs is nil)
}

// openOrdered starts a time-ordered reading of name (of data when it is
// not nil; through NewReader when name ends in ".stream") with tune.
func openOrdered(t *testing.T, name string, data []byte, tune readTuning) orderedReading {
	t.Helper()
	opts := RecordsOptions{Ordered: true, tune: tune}
	switch {
	case data != nil:
		f, err := NewFile(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return orderedReading{openErr: "open: " + err.Error()}
		}
		return orderedReading{rs: f.Records(opts), warn: f.Warnings}
	case filepath.Ext(name) == ".stream":
		in, err := os.Open(strings.TrimSuffix(name, ".stream"))
		require.NoError(t, err)
		t.Cleanup(func() { in.Close() })
		r, err := NewReader(in)
		if err != nil {
			return orderedReading{openErr: "open: " + err.Error()}
		}
		return orderedReading{rs: r.Records(opts), warn: r.Warnings}
	default:
		f, err := Open(name)
		if err != nil {
			return orderedReading{openErr: "open: " + err.Error()}
		}
		t.Cleanup(func() { f.Close() })
		return orderedReading{rs: f.Records(opts), warn: f.Warnings}
	}
}

// sameRecord tells whether two records print alike ("%T %+v"), which is
// what the readings must agree on; reflect.DeepEqual, which implies it
// for records (they hold no pointers), answers most calls without the
// cost of printing.
func sameRecord(a, b Record) bool {
	return reflect.DeepEqual(a, b) || fmt.Sprintf("%T %+v", a, a) == fmt.Sprintf("%T %+v", b, b)
}

// compareReadings reads a and b in step and fails unless they deliver the
// same records, in the same order, with the same error and warnings.
// check, when not nil, is called on each after every record.
func compareReadings(t *testing.T, what [2]string, a, b orderedReading, check func(*Records)) {
	t.Helper()
	if a.rs == nil || b.rs == nil {
		require.Equal(t, a.openErr, b.openErr, "%s and %s: opening", what[0], what[1])
		return
	}
	n := 0
	for {
		na, nb := a.rs.Next(), b.rs.Next()
		if na != nb {
			ca, cb := n+count(a.rs, na), n+count(b.rs, nb)
			require.Failf(t, "record counts differ", "%d records %s, %d %s", ca, what[0], cb, what[1])
		}
		if !na {
			break
		}
		if check != nil {
			check(a.rs)
			check(b.rs)
		}
		if ra, rb := a.rs.Record(), b.rs.Record(); !sameRecord(ra, rb) {
			require.Failf(t, "records differ", "record %d %s: %+v\n%s: %+v", n, what[0], ra, what[1], rb)
		}
		n++
	}
	assert.Equal(t, errText(a.rs.Err()), errText(b.rs.Err()), "error %s and %s", what[0], what[1])
	assert.Equal(t, a.warn(), b.warn(), "warnings %s and %s", what[0], what[1])
}

// count returns the records left in rs, counting the current one if any.
func count(rs *Records, cur bool) int {
	n := 0
	if cur {
		n = 1
	}
	for rs.Next() {
		n++
	}
	return n
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// compareOrdered compares the chunked queue with the copying one (the
// reference) on name or data, both tuned as base otherwise.
func compareOrdered(t *testing.T, name string, data []byte, base readTuning) {
	t.Helper()
	ref := base
	ref.copyQueued = true
	chunks := openOrdered(t, name, data, base)
	copies := openOrdered(t, name, data, ref)
	compareReadings(t, [2]string{"with chunks", "with copies"}, chunks, copies, func(rs *Records) {
		if rs.tune.copyQueued && len(rs.streams) > 0 && rs.streams[0].chunked {
			require.FailNow(t, "the reference run uses chunks")
		}
	})
}

// TestChunkedSameOrder: the ordered queue that keeps records where the
// stream read them (in chunks it does not reuse while they are queued)
// delivers exactly the records, in exactly the order, of the queue that
// copied each, for every fixture and corpus recording, through Open and,
// for the fixtures, through NewReader.
func TestChunkedSameOrder(t *testing.T) {
	t.Parallel()
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
		t.Run(filepath.Base(name), func(t *testing.T) {
			t.Parallel()
			compareOrdered(t, name, nil, readTuning{})
		})
	}
}

// TestChunkedSameOrderTruncated: the same on a fixture cut at many points
// (records cut short, the data section running past the end).
func TestChunkedSameOrderTruncated(t *testing.T) {
	t.Parallel()
	rdNeedFixtures(t)
	for _, fx := range []string{"forkexec.data", "zstd.data", "pipe.data"} {
		full := readFixture(t, fx)
		for cut := len(full) / 17; cut < len(full); cut += len(full)/17 + 1 {
			t.Run(fmt.Sprintf("%s/%d", fx, cut), func(t *testing.T) {
				t.Parallel()
				compareOrdered(t, fx, full[:cut], readTuning{})
			})
		}
	}
}

// TestChunkedQueueLimit: with chunks the queue holds positions, but the
// bytes it stands for are bounded the same way: past maxQueueBytes the
// earlier half is delivered, in the order of the copying queue; and the
// chunks held stay few.
func TestChunkedQueueLimit(t *testing.T) {
	t.Parallel()
	fixtures.Corpus(t, "")
	small := readTuning{maxQueueBytes: 16 << 10}
	name := corpusDir + "/perf.data.callgraph-3.8"
	f, err := Open(name)
	require.NoError(t, err)
	defer f.Close()
	rs := f.Records(RecordsOptions{Ordered: true, tune: small})
	n, maxQueued := 0, 0
	for rs.Next() {
		n++
		maxQueued = max(maxQueued, rs.oq.bytes)
		require.Empty(t, rs.oq.arena, "record %d: bytes copied to the arena", n)
	}
	require.NoError(t, rs.Err())
	require.NotZero(t, n, "no records")
	assert.NotZero(t, maxQueued, "the queue held nothing")
	assert.LessOrEqual(t, maxQueued, 2*small.maxQueueBytes, "queue bytes over twice the limit")
	assert.LessOrEqual(t, len(rs.streams[0].chunks), 3, "chunks held for a %d-byte queue", small.maxQueueBytes)
	compareOrdered(t, name, nil, small)
}

// TestPrefetchSameRecords: reading ahead on another goroutine changes
// nothing in what is delivered, for every fixture and corpus recording
// and for a fixture cut at many points (read through Open from a file).
func TestPrefetchSameRecords(t *testing.T) {
	t.Parallel()
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
	for _, name := range names {
		t.Run(filepath.Base(name), func(t *testing.T) {
			t.Parallel()
			ahead := openOrdered(t, name, nil, readTuning{readAhead: readAheadAlways})
			if ahead.rs != nil {
				require.NotNil(t, ahead.rs.stopPrefetch, "%s: no read-ahead", name)
			}
			plain := openOrdered(t, name, nil, readTuning{readAhead: readAheadNever})
			compareReadings(t, [2]string{"read ahead", "not"}, ahead, plain, nil)
		})
	}
}

// TestPushInPlace: the samples of a little-endian recording read in time
// order are queued where they lie (pushInPlace), the path
// TestChunkedSameOrder holds to the copying queue; the copying queue never
// takes it.
func TestPushInPlace(t *testing.T) {
	t.Parallel()
	rdNeedFixtures(t)
	for _, tc := range []struct {
		tune    readTuning
		inPlace bool
	}{{readTuning{}, true}, {readTuning{copyQueued: true}, false}} {
		r := openOrdered(t, filepath.Join(rdFixtures, "goprog.data"), nil, tc.tune)
		require.NotNil(t, r.rs, r.openErr)
		samples := 0
		for r.rs.Next() {
			if _, ok := r.rs.Record().(*Sample); ok {
				samples++
			}
		}
		require.NoError(t, r.rs.Err())
		require.NotZero(t, samples)
		if tc.inPlace {
			assert.GreaterOrEqual(t, r.rs.oq.inPlace, samples, "samples queued in place")
		} else {
			assert.Zero(t, r.rs.oq.inPlace, "records the copying queue queued in place")
		}
	}
}
