package symbolize

import (
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// TestDecodedBudget symbolizes the same addresses of a C program of
// thirteen compilation units, with DWARF, without a bound and under decoded-DWARF
// budgets that force units out and back in, sequentially and from several
// goroutines: every answer must be the same, units must have been
// evicted, and what stays decoded must fit the budget but for the unit
// being decoded.
func TestDecodedBudget(t *testing.T) {
	t.Parallel()
	p := buildMultiUnit(t)
	addrs := textAddrs(t, p, 3000)
	answers := func(b *Binary) [][]Frame {
		out := make([][]Frame, len(addrs))
		for i, a := range addrs {
			fr, err := b.Frames(a, nil)
			if err != nil && err != ErrUnknownAddr {
				t.Fatalf("%#x: %v", a, err)
			}
			out[i] = fr
		}
		return out
	}
	ref := mustOpenOpts(t, p, Options{MaxDecodedDWARF: -1})
	want := answers(ref)
	rx := ref.loadDWARF()
	if rx == nil || len(rx.units) < 13 {
		t.Fatalf("%s: DWARF with 13 units needed", p)
	}
	var maxUnit int64
	for i := range rx.units {
		if ui := rx.units[i].info.Load(); ui != nil {
			maxUnit = max(maxUnit, ui.size)
		}
	}
	if rx.evictions != 0 {
		t.Fatalf("unbounded index evicted %d units", rx.evictions)
	}
	for _, budget := range []int64{1, rx.used / 3} {
		b := mustOpenOpts(t, p, Options{MaxDecodedDWARF: budget})
		if got := answers(b); !reflect.DeepEqual(got, want) {
			for i := range got {
				if !reflect.DeepEqual(got[i], want[i]) {
					t.Fatalf("budget %d: %#x: %s, unbounded %s", budget, addrs[i], fmtOurs(got[i]), fmtOurs(want[i]))
				}
			}
		}
		// Concurrent lookups while units come and go.
		var wg sync.WaitGroup
		errs := make(chan string, 4)
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := g; i < len(addrs); i += 4 {
					fr, _ := b.Frames(addrs[i], nil)
					if !reflect.DeepEqual(fr, want[i]) {
						errs <- fmtOurs(fr) + " != " + fmtOurs(want[i])
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Errorf("budget %d, concurrent: %s", budget, e)
		}
		x := b.loadDWARF()
		x.mu.Lock()
		used, ev := x.used, x.evictions
		x.mu.Unlock()
		if ev == 0 {
			t.Errorf("budget %d: no unit evicted (unbounded: %d bytes)", budget, rx.used)
		}
		if used > budget+maxUnit {
			t.Errorf("budget %d: %d bytes decoded, more than the budget and the largest unit (%d)", budget, used, maxUnit)
		}
		t.Logf("budget %d: %d evictions, %d bytes decoded at the end (unbounded %d)", budget, ev, used, rx.used)
	}
}

// buildMultiUnit compiles a C program of thirteen compilation units, twelve
// of them with an inlined helper each, and returns its path.
func buildMultiUnit(t *testing.T) string {
	t.Helper()
	return buildUnits(t, 12)
}

// buildUnits compiles a C program of n+1 compilation units, n of them
// with an inlined helper each, and returns its path.
func buildUnits(t *testing.T, n int) string {
	t.Helper()
	gcc := needTool(t, "gcc")
	// Units each with an inlined helper, so that lookups have inline
	// chains and every unit decodes quickly.
	dir := t.TempDir()
	args := []string{"-O2", "-g", "-o", filepath.Join(dir, "multi")}
	var mainSrc strings.Builder
	mainSrc.WriteString("#include <stdio.h>\n")
	for i := range n {
		f := filepath.Join(dir, fmt.Sprintf("u%d.c", i))
		os.WriteFile(f, []byte(fmt.Sprintf(`static inline int sq%[1]d(int v) { return v * v + %[1]d; }
int f%[1]d(int n) { int s = 0; for (int k = 0; k < n; k++) s += sq%[1]d(k) ^ (s >> 3); return s; }
`, i)), 0o644)
		args = append(args, f)
		fmt.Fprintf(&mainSrc, "int f%d(int);\n", i)
	}
	mainSrc.WriteString("int main(int argc, char **argv) { int s = 0;\n")
	for i := range n {
		fmt.Fprintf(&mainSrc, "s += f%d(argc * 100);\n", i)
	}
	mainSrc.WriteString("printf(\"%d\\n\", s); return 0; }\n")
	mf := filepath.Join(dir, "main.c")
	os.WriteFile(mf, []byte(mainSrc.String()), 0o644)
	args = append(args, mf)
	if o, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, o)
	}
	p := filepath.Join(dir, "multi")
	return p
}

func mustOpenOpts(t *testing.T, p string, o Options) *Binary {
	t.Helper()
	b, err := Open(p, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// TestEvictionGivesBackMemory symbolizes a program of 201 small units
// under a budget of a quarter of its decoded DWARF, so that units are
// evicted and decoded again thousands of times, and checks that the heap
// grows by little more than the budget: an evicted unit's memory must go
// with it (with names and tables carved from shared chunks, each unit
// decoded again kept chunks of its own alive: 11 MB for 107 kB of budget).
func TestEvictionGivesBackMemory(t *testing.T) {
	if raceEnabled {
		t.Skip("heap figures are the race detector's too; TestDecodedBudget runs eviction under it")
	}
	p := buildUnits(t, 200)
	addrs := textAddrs(t, p, 4000)
	ref := mustOpenOpts(t, p, Options{MaxDecodedDWARF: -1})
	for _, a := range addrs {
		ref.Frames(a, nil)
	}
	total := ref.loadDWARF().used
	budget := total / 4
	b := mustOpenOpts(t, p, Options{MaxDecodedDWARF: budget})
	b.Warnings()
	heap := func() int64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	before := heap()
	r := rand.New(rand.NewSource(1))
	var buf []Frame
	for range 5 {
		for _, i := range r.Perm(len(addrs)) {
			buf, _ = b.Frames(addrs[i], buf)
		}
	}
	grew := heap() - before
	x := b.loadDWARF()
	x.mu.Lock()
	ev := x.evictions
	x.mu.Unlock()
	if ev < 1000 {
		t.Fatalf("%d evictions: the test would check little", ev)
	}
	t.Logf("%d units, %d bytes decoded unbounded, budget %d: %d evictions, heap grew %d bytes", len(x.units), total, budget, ev, grew)
	if limit := 4*budget + 1<<20; grew > limit {
		t.Errorf("heap grew by %d bytes under a budget of %d (limit %d): evicted units' memory kept", grew, budget, limit)
	}
	runtime.KeepAlive(ref)
	runtime.KeepAlive(b)
}
