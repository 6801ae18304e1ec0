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
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := readKallsyms(bufio.NewReader(bytes.NewReader(data)), "/proc/kallsyms"); err != nil {
			b.Skip(err)
		}
	}
}
