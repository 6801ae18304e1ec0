package perfdata

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/internal/fixtures"
)

const rdFixtures = "../testdata/perf"

// rdGlob returns the files matching pattern, failing when none does (a
// glob that silently matches nothing would make the test vacuous).
func rdGlob(t testing.TB, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	if len(m) == 0 {
		t.Fatalf("no file matches %s", pattern)
	}
	return m
}

func rdNeedFixtures(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(rdFixtures, "pipe.data")); err != nil {
		t.Skipf("fixtures in %s not recorded yet: %v", rdFixtures, err)
	}
}

// corpusDataFiles lists the corpus recordings (not expectations).
func corpusDataFiles(t testing.TB) []string {
	var out []string
	for _, p := range append(rdGlob(t, corpusDir+"/*perf.data*"), rdGlob(t, corpusDir+"/modern/*.data")...) {
		if strings.HasSuffix(p, ".buildids") {
			continue
		}
		out = append(out, p)
	}
	return out
}

// tally counts what perf report --stats counts.
type tally struct {
	total   int
	byType  map[string]int
	byEvent map[string]int
	err     error
	records int
}

func countRecords(t testing.TB, f *File, opts RecordsOptions) tally {
	t.Helper()
	tl := tally{byType: map[string]int{}, byEvent: map[string]int{}}
	rs := f.Records(opts)
	for rs.Next() {
		r := rs.Record()
		if r == nil {
			t.Fatal("Next returned true with a nil record")
		}
		tl.total++
		tl.byType[r.Type().String()]++
		if s, ok := r.(*Sample); ok {
			e := rs.Events()[s.EventIndex]
			// perf 6.1 names pipe-mode events from their attrs only.
			name := e.Name
			if f.IsPipe() {
				name = e.AttrName
			}
			tl.byEvent[name]++
		}
	}
	tl.err = rs.Err()
	if rs.Next() {
		t.Fatal("Next returned true after returning false")
	}
	return tl
}

var (
	statLine  = regexp.MustCompile(`^\s*(\S+) events:\s+(\d+)`)
	eventHead = regexp.MustCompile(`^(\S.*) stats:$`)
)

// parseStats reads perf report --stats output: the aggregated counts per
// record type and the samples per event.
func parseStats(t testing.TB, path string) (tally, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tl := tally{byType: map[string]int{}, byEvent: map[string]int{}}
	if len(bytes.TrimSpace(b)) == 0 {
		return tl, false
	}
	ev := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "Aggregated stats") {
			ev = ""
			continue
		}
		if m := eventHead.FindStringSubmatch(line); m != nil {
			ev = m[1]
			continue
		}
		m := statLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[2])
		switch {
		case ev != "" && m[1] == "SAMPLE":
			tl.byEvent[ev] = n
		case ev != "":
		case m[1] == "TOTAL":
			tl.total = n
		default:
			tl.byType[m[1]] = n
		}
	}
	return tl, true
}

func compareTally(t *testing.T, got, want tally) {
	t.Helper()
	if got.total != want.total {
		t.Errorf("total %d records, perf counts %d", got.total, want.total)
	}
	for k, n := range want.byType {
		if got.byType[k] != n {
			t.Errorf("%s: %d records, perf counts %d", k, got.byType[k], n)
		}
	}
	for k, n := range got.byType {
		if _, ok := want.byType[k]; !ok {
			t.Errorf("%s: %d records, perf counts none", k, n)
		}
	}
	for k, n := range want.byEvent {
		if got.byEvent[k] != n {
			t.Errorf("event %q: %d samples, perf counts %d (have %v)", k, got.byEvent[k], n, got.byEvent)
		}
	}
}

// TestCorpusRecords reads every corpus recording to its end, in file order
// and in time order, and compares the counts with what perf 6.1 printed.
func TestCorpusRecords(t *testing.T) {
	t.Parallel()
	fixtures.Corpus(t, "")
	for _, path := range corpusDataFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			f, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			got := countRecords(t, f, RecordsOptions{})
			ordered := countRecords(t, f, RecordsOptions{Ordered: true})
			if strings.Contains(path, "corrupted.zero_size_sample") {
				var fe *FormatError
				if !errors.As(got.err, &fe) || fe.Offset != 49104 || !errors.Is(got.err, ErrMalformed) {
					t.Fatalf("want a FormatError at offset 49104, got %v", got.err)
				}
				if !strings.Contains(got.err.Error(), path) || !strings.Contains(got.err.Error(), "size 0") {
					t.Errorf("error %q does not name the file and the problem", got.err)
				}
				if got.total != 570 || got.byType["MMAP"] != 468 {
					t.Errorf("want the 570 records before the corruption, got %d (%v)", got.total, got.byType)
				}
				if ordered.err == nil || ordered.total != got.total {
					t.Errorf("ordered: %d records, err %v; want %d and the error", ordered.total, ordered.err, got.total)
				}
				return
			}
			if got.err != nil {
				t.Fatal(got.err)
			}
			if ordered.err != nil || ordered.total != got.total {
				t.Fatalf("ordered: %d records (err %v), file order %d", ordered.total, ordered.err, got.total)
			}
			statsPath := filepath.Join(corpusDir, "perf-6.1", filepath.Base(path)+".stats")
			if _, err := os.Stat(statsPath); err != nil {
				return // modern/: perf 6.1 cannot read them
			}
			want, ok := parseStats(t, statsPath)
			if !ok {
				t.Skipf("perf 6.1 printed nothing for this file")
			}
			compareTally(t, got, want)
		})
	}
}

// TestFixtureRecords compares the fixtures recorded with perf 6.1 against
// that perf's own perf report --stats.
func TestFixtureRecords(t *testing.T) {
	t.Parallel()
	rdNeedFixtures(t)
	for _, stats := range rdGlob(t, rdFixtures+"/*.data.stats") {
		path := strings.TrimSuffix(stats, ".stats")
		t.Run(filepath.Base(path), func(t *testing.T) {
			f, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			got := countRecords(t, f, RecordsOptions{})
			if got.err != nil {
				t.Fatal(got.err)
			}
			ordered := countRecords(t, f, RecordsOptions{Ordered: true})
			if ordered.err != nil || ordered.total != got.total {
				t.Fatalf("ordered: %d records (err %v), file order %d", ordered.total, ordered.err, got.total)
			}
			want, ok := parseStats(t, stats)
			if !ok {
				// perf 6.1 printed nothing (it cannot read some pipe+zstd
				// streams); the records must still all decode.
				if got.byType["SAMPLE"] == 0 {
					t.Errorf("no samples decoded: %v", got.byType)
				}
				return
			}
			compareTally(t, got, want)
		})
	}
}

// TestReaderMatchesFile reads pipe-format files both as a stream and as a
// File and expects the same records.
func TestReaderMatchesFile(t *testing.T) {
	t.Parallel()
	var paths []string
	if _, err := os.Stat(corpusDir); err == nil {
		paths = append(paths, rdGlob(t, corpusDir+"/*piped*")...)
		paths = append(paths, rdGlob(t, corpusDir+"/modern/*pipe*")...)
	}
	if _, err := os.Stat(rdFixtures + "/pipe.data"); err == nil {
		paths = append(paths, rdFixtures+"/pipe.data", rdFixtures+"/zstd-pipe.data")
	}
	if len(paths) == 0 {
		t.Skip("neither corpus nor fixtures present")
	}
	for _, path := range paths {
		if strings.HasSuffix(path, ".buildids") {
			continue
		}
		t.Run(filepath.Base(path), func(t *testing.T) {
			f, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if !f.IsPipe() {
				t.Fatal("not detected as pipe format")
			}
			fromFile := countRecords(t, f, RecordsOptions{})
			fh, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer fh.Close()
			// Hide the *os.File so the stream cannot seek.
			r, err := NewReader(struct{ io.Reader }{fh})
			if err != nil {
				t.Fatal(err)
			}
			rs := r.Records(RecordsOptions{})
			n := 0
			for rs.Next() {
				n++
			}
			if n != fromFile.total || (rs.Err() == nil) != (fromFile.err == nil) {
				t.Errorf("stream: %d records, err %v; file: %d, err %v", n, rs.Err(), fromFile.total, fromFile.err)
			}
			if len(r.Events()) != len(f.Events()) {
				t.Errorf("stream has %d events, file %d", len(r.Events()), len(f.Events()))
			}
			for i, e := range r.Events() {
				if e.Name != f.Events()[i].Name {
					t.Errorf("event %d: stream name %q, file %q", i, e.Name, f.Events()[i].Name)
				}
			}
		})
	}
}

// TestTrailingGarbage: perf 6.16 wrote its stderr into the same file after
// the last record of this pipe recording.
func TestTrailingGarbage(t *testing.T) {
	t.Parallel()
	fixtures.Corpus(t, "")
	path := corpusDir + "/modern/sleep.compressed2.pipe.data"
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tl := countRecords(t, f, RecordsOptions{})
	if tl.err != nil {
		t.Fatal(tl.err)
	}
	w := f.Warnings()
	if len(w) != 1 || !strings.Contains(w[0], "143 bytes") {
		t.Errorf("warnings %q, want one about 143 trailing bytes", w)
	}
	if tl.byType["SAMPLE"] == 0 {
		t.Error("no samples")
	}
}

// TestCompressedSameStory: the compressed and uncompressed sleep recordings
// of perf 6.16 describe the same run shape: one sleep process, a handful of
// samples at 4000 Hz, its binary mapped.
func TestCompressedSameStory(t *testing.T) {
	t.Parallel()
	fixtures.Corpus(t, "")
	for _, path := range rdGlob(t, corpusDir+"/modern/sleep*.data") {
		t.Run(filepath.Base(path), func(t *testing.T) {
			f, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var comms []string
			samples, compressedSamples := 0, 0
			sawSleep := false
			rs := f.Records(RecordsOptions{})
			for rs.Next() {
				switch r := rs.Record().(type) {
				case *Comm:
					comms = append(comms, r.Comm)
				case *Sample:
					samples++
					if r.Compressed {
						compressedSamples++
					}
				case *Mmap2:
					if strings.HasSuffix(r.Filename, "/sleep") {
						sawSleep = true
					}
				}
			}
			if rs.Err() != nil {
				t.Fatal(rs.Err())
			}
			if samples < 3 || samples > 40 {
				t.Errorf("%d samples for sleep 1 at 4000 Hz", samples)
			}
			if strings.Contains(path, "compressed") && compressedSamples != samples {
				t.Errorf("%d of %d samples came from compressed records", compressedSamples, samples)
			}
			if !sawSleep {
				t.Error("no MMAP2 of the sleep binary")
			}
			if !strings.Contains(strings.Join(comms, ","), "sleep") {
				t.Errorf("comms %q lack sleep", comms)
			}
		})
	}
}

// TestOrderedIsSorted: time-ordered delivery gives every record of file
// order once, and the timestamps of kernel records never go back (perf
// would count an out-of-order event; none of these files has one).
func TestOrderedIsSorted(t *testing.T) {
	t.Parallel()
	var paths []string
	if _, err := os.Stat(corpusDir); err == nil {
		paths = append(paths, corpusDataFiles(t)...)
	}
	if _, err := os.Stat(rdFixtures + "/pipe.data"); err == nil {
		paths = append(paths, rdGlob(t, rdFixtures+"/*.data")...)
	}
	if len(paths) == 0 {
		t.Skip("neither corpus nor fixtures present")
	}
	for _, path := range paths {
		if strings.Contains(path, "corrupted") {
			continue
		}
		t.Run(filepath.Base(path), func(t *testing.T) {
			f, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			count := func(ordered bool) (map[string]int, int) {
				m := map[string]int{}
				back := 0
				var last uint64
				rs := f.Records(RecordsOptions{Ordered: ordered})
				for rs.Next() {
					r := rs.Record()
					h := r.Header()
					m[fmt.Sprintf("%v@%d/%d", r.Type(), h.Offset, h.Part)]++
					if !r.Type().IsUser() && h.SampleID.HasTime() && h.SampleID.Time != 0 {
						if h.SampleID.Time < last {
							back++
						}
						last = h.SampleID.Time
					}
				}
				if rs.Err() != nil {
					t.Fatal(rs.Err())
				}
				return m, back
			}
			plain, _ := count(false)
			ord, back := count(true)
			if back != 0 {
				t.Errorf("%d timestamps go back in time order", back)
			}
			if len(plain) != len(ord) {
				t.Fatalf("%d distinct records in time order, %d in file order", len(ord), len(plain))
			}
			for k, n := range plain {
				if ord[k] != n {
					t.Fatalf("%s: %d in time order, %d in file order", k, ord[k], n)
				}
			}
		})
	}
}

// TestConcurrentRecords: iterations of one File are independent and may run
// at once (run with -race).
func TestConcurrentRecords(t *testing.T) {
	t.Parallel()
	rdNeedFixtures(t)
	for _, name := range []string{"twoevents.data", "pipe.data", "zstd.data"} {
		f, err := Open(rdFixtures + "/" + name)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := readSigs(f, RecordsOptions{})
		errs := make(chan error, 4)
		for i := 0; i < 4; i++ {
			go func(ordered bool) {
				got, err := readSigs(f, RecordsOptions{Ordered: ordered})
				if err == nil && len(got) != len(want) {
					err = fmt.Errorf("%d records, want %d", len(got), len(want))
				}
				f.Features().Hostname()
				errs <- err
			}(i%2 == 0)
		}
		for i := 0; i < 4; i++ {
			if err := <-errs; err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
		f.Close()
	}
}

// TestFileFormatStream reads file-format recordings through NewReader, as
// from cat perf.data | perfcheck: the same records, then the same features.
func TestFileFormatStream(t *testing.T) {
	t.Parallel()
	var paths []string
	if _, err := os.Stat(rdFixtures + "/pipe.data"); err == nil {
		for _, n := range []string{"twoevents.data", "zstd.data", "cshared-fp.data", "buildid-mmap.data"} {
			paths = append(paths, rdFixtures+"/"+n)
		}
	}
	if _, err := os.Stat(corpusDir); err == nil {
		for _, n := range []string{"perf.data.intel_pt-4.14", "perf.data.callgraph-3.8", "modern/sleep.compressed2.data", "perf.data.numatopology-3.2"} {
			paths = append(paths, corpusDir+"/"+n)
		}
	}
	if len(paths) == 0 {
		t.Skip("neither corpus nor fixtures present")
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			f, err := NewFile(bytes.NewReader(b), int64(len(b)))
			if err != nil {
				t.Fatal(err)
			}
			want, err := readSigs(f, RecordsOptions{})
			if err != nil {
				t.Fatal(err)
			}
			r, err := NewReader(struct{ io.Reader }{bytes.NewReader(b)})
			if err != nil {
				t.Fatal(err)
			}
			if r.IsPipe() {
				t.Fatal("file format read as a pipe")
			}
			var got []recSig
			rs := r.Records(RecordsOptions{Ordered: true})
			for rs.Next() {
				h := rs.Record().Header()
				got = append(got, recSig{h.RecType, h.Offset, h.Compressed})
			}
			if rs.Err() != nil {
				t.Fatal(rs.Err())
			}
			if len(got) != len(want) {
				t.Fatalf("%d records, want %d", len(got), len(want))
			}
			if fmt.Sprint(r.Events()) != fmt.Sprint(f.Events()) {
				t.Errorf("events:\n%v\nwant\n%v", r.Events(), f.Events())
			}
			if fmt.Sprint(r.Features().IDs()) != fmt.Sprint(f.Features().IDs()) {
				t.Errorf("features %v, want %v", r.Features().IDs(), f.Features().IDs())
			}
			h1, err1 := r.Features().Hostname()
			h2, err2 := f.Features().Hostname()
			if h1 != h2 || (err1 == nil) != (err2 == nil) {
				t.Errorf("hostname %q (%v), want %q (%v)", h1, err1, h2, err2)
			}
			b1, _ := r.Features().BuildIDs()
			b2, _ := f.Features().BuildIDs()
			if fmt.Sprint(b1) != fmt.Sprint(b2) {
				t.Errorf("build-ids differ")
			}
			// Cut inside the data: the records before, then truncation.
			off, size := f.DataRange()
			cut := b[:off+size/2]
			r, err = NewReader(bytes.NewReader(cut))
			if err != nil {
				t.Fatal(err)
			}
			rs = r.Records(RecordsOptions{})
			for rs.Next() {
			}
			if !errors.Is(rs.Err(), io.ErrUnexpectedEOF) {
				t.Errorf("cut stream: %v", rs.Err())
			}
		})
	}
}

// TestAll: the iter.Seq2 adapter yields the same records and ends with the
// error, if any.
func TestAll(t *testing.T) {
	t.Parallel()
	b := readFixture(t, "twoevents.data")
	f, err := NewFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := readSigs(f, RecordsOptions{})
	n := 0
	for r, err := range f.Records(RecordsOptions{}).All() {
		if err != nil || r == nil {
			t.Fatalf("record %d: %v %v", n, r, err)
		}
		n++
	}
	if n != len(want) {
		t.Errorf("%d records, want %d", n, len(want))
	}
	// A truncated file: the records, then one pair with the error.
	cut := b[:len(b)/2]
	f, err = NewFile(bytes.NewReader(cut), int64(len(cut)))
	if err != nil {
		t.Fatal(err)
	}
	var last error
	n = 0
	for r, err := range f.Records(RecordsOptions{}).All() {
		if (r == nil) == (err == nil) {
			t.Fatal("a pair with both or neither")
		}
		last = err
		n++
	}
	if !errors.Is(last, io.ErrUnexpectedEOF) || n < 2 {
		t.Errorf("%d pairs, last error %v", n, last)
	}
}

// TestOrderedQueueLimit: without FINISHED_ROUND records (perf 3.x) the
// queue would hold the whole file; past its limit it delivers the earlier
// half, as perf does. The queue that copies records (the one the chunked
// queue is compared with) is measured by its arena; TestChunkedQueueLimit
// measures the chunked one.
func TestOrderedQueueLimit(t *testing.T) {
	t.Parallel()
	fixtures.Corpus(t, "")
	small := readTuning{maxQueueBytes: 16 << 10, copyQueued: true}
	f, err := Open(corpusDir + "/perf.data.callgraph-3.8")
	require.NoError(t, err)
	defer f.Close()
	plain := countRecords(t, f, RecordsOptions{})
	rs := f.Records(RecordsOptions{Ordered: true, tune: small})
	n, maxQueued := 0, 0
	for rs.Next() {
		n++
		maxQueued = max(maxQueued, len(rs.oq.arena))
	}
	require.NoError(t, rs.Err())
	require.Equal(t, plain.total, n, "records in time order")
	assert.NotZero(t, maxQueued, "nothing was copied to the arena")
	assert.LessOrEqual(t, maxQueued, 2*small.maxQueueBytes, "arena bytes over twice the limit")
}
