package buildidcache

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// benchFiles returns the ELF files among /usr/bin's regular files.
func benchFiles(b *testing.B) []string {
	b.Helper()
	all, _ := filepath.Glob("/usr/bin/*")
	var out []string
	for _, p := range all {
		st, err := os.Lstat(p)
		if err != nil || !st.Mode().IsRegular() || !isELF(p) {
			continue
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		b.Skip("no ELF files in /usr/bin")
	}
	return out
}

// BenchmarkReadFileIdentity reads the build-ids of every ELF file in
// /usr/bin per iteration and reports files per second (page cache warm
// after the first iteration).
func BenchmarkReadFileIdentity(b *testing.B) {
	files := benchFiles(b)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	n := 0
	for b.Loop() {
		for _, f := range files {
			if _, err := ReadFileIdentity(f); err != nil {
				b.Fatal(err)
			}
			n++
		}
	}
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "files/s")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkReadelf is the reference: one `readelf -n` process per file,
// which is what a shell script checking build-ids does. It covers the
// first 100 files only; readelf is slow enough.
func BenchmarkReadelf(b *testing.B) {
	benchTool(b, "readelf", "-n")
}

// BenchmarkPerfBuildIDList runs `perf buildid-list -i FILE`, which prints
// an ELF file's build-id; it pays perf's start-up per file.
func BenchmarkPerfBuildIDList(b *testing.B) {
	benchTool(b, "perf", "buildid-list", "-i")
}

func benchTool(b *testing.B, tool string, args ...string) {
	if _, err := exec.LookPath(tool); err != nil {
		b.Skipf("%s not installed", tool)
	}
	files := benchFiles(b)
	if len(files) > 100 {
		files = files[:100]
	}
	b.ResetTimer()
	start := time.Now()
	n := 0
	for b.Loop() {
		for _, f := range files {
			if err := exec.Command(tool, append(args, f)...).Run(); err != nil {
				b.Fatalf("%s %v %s: %v", tool, args, f, err)
			}
			n++
		}
	}
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "files/s")
	b.ReportMetric(0, "ns/op")
}
