//go:build linux

package symbolize

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestMappedFileTruncated symbolizes from a binary whose .gopclntab is
// mapped, then truncates the file in place (as cp onto a running binary
// does): lookups that reach the vanished pages must fail with ErrMalformed
// instead of killing the process with SIGBUS, and the binary still closes.
func TestMappedFileTruncated(t *testing.T) {
	objcopy := needTool(t, "objcopy")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "bin")
	copyTestFile(t, self, p)
	// Without DWARF the Go pclntab answers, read through its mapping.
	if o, err := exec.Command(objcopy, "--strip-debug", p).CombinedOutput(); err != nil {
		t.Fatalf("objcopy --strip-debug: %v\n%s", err, o)
	}
	addrs := textAddrs(t, p, 200)
	b, err := Open(p, Options{NoDebugFile: true})
	if err != nil {
		t.Fatal(err)
	}
	if fr, err := b.Frames(addrs[0], nil); err != nil || len(fr) == 0 {
		t.Fatalf("before truncation: %v, %v", fr, err)
	}
	if g := b.loadGo(); g == nil || g.inline == nil || !g.inline.mapped {
		t.Fatal(".gopclntab is not mapped: the test would not exercise a fault")
	}
	if err := os.Truncate(p, 0); err != nil {
		t.Fatal(err)
	}
	faults := 0
	for _, a := range addrs {
		_, err := b.Frames(a, nil)
		if errors.Is(err, ErrMalformed) {
			faults++
		}
	}
	if faults == 0 {
		t.Fatal("no lookup reported the truncated file")
	}
	t.Logf("%d of %d lookups failed with ErrMalformed after truncation", faults, len(addrs))
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Frames(addrs[0], nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v, want ErrClosed", err)
	}
}
