package perfdata

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// BenchmarkRecords reads a recording of at least 100 MB that it makes with
// the real perf at benchmark time (system-wide cpu-clock at 50 kHz with
// callchains; never committed), reporting MB/s and allocations:
//
//	go test ./perfdata -run XXX -bench Records -benchtime 3x
//
// PERFDATA_BENCH_FILE names an existing recording to use instead.
func BenchmarkRecords(b *testing.B) {
	path := os.Getenv("PERFDATA_BENCH_FILE")
	if path == "" {
		perf, err := exec.LookPath("perf")
		if err != nil {
			b.Skip("perf not installed (Debian: apt-get install linux-perf)")
		}
		path = filepath.Join(b.TempDir(), "large.data")
		cmd := exec.Command(perf, "record", "-N", "-q", "-a", "-g", "-e", "cpu-clock", "-F", "50000",
			"-m", "1024", "--max-size=110M", "-o", path, "--", "sleep", "30")
		cmd.Env = append(os.Environ(), "HOME="+b.TempDir()) // keep ~/.debug untouched
		if out, err := cmd.CombinedOutput(); err != nil {
			// perf ends itself with SIGTERM when --max-size is reached.
			if st, serr := os.Stat(path); serr != nil || st.Size() < 100<<20 {
				b.Skipf("perf record: %v\n%s", err, out)
			}
		}
	}
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	// The figures are meant for a recording of at least 100 MB; a smaller
	// one (a quiet machine filling less than --max-size in 30 s, or a
	// PERFDATA_BENCH_FILE too small) would report numbers that are not
	// comparable, so the benchmark stops instead.
	if st.Size() < 100<<20 {
		b.Fatalf("the recording %s is %d MB, under the 100 MB the benchmark is defined on", path, st.Size()>>20)
	}
	for _, mode := range []struct {
		name    string
		ordered bool
		headers bool // SampleHeadersOnly, as perfcheck stats reads
	}{{"file-order", false, false}, {"time-order", true, false}, {"file-order-sample-headers", false, true}} {
		b.Run(mode.name, func(b *testing.B) {
			f, err := Open(path)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			b.SetBytes(st.Size())
			b.ReportAllocs()
			// The build machine is shared: CPU time says more than wall
			// time about the reader's own cost.
			cpu0 := cpuTime()
			b.ResetTimer()
			for b.Loop() {
				rs := f.Records(RecordsOptions{Ordered: mode.ordered, SampleHeadersOnly: mode.headers})
				n := 0
				for rs.Next() {
					if s, ok := rs.Record().(*Sample); ok {
						n += len(s.Callchain)
						if mode.headers && s.SampleID.HasTime() {
							n++
						}
					}
				}
				if rs.Err() != nil {
					b.Fatal(rs.Err())
				}
				if n == 0 {
					b.Fatal("no callchains (no sample times when reading headers only)")
				}
			}
			b.ReportMetric(float64(st.Size())*float64(b.N)/1e6/(cpuTime()-cpu0).Seconds(), "MB/cpu-s")
		})
	}
}
