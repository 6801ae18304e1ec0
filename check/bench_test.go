package check

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/perfcheck/perfcheck/perfdata"
)

func steadySession() (*session, *sampleEvent) {
	s := newSession(Options{NoSymbols: true})
	s.update(commRec(7, 7, "app", true))
	s.update(mmapRec(7, 0x400000, 0x100000, 0, "/bin/app"))
	s.update(mmapRec(7, 0x7f0000000000, 0x200000, 0x1000, "/lib/libc.so.6"))
	s.update(mmapRec(-1, 0xffffffff81000000, 0x2000000, 0xffffffff81000000, "[kernel.kallsyms]_text"))
	chain := []uint64{contextKernel, 0xffffffff81000100, 0xffffffff81000200, contextUser}
	for i := 0; i < 60; i++ {
		chain = append(chain, 0x400000+uint64(i)*0x40)
	}
	chain = append(chain, 0x7f0000001234)
	e := &sampleEvent{PID: 7, TID: 7, Mode: perfdata.CPUModeKernel, IP: 0xffffffff81000100, Period: 1000, Callchain: chain}
	return s, e
}

// A repeated stack costs no allocation: the raw-stack cache answers, the
// key buffers are reused, the aggregate exists. Not parallel:
// testing.AllocsPerRun counts the allocations of every goroutine.
func TestSampleSteadyStateAllocs(t *testing.T) {
	s, e := steadySession()
	s.sample(e)
	if n := testing.AllocsPerRun(1000, func() { s.sample(e) }); n != 0 {
		t.Errorf("Sample of a known stack: %v allocations, want 0", n)
	}
	if s.numStacks() != 1 || len(s.stack(0)) != 63 {
		t.Errorf("%d stacks, first of %d frames; want 1 of 63 (IP not repeated, markers skipped)", s.numStacks(), len(s.stack(0)))
	}
}

func BenchmarkSampleKnownStack(b *testing.B) {
	s, e := steadySession()
	b.ReportAllocs()
	for b.Loop() {
		s.sample(e)
	}
}

func BenchmarkSampleNewStacks(b *testing.B) {
	s, e := steadySession()
	b.ReportAllocs()
	i := uint64(0)
	for b.Loop() {
		i++
		e.IP = 0xffffffff81000000 + i%0x1000000
		e.Callchain[1] = e.IP
		s.sample(e)
	}
}

// BenchmarkAnalyze checks a large recording: $PERFCHECK_BENCH_DATA, else
// bench/out/large.data (made by bench/record-large.sh), else a recording
// of the fork+exec fixture is used so the benchmark always runs.
func BenchmarkAnalyze(b *testing.B) {
	name := benchRecording(b)
	st, err := os.Stat(name)
	if err != nil {
		b.Fatal(err)
	}
	// check is what `perfcheck check` does, check+symbols what top,
	// script and pprof do before printing, top the whole of `perfcheck
	// top` but the printing.
	for _, label := range []string{"check", "check+symbols", "top"} {
		sym := label != "check"
		b.Run(label, func(b *testing.B) {
			b.SetBytes(st.Size())
			b.ReportAllocs()
			for b.Loop() {
				res, err := Analyze(context.Background(), Path(name), Options{NoSymbols: !sym, ReportOnly: label == "check"})
				if err != nil {
					b.Fatal(err)
				}
				if label == "top" && len(Top(res, TopOptions{N: 20})) == 0 {
					b.Fatal("no top table")
				}
				b.ReportMetric(float64(len(res.Stacks)), "stacks")
				b.ReportMetric(float64(res.Samples), "samples")
			}
		})
	}
}

// BenchmarkTop ranks the functions of a symbolized large recording (as
// BenchmarkAnalyze finds it): Top alone, over the aggregates.
func BenchmarkTop(b *testing.B) {
	name := benchRecording(b)
	res, err := Analyze(context.Background(), Path(name), Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, by := range []TopOrder{BySelf, ByTotal} {
			if len(Top(res, TopOptions{By: by, N: 20})) == 0 {
				b.Fatal("no top table")
			}
		}
	}
}

// benchRecording is the recording BenchmarkAnalyze uses.
func benchRecording(b *testing.B) string {
	name := os.Getenv("PERFCHECK_BENCH_DATA")
	if name == "" {
		name = filepath.Join("..", "bench", "out", "large.data")
		if _, err := os.Stat(name); err != nil {
			name = filepath.Join("..", "testdata", "perf", "forkexec.data")
		}
	}
	if _, err := os.Stat(name); err != nil {
		b.Skipf("no recording to benchmark: %v", err)
	}
	return name
}
