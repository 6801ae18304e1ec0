package check

import (
	"context"
	"debug/elf"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/dso"
)

// sinLoop calls libm's sin through the PLT; the argument is volatile so
// that the compiler cannot fold the calls away.
const sinLoop = `
#include <cmath>
#include <cstdio>
volatile double in = 0.5;
int main() {
	double s = 0;
	for (long i = 0; i < 40000000; i++) s += std::sin(in + i);
	std::printf("%f\n", s);
	return 0;
}
`

// Samples in a PLT stub unwind through its CFA expression
// (DW_CFA_def_cfa_expression, which GNU ld writes for .plt) to main and
// _start, frame for frame as perf script unwinds them.
func TestRealDwarfUnwindThroughPLT(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	if _, err := exec.LookPath("g++"); err != nil {
		t.Skip("g++ not installed")
	}
	bin := w.path("sinloop")
	src := w.path("sinloop.cc")
	require.NoError(t, os.WriteFile(src, []byte(sinLoop), 0o644))
	w.run(nil, "g++", "-O2", "-fomit-frame-pointer", "-o", bin, src)
	ef, err := elf.Open(bin)
	require.NoError(t, err)
	var plt [][2]uint64 // file offset ranges of the PLT sections
	for _, s := range ef.Sections {
		if strings.HasPrefix(s.Name, ".plt") {
			plt = append(plt, [2]uint64{s.Offset, s.Offset + s.Size})
		}
	}
	ef.Close()
	require.NotEmpty(t, plt, "the program has a PLT")
	inPLT := func(off uint64) bool {
		for _, r := range plt {
			if off >= r[0] && off < r[1] {
				return true
			}
		}
		return false
	}
	data := w.record("plt.data", []string{"-N", "--call-graph", "dwarf"}, bin)
	want := map[sampleKey][]string{}
	for _, s := range perfScriptStacks(t, w, data) {
		want[sampleKey{s.tid, s.time}] = s.frames
	}
	res := w.analyze(data, Options{Replay: true})
	mustDSO(t, res, bin, Verified)
	inStub, same := 0, 0
	res.EachSample(context.Background(), func(s *Sample) error {
		var got []string
		var leaf *Location
		for _, l := range s.Stack.Locations() {
			if l.DSO.Kind == dso.Kernel || l.DSO.Kind == dso.Unknown {
				continue
			}
			if leaf == nil {
				leaf = l
			}
			got = append(got, dso.BaseName(l.DSO.Path)+"+0x"+strconv.FormatUint(l.Offset, 16))
		}
		if leaf == nil || leaf.DSO.Path != bin || !inPLT(leaf.Offset) {
			return nil
		}
		inStub++
		wnt := want[sampleKey{int32(s.TID), s.Time}]
		require.Greater(t, len(wnt), 2, "perf script unwinds a PLT sample past main")
		if assert.Equal(t, wnt, got, "tid %d time %d", s.TID, s.Time) {
			same++
		}
		return nil
	})
	t.Logf("%d samples in the PLT, %d unwound as perf script does", inStub, same)
	require.GreaterOrEqual(t, inStub, 3, "the recording must hold samples in the PLT")
}
