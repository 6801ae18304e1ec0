package perfdata

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// countTypes reads every record of the named recording and counts them by
// type; it fails the test on a read error.
func countTypes(t *testing.T, name string) (map[RecordType]int, []*TracingData) {
	t.Helper()
	f, err := Open(name)
	require.NoError(t, err)
	defer f.Close()
	n := map[RecordType]int{}
	var tds []*TracingData
	rs := f.Records(RecordsOptions{})
	for rs.Next() {
		r := rs.Record()
		n[r.Type()]++
		if td, ok := r.(*TracingData); ok {
			c := *td
			c.Data = bytes.Clone(td.Data)
			tds = append(tds, &c)
		}
	}
	require.NoError(t, rs.Err())
	return n, tds
}

// TestSimpleperfTracingData: simpleperf writes TRACING_DATA with its
// payload inside header.size; the whole data section parses, and the
// payload is the tracing data (its magic, "\x17\x08Dtracing"). The counts
// are what simpleperf's record walk finds.
func TestSimpleperfTracingData(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name            string
		samples, mmaps  int
		payload, offset int64
	}{
		{"simpleperf--perf_sched_stat_runtime.data", 2430, 11651, 2794, 264 + 12},
		{"simpleperf--perf_with_tracepoint_event.data", 45, 37, 2012, 488 + 12},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			n, tds := countTypes(t, fixtures.Corpus(t, "foreign/"+c.name))
			assert.Equal(t, c.samples, n[RecordSample])
			assert.Equal(t, c.mmaps, n[RecordMmap])
			require.Len(t, tds, 1)
			assert.Equal(t, uint32(c.payload), tds[0].DataSize)
			assert.Equal(t, c.offset, tds[0].DataOffset)
			require.Len(t, tds[0].Data, int(c.payload))
			assert.True(t, bytes.HasPrefix(tds[0].Data, []byte("\x17\x08Dtracing")), "%q", tds[0].Data[:16])

			// The features read it as the TRACING_DATA feature's
			// payload, though the file's bitmap has no such feature.
			f, err := Open(fixtures.Corpus(t, "foreign/"+c.name))
			require.NoError(t, err)
			defer f.Close()
			fs := f.Features()
			assert.False(t, fs.Has(FeatureTracingData))
			assert.NotContains(t, fs.IDs(), FeatureTracingData)
			evs, err := fs.TraceEvents()
			require.NoError(t, err)
			want, err := ParseTracingData(tds[0].Data, tds[0].DataOffset)
			require.NoError(t, err)
			assert.Equal(t, want, evs)
			assert.NotEmpty(t, evs)
			_, err = fs.TracePrintk()
			assert.NoError(t, err)
		})
	}
}

// TestSimpleperfPrivateRecords: simpleperf's own CALLCHAIN records come
// back named, decoded, between the records perf knows.
func TestSimpleperfPrivateRecords(t *testing.T) {
	t.Parallel()
	n, _ := countTypes(t, fixtures.Corpus(t, "foreign/simpleperf--perf_with_callchain_record.data"))
	assert.Equal(t, 40, n[RecordSimpleperfCallchain])
	assert.Equal(t, 21, n[RecordSample])
	assert.True(t, RecordSimpleperfCallchain.IsSimpleperf())
	assert.False(t, RecordSchedstatDomain.IsSimpleperf())
	assert.Equal(t, "simpleperf:CALLCHAIN", RecordSimpleperfCallchain.String())
	assert.Equal(t, "type(40000)", RecordType(40000).String())
}

// simpleperfChains reads simpleperf--perf_with_callchain_record.data (an
// aarch64 recording by simpleperf record -g) with opts, and returns each
// sample's callchain after its PERF_CONTEXT_USER marker, whether the sample
// IP is in user mode, and the joined chain written for it (nil if none),
// by time, with the join's counts.
func simpleperfChains(t *testing.T, opts RecordsOptions) (user, joined map[uint64][]uint64, userMode map[uint64]bool, c Callchains) {
	t.Helper()
	f, err := Open(fixtures.Corpus(t, "foreign/simpleperf--perf_with_callchain_record.data"))
	require.NoError(t, err)
	defer f.Close()
	user, joined, userMode = map[uint64][]uint64{}, map[uint64][]uint64{}, map[uint64]bool{}
	rs := f.Records(opts)
	for rs.Next() {
		switch r := rs.Record().(type) {
		case *SimpleperfCallchain:
			assert.Equal(t, uint32(11237), r.PID)
			assert.Equal(t, r.PID, r.TID)
			require.Len(t, r.SPs, len(r.IPs))
			if r.ChainType == ChainJoinedOffline {
				joined[r.Time] = slices.Clone(r.IPs)
			} else {
				assert.Equal(t, ChainOriginalOffline, r.ChainType)
			}
		case *Sample:
			userMode[r.Time()] = r.CPUMode() == CPUModeUser
			if i := slices.Index(r.Callchain, ContextUser); i >= 0 {
				user[r.Time()] = slices.Clone(r.Callchain[i+1:])
			}
		}
	}
	require.NoError(t, rs.Err())
	return user, joined, userMode, rs.Callchains()
}

// TestSimpleperfCallchainJoin: each of simpleperf's joined CALLCHAIN
// records is met by its sample (same thread and time, the next record of
// the thread), and the sample's user callchain is that chain as
// simpleperf's record command wrote it (every return address moved back
// into its call instruction, 2 bytes on aarch64, but the sample's own IP:
// SampleRecord::AdjustCallChainGeneratedByKernel); the chains as unwound
// before joining are skipped. Cut to its first user frame (as a stack the
// kernel or the unwinder cut short), a sample gets the joined chain, as
// simpleperf's UpdateUserCallChain gives it.
func TestSimpleperfCallchainJoin(t *testing.T) {
	t.Parallel()
	user, joined, userMode, c := simpleperfChains(t, RecordsOptions{Ordered: true})
	assert.Equal(t, Callchains{Joined: 20, Originals: 20}, c)
	require.Len(t, joined, 20)
	for tm, j := range joined {
		u, ok := user[tm]
		require.True(t, ok, "the sample at %d has a user callchain", tm)
		require.Len(t, u, len(j), "at %d", tm)
		for i := range j {
			want := j[i] - 2
			if i == 0 && userMode[tm] {
				want = j[i]
			}
			assert.Equal(t, want, u[i], "at %d, frame %d", tm, i)
		}
	}
	_, _, _, c = simpleperfChains(t, RecordsOptions{SampleHeadersOnly: true})
	assert.Equal(t, Callchains{Joined: 20, Originals: 20}, c, "the counts from the samples' headers alone")

	// The join itself on a sample of the recording cut short.
	f, err := Open(fixtures.Corpus(t, "foreign/simpleperf--perf_with_callchain_record.data"))
	require.NoError(t, err)
	defer f.Close()
	rs := f.Records(RecordsOptions{})
	var chain *SimpleperfCallchain
	for rs.Next() {
		if r, ok := rs.Record().(*SimpleperfCallchain); ok && r.ChainType == ChainJoinedOffline && len(r.IPs) > 2 {
			chain = r
			break
		}
	}
	require.NotNil(t, chain)
	var j callchainJoin
	j.take(chain)
	var s Sample
	s.SampleID.PID, s.SampleID.TID, s.SampleID.Time = chain.PID, chain.TID, chain.Time
	kernel := []uint64{ContextKernel, 0xffffff8088ead6a8}
	s.Callchain = append(slices.Clone(kernel), ContextUser, chain.IPs[0])
	j.apply(&s, true)
	assert.Equal(t, append(append(kernel, ContextUser), chain.IPs...), s.Callchain)
	assert.Equal(t, Callchains{Joined: 1, Lengthened: 1}, j.counts)
	j.apply(&s, true)
	assert.Equal(t, Callchains{Joined: 1, Lengthened: 1}, j.counts, "a chain serves one sample")
}

// TestVersion1File: a version-1 file (PERFFILE, written by RHEL 6's perf
// 2.6.32) reads as perf 6.1 reads it: 84 records, one cpu-clock event.
func TestVersion1File(t *testing.T) {
	t.Parallel()
	name := fixtures.Corpus(t, "foreign/hotspot--perf.data.true.v1")
	n, _ := countTypes(t, name)
	assert.Equal(t, map[RecordType]int{RecordMmap: 80, RecordComm: 2, RecordExit: 2}, n)
	f, err := Open(name)
	require.NoError(t, err)
	defer f.Close()
	assert.Equal(t, binary.LittleEndian, f.ByteOrder())
	require.Len(t, f.Events(), 1)
	assert.Equal(t, "cpu-clock:HG", f.Events()[0].Name)

	in, err := os.Open(name)
	require.NoError(t, err)
	defer in.Close()
	r, err := NewReader(in)
	require.NoError(t, err, "read as a stream")
	rs := r.Records(RecordsOptions{})
	n = map[RecordType]int{}
	for rs.Next() {
		n[rs.Record().Type()]++
	}
	require.NoError(t, rs.Err())
	assert.Equal(t, map[RecordType]int{RecordMmap: 80, RecordComm: 2, RecordExit: 2}, n, "read as a stream")
}

// TestV1ByteOrder: the attr size says a version-1 file's byte order; a
// size perf would not accept in either order is no order.
func TestV1ByteOrder(t *testing.T) {
	t.Parallel()
	b := make([]byte, 8)
	binary.LittleEndian.PutUint64(b, 72+16)
	assert.Equal(t, binary.LittleEndian, v1ByteOrder(b))
	binary.BigEndian.PutUint64(b, 104+16)
	assert.Equal(t, binary.BigEndian, v1ByteOrder(b))
	binary.LittleEndian.PutUint64(b, 112+16)
	assert.Nil(t, v1ByteOrder(b))
}

// readAll counts the records of f by type; it fails the test on an error.
func readAll(t *testing.T, f *File) map[RecordType]int {
	t.Helper()
	n := map[RecordType]int{}
	rs := f.Records(RecordsOptions{})
	for rs.Next() {
		n[rs.Record().Type()]++
	}
	require.NoError(t, rs.Err())
	return n
}

// zeroedDataSize returns the committed recording name as it is, its bytes
// with the header's data size (the u64 at offset 48) cleared, and its
// hostname.
func zeroedDataSize(t *testing.T, name string) (orig *File, zeroed []byte, host string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "perf", name))
	require.NoError(t, err)
	orig, err = NewFile(bytes.NewReader(b), int64(len(b)))
	require.NoError(t, err)
	host, err = orig.Features().Hostname()
	require.NoError(t, err)
	zeroed = bytes.Clone(b)
	clear(zeroed[48:56])
	return orig, zeroed, host
}

// TestZeroedDataSize: a finished recording whose header's data size was
// zeroed afterwards (built here from a real recording by clearing the
// u64 at offset 48) reads the same records as the original, stopping
// where the feature section table begins instead of decoding it as
// records, and keeps its features.
func TestZeroedDataSize(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"twoevents.data", "buildid-mmap.data", "zstd.data"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			orig, z, wantHost := zeroedDataSize(t, name)
			want := readAll(t, orig)
			f, err := NewFile(bytes.NewReader(z), int64(len(z)))
			require.NoError(t, err)
			assert.Equal(t, want, readAll(t, f))
			assert.False(t, f.Truncated())
			off, size := orig.DataRange()
			zoff, zsize := f.DataRange()
			assert.Equal(t, off, zoff)
			assert.Equal(t, size, zsize)
			host, err := f.Features().Hostname()
			require.NoError(t, err)
			assert.Equal(t, wantHost, host)
			require.Len(t, f.Warnings(), 1)
			assert.Contains(t, f.Warnings()[0], "the header's data size is 0, but the feature section table follows the records")
		})
	}
}

// recordList is every record of rs as "TYPE@OFFSET", in file order.
func recordList(t *testing.T, rs *Records) []string {
	t.Helper()
	var out []string
	for rs.Next() {
		r := rs.Record()
		out = append(out, fmt.Sprintf("%v@%d", r.Type(), r.Header().Offset))
	}
	require.NoError(t, rs.Err())
	return out
}

// TestZeroedDataSizeStream: the same zeroed recordings (built from real
// recordings by clearing the header's data size, the u64 at offset 48)
// read as a stream (cat perf.data | perfcheck ...) give the original's
// records, offset for offset, stop where the feature section table begins
// instead of decoding it as records, and keep their features, whatever
// the sizes of the reads that deliver the bytes. Cut at the table, as a
// perf record killed before it rewrote the header leaves it, the stream
// gives the same records and says that perf did not exit cleanly.
func TestZeroedDataSizeStream(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"twoevents.data", "buildid-mmap.data", "zstd.data"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			orig, z, wantHost := zeroedDataSize(t, name)
			want := recordList(t, orig.Records(RecordsOptions{}))
			off, size := orig.DataRange()
			for _, in := range []struct {
				name string
				r    io.Reader
			}{
				{"whole", bytes.NewReader(z)},
				{"one byte at a time", iotest.OneByteReader(bytes.NewReader(z))},
				{"a pipe", struct{ io.Reader }{iotest.HalfReader(bytes.NewReader(z))}},
			} {
				r, err := NewReader(in.r)
				require.NoError(t, err, in.name)
				assert.Equal(t, want, recordList(t, r.Records(RecordsOptions{})), in.name)
				host, err := r.Features().Hostname()
				require.NoError(t, err, in.name)
				assert.Equal(t, wantHost, host, in.name)
				require.Len(t, r.Warnings(), 1, in.name)
				assert.Contains(t, r.Warnings()[0], fmt.Sprintf("the header's data size is 0, but the feature section table follows the records at offset %d", off+size), in.name)
			}

			killed, err := NewReader(bytes.NewReader(z[:off+size]))
			require.NoError(t, err)
			assert.Equal(t, want, recordList(t, killed.Records(RecordsOptions{})))
			require.Len(t, killed.Warnings(), 1)
			assert.Contains(t, killed.Warnings()[0], "perf record did not exit cleanly")
		})
	}
}

// TestTracepointNames: tracepoint events that EVENT_DESC does not name
// are named "system:name" from the tracing data, as perf names them: in a
// pipe stream from its TRACING_DATA record (read as a file and as a
// stream), in simpleperf's files from the TRACING_DATA record at the start
// of the data or from META_INFO's event_type_info.
func TestTracepointNames(t *testing.T) {
	t.Parallel()
	for name, want := range map[string][]string{
		"perfparser--probe.data.stream":               {"probe_untitled1:main"},
		"perfparser--probe.data.file":                 {"probe_untitled1:main"},
		"simpleperf--perf_sched_stat_runtime.data":    {"sched:sched_stat_runtime"},
		"simpleperf--perf_with_tracepoint_event.data": {"sched:sched_switch", "cycles:HG"},
		"simpleperf--perf_with_trace_offcpu_v2.data":  {"cpu-clock:u", "sched:sched_switch"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := fixtures.Corpus(t, "foreign/"+name)
			f, err := Open(path)
			require.NoError(t, err)
			defer f.Close()
			var got []string
			for _, e := range f.Events() {
				got = append(got, e.Name)
			}
			assert.Equal(t, want, got)

			in, err := os.Open(path)
			require.NoError(t, err)
			defer in.Close()
			r, err := NewReader(in)
			require.NoError(t, err)
			rs := r.Records(RecordsOptions{})
			for rs.Next() {
			}
			require.NoError(t, rs.Err())
			got = got[:0]
			for _, e := range r.Events() {
				got = append(got, e.Name)
			}
			assert.Equal(t, want, got, "read as a stream")
		})
	}
}

// TestParseTracingData: the probe's format in a pipe stream's TRACING_DATA
// payload decodes to its id and fields.
func TestParseTracingData(t *testing.T) {
	t.Parallel()
	f, err := Open(fixtures.Corpus(t, "foreign/perfparser--probe.data.stream"))
	require.NoError(t, err)
	defer f.Close()
	evs, err := f.Features().TraceEvents()
	require.NoError(t, err)
	require.Len(t, evs, 1)
	ev := evs[0]
	assert.Equal(t, "probe_untitled1", ev.System)
	assert.Equal(t, "main", ev.Name)
	assert.Equal(t, uint64(1329), ev.ID)
	assert.Equal(t, `"(%lx)", REC->__probe_ip`, ev.PrintFmt)
	assert.Equal(t, []TraceField{
		{Name: "common_type", Type: "unsigned short", Offset: 0, Size: 2},
		{Name: "common_flags", Type: "unsigned char", Offset: 2, Size: 1},
		{Name: "common_preempt_count", Type: "unsigned char", Offset: 3, Size: 1},
		{Name: "common_pid", Type: "int", Offset: 4, Size: 4, Signed: true},
		{Name: "__probe_ip", Type: "unsigned long", Offset: 8, Size: 8},
	}, ev.Fields)

	_, err = ParseTracingData([]byte("\x17\x08Dtracing0.5\x00\x00\x08"), 100)
	var fe *FormatError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, int64(100+14), fe.Offset)
}

// TestParseTraceField: arrays keep their brackets in the type, pointers
// their star, __data_loc its marker.
func TestParseTraceField(t *testing.T) {
	t.Parallel()
	for line, want := range map[string]TraceField{
		"field:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:1;":    {Name: "prev_comm", Type: "char[16]", Offset: 8, Size: 16, Signed: true},
		"field:const char * name;\toffset:8;\tsize:8;\tsigned:0;":      {Name: "name", Type: "const char *", Offset: 8, Size: 8},
		"field:__data_loc char[] msg;\toffset:12;\tsize:4;\tsigned:0;": {Name: "msg", Type: "__data_loc char[]", Offset: 12, Size: 4},
	} {
		got, err := parseTraceField(line)
		require.NoError(t, err, line)
		assert.Equal(t, want, got, line)
	}
}
