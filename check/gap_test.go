package check

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/dso"
	"github.com/perfcheck/perfcheck/internal/fixtures"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A pipe carries its OSRELEASE as a HEADER_FEATURE record, which is read
// only once the records start: the kernel's verdict must still use it.
// perf.data.piped.header_features-4.16 was recorded on 4.4.0-116-generic,
// without a kernel build-id.
func TestStreamKernelRelease(t *testing.T) {
	t.Parallel()
	p := fixtures.Corpus(t, "perf.data.piped.header_features-4.16")
	if kernelRelease() == "4.4.0-116-generic" {
		t.Skip("this machine runs the recording's kernel release")
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := Analyze(context.Background(), Stream(f, p), Options{Lookup: buildidcache.Options{BuildIDDir: t.TempDir()}, NoSymbols: true})
	if err != nil {
		t.Fatal(err)
	}
	var k *DSO
	for _, d := range res.DSOs {
		if d.Kind == dso.Kernel {
			k = d
		}
	}
	if k == nil {
		t.Fatal("no kernel DSO in the result")
	}
	if k.Verdict != Replaced || !strings.Contains(k.Reason, "4.4.0-116-generic") {
		t.Errorf("kernel: %v (%s); want replaced, naming the recording's release 4.4.0-116-generic", k.Verdict, k.Reason)
	}
}

// truncatedFixture writes testdata/perf/cshared-fp.data cut 20 bytes into
// the record in the middle of its data section (fixtures.Truncated).
func truncatedFixture(t *testing.T) string { return fixtures.Truncated(t, "cshared-fp.data") }

// A truncated recording gives the report of what was read and the error:
// the Result is partial, the error names the file and the offset.
func TestAnalyzePartialTruncated(t *testing.T) {
	t.Parallel()
	p := truncatedFixture(t)
	res, err := Analyze(context.Background(), Path(p), Options{Lookup: buildidcache.Options{BuildIDDir: t.TempDir()}, NoSymbols: true})
	if err == nil {
		t.Fatal("no error for a recording cut inside a record")
	}
	if !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "offset") {
		t.Errorf("error %q does not name the file and the offset", err)
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("error %q is not io.ErrUnexpectedEOF", err)
	}
	if res == nil {
		t.Fatal("no partial result")
	}
	if !res.Partial || res.ReadErr == nil || res.ReadErr.Error() != err.Error() {
		t.Errorf("Partial %v, ReadErr %v; want true and %v", res.Partial, res.ReadErr, err)
	}
	// The whole fixture has 301 samples; half of it, some of them.
	if res.Samples == 0 || res.Samples >= 301 {
		t.Errorf("partial result has %d samples; want some of the 301", res.Samples)
	}
	if len(res.DSOs) == 0 || len(res.Stacks) == 0 {
		t.Errorf("partial result has %d DSOs and %d stacks", len(res.DSOs), len(res.Stacks))
	}
	rep := res.Report()
	if !rep.Partial || rep.Error != err.Error() {
		t.Errorf("report: partial %v, error %q", rep.Partial, rep.Error)
	}
	if rep.TrustedSamples+rep.UntrustedAnySamples != rep.Samples {
		t.Errorf("report counts do not add up: %+v", rep)
	}
	// The complete file is not partial.
	full, err := Analyze(context.Background(), Path("../testdata/perf/cshared-fp.data"), Options{Lookup: buildidcache.Options{BuildIDDir: t.TempDir()}, NoSymbols: true})
	if err != nil || full.Partial || full.Report().Partial {
		t.Fatalf("complete fixture: err %v, partial %v", err, full != nil && full.Partial)
	}
}

// perf_data_converter's corrupt pipe file: a SAMPLE of size 0 at offset
// 49104, after 570 good records, none a sample. The result is there, with
// no samples, and the error names the file and the offset.
func TestAnalyzePartialCorruptPipe(t *testing.T) {
	t.Parallel()
	p := fixtures.Corpus(t, "perf.data.piped.corrupted.zero_size_sample-3.2")
	for _, viaReader := range []bool{false, true} {
		var res *Result
		var err error
		if viaReader {
			f, ferr := os.Open(p)
			if ferr != nil {
				t.Fatal(ferr)
			}
			res, err = Analyze(context.Background(), Stream(f, p), Options{Lookup: buildidcache.Options{BuildIDDir: t.TempDir()}, NoSymbols: true})
			f.Close()
		} else {
			res, err = Analyze(context.Background(), Path(p), Options{Lookup: buildidcache.Options{BuildIDDir: t.TempDir()}, NoSymbols: true})
		}
		if err == nil || res == nil {
			t.Fatalf("reader %v: result %v, error %v; want both", viaReader, res != nil, err)
		}
		if !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "49104") {
			t.Errorf("reader %v: error %q does not name the file and offset 49104", viaReader, err)
		}
		if !res.Partial || res.Samples != 0 || len(res.EventInfo) != 1 {
			t.Errorf("reader %v: partial %v, %d samples, events %v", viaReader, res.Partial, res.Samples, res.EventInfo)
		}
	}
}

// Options.Progress: byte offsets while reading, never backwards past the
// file's size, then the symbolize phase once, after reading, with the
// number of distinct locations the result then holds.
func TestProgress(t *testing.T) {
	t.Parallel()
	const name = "../testdata/perf/threads.data"
	st, err := os.Stat(name)
	require.NoError(t, err)
	var reads, phases int
	var last Progress
	res, err := Analyze(context.Background(), Path(name), withSystemSymbols(Options{Lookup: isolated(t.TempDir()), Workers: 1,
		Progress: func(p Progress) {
			switch p.Phase {
			case PhaseRead:
				assert.Zero(t, phases, "a read offset after the symbolize phase")
				assert.True(t, p.Offset > 0 && p.Offset <= st.Size(), "offset %d of %d bytes", p.Offset, st.Size())
				reads++
			case PhaseSymbolize:
				phases++
			}
			last = p
		}}))
	require.NoError(t, err)
	assert.Equal(t, 1, phases)
	assert.Equal(t, PhaseSymbolize, last.Phase)
	assert.Equal(t, len(res.Locations), last.Locations)
	assert.NotZero(t, last.Locations)
	assert.GreaterOrEqual(t, last.DSOs, len(res.DSOs))
	if res.Samples >= 4096 {
		assert.NotZero(t, reads, "no read progress over %d samples", res.Samples)
	}
}

// EachSample gives every sample's recorded addresses, one per location:
// a file offset and its address share the page offset (ip - start +
// pgoff with page-aligned start and pgoff), the kernel's are equal, and
// the leaf is the sample's IP. cshared-dwarf.data's user frames come from
// unwinding through the binaries that ran, found by build-id in the
// fixtures' cache wherever the repository is checked out (not at the
// recorded /work/main/testdata/perf/bin): they must be there too.
func TestSampleIPs(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"cshared-fp.data", "twoevents.data", "cshared-dwarf.data"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res, err := Analyze(context.Background(), Path("../testdata/perf/"+name), Options{Lookup: buildidcache.Options{BuildIDDir: fixtureCache(t)}, Replay: true, NoSymbols: true})
			if err != nil {
				t.Fatal(err)
			}
			frames, user := 0, 0
			err = res.EachSample(context.Background(), func(s *Sample) error {
				if len(s.IPs) != len(s.Stack.Locations()) {
					t.Fatalf("sample at %d: %d addresses for %d locations", s.Time, len(s.IPs), len(s.Stack.Locations()))
				}
				for i, l := range s.Stack.Locations() {
					frames++
					ip := s.IPs[i]
					switch l.DSO.Kind {
					case dso.File, dso.VDSO:
						if ip&0xfff != l.Offset&0xfff || ip == 0 {
							t.Errorf("%s+%#x: address %#x", l.DSO.Path, l.Offset, ip)
						}
						if ip != l.Offset {
							user++
						}
					case dso.Kernel:
						if ip != l.Offset {
							t.Errorf("kernel %#x: address %#x", l.Offset, ip)
						}
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if frames == 0 || user == 0 {
				t.Errorf("%d frames, %d user frames with an address", frames, user)
			}
			if name == "cshared-dwarf.data" && uint64(frames) < 3*res.Samples {
				t.Errorf("%d frames for %d samples: the unwound callers are missing", frames, res.Samples)
			}
		})
	}
	// Without Options.Replay there is nothing to read again.
	res, err := Analyze(context.Background(), Path("../testdata/perf/pipe.data"), Options{Lookup: buildidcache.Options{BuildIDDir: fixtureCache(t)}, NoSymbols: true})
	require.NoError(t, err)
	err = res.EachSample(context.Background(), func(*Sample) error { return nil })
	require.ErrorContains(t, err, "Options.Replay")
}
