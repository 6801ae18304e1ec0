package check

import (
	"context"
	"testing"

	"github.com/perfcheck/perfcheck/dso"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// clockProg spends its time in clock_gettime, which the vdso serves.
const clockProg = `#include <time.h>
static volatile long sink;
__attribute__((noinline)) static long now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_nsec;
}
int main(void) { for (long i = 0; i < 20000000; i++) sink += now(); return 0; }
`

// --call-graph dwarf through the vdso: a sample taken in clock_gettime's
// vdso code unwinds with the vdso's own CFI into the program that called
// it, as perf does, from a file (whose build-id table names the vdso) and
// from a pipe (which names none: the running vdso stands for it, the
// recording being this machine's kernel). Each reading also names the vdso
// frame.
func TestRealDwarfUnwindThroughVDSO(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	bin := w.path("clock")
	w.gcc(bin, clockProg, "-fomit-frame-pointer")
	readings := map[string]*Result{
		"file": w.analyze(w.record("vdso.data", []string{"--call-graph", "dwarf"}, bin), Options{Replay: true}),
		"pipe": w.recordPipe(w.path("vdso-pipe.data"), bin, Options{Replay: true}),
	}
	for name, res := range readings {
		var inVDSO, through, named int
		require.NoError(t, res.EachSample(context.Background(), func(s *Sample) error {
			locs := s.Stack.Locations()
			if len(locs) == 0 || locs[0].DSO.Kind != dso.VDSO {
				return nil
			}
			inVDSO++
			if len(locs[0].Frames) > 0 {
				named++
			}
			for _, l := range locs[1:] {
				if l.DSO.Path == bin {
					through++
					break
				}
			}
			return nil
		}))
		t.Logf("%s: %d samples in the vdso, %d unwound into the program, %d named", name, inVDSO, through, named)
		require.NotZero(t, inVDSO, "%s: no sample in the vdso", name)
		assert.Equal(t, inVDSO, through, "%s: samples in the vdso not unwound into the program", name)
		assert.Equal(t, inVDSO, named, "%s: vdso frames left unnamed", name)
	}
}
