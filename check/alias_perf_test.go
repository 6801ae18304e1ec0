package check

import (
	"bufio"
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// clockLoop spends its time in libc's clock_gettime, which glibc's DWARF
// names by its hidden alias __GI___clock_gettime and perf by
// clock_gettime@@GLIBC_2.17, and in pthread_once, whose aliases
// pthread_once@GLIBC_2.2.5 and pthread_once@@GLIBC_2.34 perf cannot rank
// (same binding, underscores and length): it keeps the first in table
// order.
const clockLoop = `
#include <pthread.h>
#include <time.h>
static pthread_once_t once = PTHREAD_ONCE_INIT;
static void init(void) {}
int main(void) {
	struct timespec ts;
	long s = 0;
	for (long i = 0; i < 3000000; i++) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		s += ts.tv_nsec;
		for (int j = 0; j < 20; j++)
			pthread_once(&once, init);
	}
	return s == 1;
}
`

// Functions with several symbols at their address are named as perf
// names them: every libc frame perfcheck names has perf script's name
// at the same offset.
func TestRealAliasesAsPerf(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	bin := w.path("clockloop")
	w.gcc(bin, clockLoop)
	data := w.record("clock.data", []string{"-N"}, bin)
	out := w.output("perf", "script", "-i", data, "-F", "ip,sym,dso", "--no-inline")
	frame := regexp.MustCompile(`^\s*([0-9a-f]+)\s+(\S+)\s+\((.*libc\.so[^)]*)\)\s*$`)
	perfName := map[uint64]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if m := frame.FindStringSubmatch(sc.Text()); m != nil {
			off, err := strconv.ParseUint(m[1], 16, 64)
			require.NoError(t, err)
			perfName[off] = m[2]
		}
	}
	require.NotEmpty(t, perfName, "perf script shows libc frames")
	res := w.analyze(data, Options{Replay: true})
	compared, clock, once := 0, 0, 0
	for _, l := range res.Locations {
		want, ok := perfName[l.Offset]
		if !ok || !strings.Contains(l.DSO.Path, "libc.so") || len(l.Frames) == 0 || want == "[unknown]" {
			continue
		}
		compared++
		got := l.Frames[len(l.Frames)-1].Function
		assert.Equal(t, want, got, "libc+%#x", l.Offset)
		if strings.Contains(want, "clock_gettime") {
			clock++
		}
		if strings.HasPrefix(want, "pthread_once@") {
			once++
		}
	}
	require.NotZero(t, clock, "the recording must have samples in libc's clock_gettime")
	require.NotZero(t, once, "the recording must have samples in libc's pthread_once")
	t.Logf("%d libc locations named as perf names them", compared)
}
