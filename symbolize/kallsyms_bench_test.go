package symbolize

import (
	"bufio"
	"bytes"
	"os"
	"testing"
)

// BenchmarkReadKallsyms parses this machine's /proc/kallsyms, read once
// into memory so that only the parsing is timed (perfcheck top reads it
// for every recording of this boot's kernel).
func BenchmarkReadKallsyms(b *testing.B) {
	data, err := os.ReadFile("/proc/kallsyms")
	if err != nil || len(data) == 0 {
		b.Skip("no /proc/kallsyms")
	}
	// Parsed once outside the timing: a listing this kernel hides
	// (kptr_restrict: every address zero) skips; any other error is a
	// parser failure and fails.
	if _, err := readKallsyms(bufio.NewReader(bytes.NewReader(data)), "/proc/kallsyms"); err != nil {
		if bytes.Count(data, []byte("0000000000000000 ")) == bytes.Count(data, []byte("\n")) {
			b.Skip("kallsyms addresses hidden:", err)
		}
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := readKallsyms(bufio.NewReader(bytes.NewReader(data)), "/proc/kallsyms"); err != nil {
			b.Fatal(err)
		}
	}
}
