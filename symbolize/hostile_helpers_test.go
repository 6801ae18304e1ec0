package symbolize

import (
	"context"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/perfcheck/perfcheck/internal/fixtures"
	"github.com/stretchr/testify/require"
)

// The hostile inputs of these tests are real fixtures edited in test code:
// a section's contents replaced or a section added by elfWithSection, or
// bytes of a table overwritten in place. Each test says which fixture and
// which edit.

// fixtureBin returns the contents of testdata/perf/bin/name, a binary
// perfcheck's recordings profiled (docs/fixtures.md).
func fixtureBin(t testing.TB, name string) []byte {
	t.Helper()
	d, err := os.ReadFile(filepath.Join("..", "testdata", "perf", "bin", name))
	require.NoError(t, err)
	return d
}

// hostileRun is what the child of runHostile reported.
type hostileRun struct {
	out      string               // what it printed: the open error, warnings and lookup errors
	mem      fixtures.ChildMemory // what it reported of its memory at its end
	elapsed  time.Duration        // wall time, start to exit
	exitErr  error                // nil when it exited 0
	inputLen int64                // the input file's size
}

// hostileAddrs is how many addresses the child looks up across the
// input's executable sections.
const hostileAddrs = 400

// childASLimit caps the child's address space: an input that makes the
// symbolizer allocate without bound kills the child (a failed test), not
// the machine the tests share.
const childASLimit = 3 << 30

// runHostile writes data to a file and has a child process (this test
// binary again, running TestHostileChild) do what perfcheck symbolize
// does with it: open it, list its warnings and look addresses up. It
// returns the child's output, peak RSS and time.
func runHostile(t *testing.T, name string, data []byte) hostileRun {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, data, 0o755))
	// Killed far past the time bound: an input that hangs the
	// symbolizer fails the test rather than hanging it, and a loaded
	// machine does not.
	ctx, cancel := context.WithTimeout(context.Background(), hangTime)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHostileChild$", "-test.v")
	mem := filepath.Join(t.TempDir(), "memory")
	cmd.Env = append(os.Environ(), "SYMBOLIZE_HOSTILE_CHILD="+p, fixtures.ChildMemoryEnv+"="+mem)
	start := time.Now()
	outb, err := cmd.CombinedOutput()
	r := hostileRun{out: string(outb), elapsed: time.Since(start), exitErr: err, inputLen: int64(len(data))}
	r.mem, _ = fixtures.ReadChildMemory(mem)
	t.Logf("%s (%d bytes): %v, peak %d MB (Go runtime: %d MB), %v:\n%s", name, len(data), err, r.mem.PeakRSS>>20, r.mem.GoMapped>>20,
		r.elapsed.Round(time.Millisecond), head(r.out, 1500))
	return r
}

// requireBounded checks the bounds every hostile input must meet: the
// child exited normally, within the memory bound on the input's size
// (fixtures.AssertMemoryBound: 256 MB plus four times the input, for the
// memory its Go runtime mapped and, but for the race detector's share,
// for its peak RSS). Its time (30 s is the bound) is logged, not
// asserted: runHostile kills a child that hangs far past it.
func requireBounded(t *testing.T, r hostileRun) {
	t.Helper()
	require.NoError(t, r.exitErr, "the child died:\n%s", head(r.out, 3000))
	require.True(t, fixtures.AssertMemoryBound(t, r.mem, r.inputLen))
}

// hangTime is when runHostile gives up on a child: ten times the 30 s
// a run on a hostile input may take.
const hangTime = 300 * time.Second

func head(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// TestHostileChild is runHostile's child; it does nothing in a normal run.
func TestHostileChild(t *testing.T) {
	p := os.Getenv("SYMBOLIZE_HOSTILE_CHILD")
	if p == "" {
		t.Skip("the child of runHostile")
	}
	require.NoError(t, fixtures.LimitAddressSpace(childASLimit))
	defer func() { require.NoError(t, fixtures.WriteChildMemory()) }()
	b, err := Open(p, Options{NoDebugFile: true})
	if err != nil {
		fmt.Println("open:", err)
		return
	}
	defer b.Close()
	var code [][2]uint64
	for _, s := range b.ef.Sections {
		if s.Flags&elf.SHF_EXECINSTR != 0 && s.Size > 0 {
			code = append(code, [2]uint64{s.Addr, s.Addr + s.Size})
		}
	}
	var buf []Frame
	errs := map[string]int{}
	for _, r := range code {
		step := max((r[1]-r[0])/(hostileAddrs/uint64(len(code))+1), 1)
		for a := r[0]; a < r[1]; a += step {
			if buf, err = b.Frames(a, buf); err != nil {
				errs[err.Error()]++
			}
		}
	}
	for e, n := range errs {
		fmt.Printf("lookup error (%d times): %s\n", n, e)
	}
	// After the lookups: a unit that cannot be decoded is warned of
	// when a lookup first needs it.
	for _, w := range b.Warnings() {
		fmt.Println("warning:", w)
	}
}
