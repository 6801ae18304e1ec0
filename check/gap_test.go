package check

import (
	"context"
	"os"
	"strings"
	"testing"
)

// corpusFile returns a file of the shared corpus, skipping the test when
// the corpus is absent.
func corpusFile(t *testing.T, name string) string {
	t.Helper()
	p := "../../shared/corpus/" + name
	if _, err := os.Stat(p); err != nil {
		t.Skipf("shared corpus absent (%v): this test needs %s", err, name)
	}
	return p
}

// A pipe carries its OSRELEASE as a HEADER_FEATURE record, which is read
// only once the records start: the kernel's verdict must still use it.
// perf.data.piped.header_features-4.16 was recorded on 4.4.0-116-generic,
// without a kernel build-id.
func TestAnalyzeReaderKernelRelease(t *testing.T) {
	p := corpusFile(t, "perf.data.piped.header_features-4.16")
	if kernelRelease() == "4.4.0-116-generic" {
		t.Skip("this machine runs the recording's kernel release")
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := AnalyzeReader(context.Background(), f, p, Options{NoSymbols: true, BuildIDDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var k *DSO
	for _, d := range res.DSOs {
		if d.Kind == KindKernel {
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
