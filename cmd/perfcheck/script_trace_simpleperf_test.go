package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// simpleperf writes a recording's tracepoint formats as the TRACING_DATA
// record that starts its data section, not as the TRACING_DATA feature;
// perfcheck script prints the payloads from it. perf 6.1 reads none of
// these files ("incompatible file format"), so what is printed is checked
// against what the recordings say otherwise: each sched_stat_runtime is
// emitted for the task that ran (its pid and comm are the sample's
// thread's, but where the kernel accounted another CPU's task), and each
// sched_switch switches from the sample's thread (prev_pid, prev_comm)
// to a task whose idle one is the CPU's swapper (next_pid 0 is
// swapper/CPU).
func TestScriptSimpleperfTracepoints(t *testing.T) {
	t.Parallel()
	line := regexp.MustCompile(`^\s*(.+?)\s+(\d+) \[(\d+)\] (sched:\w+): (.*)$`)
	read := func(t *testing.T, name string) [][]string {
		out, errs, code := runCmd(t, "script", "-F", "comm,tid,cpu,event,trace", "--buildid-dir", t.TempDir(), foreignFile(t, name))
		require.Contains(t, []int{exitOK, exitProblems}, code, errs)
		assert.NotContains(t, errs, "payload", "every payload is printed")
		var got [][]string
		for l := range strings.Lines(out) {
			if m := line.FindStringSubmatch(strings.TrimSuffix(l, "\n")); m != nil {
				got = append(got, m[1:])
			}
		}
		return got
	}

	t.Run("sched_stat_runtime", func(t *testing.T) {
		t.Parallel()
		payload := regexp.MustCompile(`^comm=(.+) pid=(\d+) runtime=\d+ \[ns\] vruntime=\d+ \[ns\]$`)
		samples := read(t, "simpleperf--perf_sched_stat_runtime.data")
		require.Len(t, samples, 2430, "the recording's samples")
		same := 0
		for _, s := range samples {
			m := payload.FindStringSubmatch(s[4])
			require.NotNil(t, m, "%q", s)
			if m[1] == s[0] && m[2] == s[1] {
				same++
			}
		}
		assert.Equal(t, 2426, same, "samples of the task whose runtime they account")
	})

	t.Run("sched_switch", func(t *testing.T) {
		t.Parallel()
		payload := regexp.MustCompile(`^prev_comm=(.+) prev_pid=(\d+) prev_prio=\d+ prev_state=(?:[SDTtZXxKWPN|]+|R)\+? ==> next_comm=(.+) next_pid=(\d+) next_prio=\d+$`)
		samples := read(t, "simpleperf--perf_with_tracepoint_event.data")
		require.Len(t, samples, 31, "the recording's sched_switch samples")
		idle := 0
		for _, s := range samples {
			m := payload.FindStringSubmatch(s[4])
			require.NotNil(t, m, "%q", s)
			assert.Equal(t, s[0], m[1], "prev_comm")
			assert.Equal(t, s[1], m[2], "prev_pid")
			if m[4] == "0" {
				cpu, err := strconv.Atoi(s[2])
				require.NoError(t, err)
				assert.Equal(t, "swapper/"+strconv.Itoa(cpu), m[3])
				idle++
			}
		}
		assert.Equal(t, 28, idle, "switches to the idle task")
	})
}
