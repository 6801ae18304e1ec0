package main

import (
	"cmp"
	"encoding/json"
	"math"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// perfSamplesLine is perf report's "# Samples: 19  of event 'cpu-clock'".
var perfSamplesLine = regexp.MustCompile(`(?m)^# Samples: (\d+)\s+of event '([^']+)'`)

// The sample filters select the samples perf selects with the same
// flags: as many samples as perf script prints with them (perf report's
// own header counts hidden entries too), and the same user-space
// functions of 1% or more, with the same self share, as perf report
// --no-children shows (relative to the samples kept, perf's default).
// The recordings' leaf binaries are all verified.
func TestFiltersMatchPerf(t *testing.T) {
	t.Parallel()
	needPerf(t)
	symfs := ckSymfs(t)
	for _, tc := range []struct {
		file string
		args []string // the same for perf and perfcheck
	}{
		{"threads.data", []string{"--tid", "7527"}},
		{"threads.data", []string{"--tid", "7524"}},
		{"threads.data", []string{"--pid", "7524"}},
		{"threads.data", []string{"--comm", "cshared"}},
		{"threads.data", []string{"--dsos", "libhot.so"}},
		{"threads.data", []string{"--dso", "cshared"}},
		{"threads.data", []string{"--time", "10%/2"}},
		{"threads.data", []string{"--time", "10%/1,10%/3"}},
		{"threads.data", []string{"--time", "0%-10%,30%-60%"}},
		{"threads.data", []string{"--time", "367.55,367.65"}},
		{"threads.data", []string{"--time", ",367.6"}},
		{"threads.data", []string{"--time", "367.52,367.56 367.6,"}},
		{"forkexec.data", []string{"--comms", "forkparent"}},
		{"forkexec.data", []string{"--comm", "forkchild"}},
		{"forkexec.data", []string{"--pid", "7509"}},
		{"forkexec.data", []string{"--pid", "7507,7509", "--comm", "forkparent"}},
		{"forkexec.data", []string{"--dso", "forkchild"}},
	} {
		t.Run(tc.file+" "+strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			data := recordedAfterBins(t, ckFixture(t, tc.file))
			perfArgs := perfFilterArgs(tc.args)
			script := perfOut(t, append([]string{"script", "-F", "tid", "--symfs", symfs, "-i", data}, perfArgs...)...)
			wantSamples := uint64(strings.Count(script, "\n"))
			require.NotZero(t, wantSamples, "perf keeps no sample")
			tj := topWith(t, data, symfs, tc.args...)
			require.Len(t, tj.Events, 1)
			assert.Equal(t, wantSamples, tj.Events[0].Samples)
			want := perfSelfBy(perfOut(t, append([]string{"report", "--no-children", "--stdio", "-g", "none", "--percentage", "relative",
				"--sort", perfSortFor(tc.args), "--symfs", symfs, "-i", data}, perfArgs...)...))
			require.NotEmpty(t, want)
			assertSameSelf(t, want, tj.Events[0])
		})
	}
}

// -e keeps one event of several: the samples perf report counts for it,
// and its top functions.
func TestEventFilterMatchesPerf(t *testing.T) {
	t.Parallel()
	needPerf(t)
	symfs := ckSymfs(t)
	data := recordedAfterBins(t, ckFixture(t, "twoevents.data"))
	report := perfOut(t, "report", "--no-children", "--stdio", "-g", "none", "--sort", "sym", "--symfs", symfs, "-i", data)
	counts := map[string]uint64{}
	for _, m := range perfSamplesLine.FindAllStringSubmatch(report, -1) {
		n, _ := strconv.ParseUint(m[1], 10, 64)
		counts[m[2]] = n
	}
	require.Len(t, counts, 2)
	for ev, n := range counts {
		for _, flag := range []string{"-e", "--event"} {
			tj := topWith(t, data, symfs, flag, ev)
			require.Len(t, tj.Events, 1, ev)
			assert.Equal(t, ev, tj.Events[0].Event)
			assert.Equal(t, n, tj.Events[0].Samples, ev)
		}
	}
	tj := topWith(t, data, symfs, "-e", "cpu-clock")
	section := report[strings.Index(report, "of event 'cpu-clock'"):]
	section = section[:strings.Index(section, "# Samples:")]
	assertSameSelf(t, parsePerfSelf(section, 1), tj.Events[0])
}

// perfSortFor is the sort key of a perf report that applies args' filters
// to each sample: perf filters threads, comms and DSOs by the histogram
// entry, which holds one thread's, comm's and DSO's samples only when
// that is part of its key.
func perfSortFor(args []string) string {
	key := "sym"
	for _, a := range args {
		switch a {
		case "--tid", "--pid":
			key = "pid," + key
		case "--comm", "--comms":
			key = "comm," + key
		case "--dso", "--dsos":
			key = "dso," + key
		}
	}
	return key
}

// perfEntryLine is a line of perf report --stdio -g none whose last key
// is sym: "    26.70%     7527:cshared  [.] lib_mix".
var perfEntryLine = regexp.MustCompile(`^\s+([0-9.]+)%\s.*\[(.)\]\s+(\S.*?)\s*$`)

// perfSelfBy sums perf report's user-space entries by function (an entry
// per thread, comm or DSO and function) and returns those of 1% or more,
// the largest first, with the rounding each summed entry brings.
func perfSelfBy(out string) []perfEntry {
	sum := map[string]float64{}
	parts := map[string]int{}
	var order []string
	for _, l := range strings.Split(out, "\n") {
		m := perfEntryLine.FindStringSubmatch(l)
		if m == nil || m[2] != "." {
			continue
		}
		pct, _ := strconv.ParseFloat(m[1], 64)
		if _, seen := sum[m[3]]; !seen {
			order = append(order, m[3])
		}
		sum[m[3]] += pct
		parts[m[3]]++
	}
	var es []perfEntry
	for _, n := range order {
		if sum[n] >= 1 {
			es = append(es, perfEntry{pct: sum[n], name: n, parts: parts[n]})
		}
	}
	slices.SortStableFunc(es, func(a, b perfEntry) int { return cmp.Compare(b.pct, a.pct) })
	return es
}

// perfFilterArgs spells args as perf 6.1 takes them: --comm and --dso are
// perfcheck's singular spellings of perf's --comms and --dsos (perf takes
// the prefixes too, but --dso is ambiguous there with --dsos... only in
// name: it resolves to --dsos).
func perfFilterArgs(args []string) []string {
	out := append([]string(nil), args...)
	for i, a := range out {
		switch a {
		case "--comm":
			out[i] = "--comms"
		case "--dso":
			out[i] = "--dsos"
		}
	}
	return out
}

// topWith runs perfcheck top --json on data with args and returns what
// it printed.
func topWith(t *testing.T, data, symfs string, args ...string) topJSON {
	t.Helper()
	out, errs, code := ckRun(t, append(append(append([]string{"top", "--json", "-n", "0", "--symfs", symfs}, ckHermetic(t)...), args...), data)...)
	require.Equal(t, exitOK, code, errs)
	var tj topJSON
	require.NoError(t, json.Unmarshal([]byte(out), &tj))
	return tj
}

// assertSameSelf checks that every user-space entry of perf's is in ev
// with the same self share, to perf's two decimals.
func assertSameSelf(t *testing.T, want []perfEntry, ev topEvent) {
	t.Helper()
	got := map[string]float64{}
	for _, e := range ev.Entries {
		if !e.Group {
			got[e.Name] += e.SelfPct
		}
	}
	for _, w := range want {
		g, ok := got[w.name]
		if assert.True(t, ok, "%s (%.2f%% in perf report) missing from perfcheck top", w.name, w.pct) {
			assert.LessOrEqual(t, math.Abs(g-w.pct), 0.0051*float64(max(w.parts, 1)), "%s: self %.4f%%, perf report %.2f%%", w.name, g, w.pct)
		}
	}
	if len(want) > 0 && len(ev.Entries) > 0 {
		assert.Equal(t, want[0].name, ev.Entries[0].Name, "the top entry")
	}
}

// A filter the recording cannot answer, or one mistyped, says why and
// exits 2, on every command that reads samples.
func TestFilterErrors(t *testing.T) {
	t.Parallel()
	fx := ckFixture(t, "twoevents.data")
	pipe := ckFixture(t, "pipe.data")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--pid", "12x", fx}, `--pid 12x: "12x" is not a number or a range N-M` + "\nusage: "},
		{[]string{"--tid", "1-3", fx}, `--tid 1-3: "1-3" is not a number` + "\nusage: "},
		{[]string{"--cpu", "3-1", fx}, `--cpu 3-1: "3-1" is not a number or a range N-M` + "\nusage: "},
		{[]string{"-e", "cycles", fx}, fx + `: no event "cycles"; the recording's events are cpu-clock, page-faults` + "\n"},
		{[]string{"--cpu", "0", fx}, fx + ": the samples hold no CPU (perf record -a or --sample-cpu records it)\n"},
		{[]string{"--time", "10%/11", fx}, fx + `: --time 10%/11: "10%/11": want A%/N with N from 1 to 100/A` + "\n"},
		{[]string{"--time", "5%-120%", fx}, fx + `: --time 5%-120%: "120%": want a percentage from 0% to 100%` + "\n"},
		{[]string{"--time", "2,1", fx}, fx + `: --time 2,1: "2,1": END before START` + "\n"},
		{[]string{"--time", "1.2.3,", fx}, fx + `: --time 1.2.3,: "1.2.3": want SECONDS.NANOSECONDS` + "\n"},
		{[]string{"--time", "10%/1", pipe}, pipe + ": --time 10%/1: percentages need the first and last sample times, which the recording does not hold (a pipe-mode recording, or perf record --buildid-all without --timestamp-boundary)\n"},
	} {
		for _, cmd := range []string{"check", "top", "script", "pprof", "flamegraph"} {
			args := append([]string{cmd, "-o", "-"}, ckHermetic(t)...)
			if cmd == "check" || cmd == "top" || cmd == "script" {
				args = args[:1:1]
				args = append(args, ckHermetic(t)...)
			}
			_, errs, code := ckRun(t, append(args, tc.args...)...)
			assert.Equal(t, exitError, code, "%s %v", cmd, tc.args)
			assert.True(t, strings.HasPrefix(errs, "perfcheck "+cmd+": "+tc.want), "%s %v: %q", cmd, tc.args, errs)
		}
	}
}

// perf report refuses --cpu on the same recording for the same reason
// (and prints no report).
func TestCPUFilterWithoutCPUAsPerf(t *testing.T) {
	t.Parallel()
	needPerf(t)
	cmd := exec.Command("perf", "report", "--stdio", "-i", ckFixture(t, "twoevents.data"), "--cpu", "0")
	cmd.Env = append(cmd.Environ(), "LC_ALL=C", "HOME="+t.TempDir())
	out, _ := cmd.CombinedOutput() // perf 6.1 exits 0 all the same
	assert.Contains(t, string(out), "File does not contain CPU events")
	assert.NotContains(t, string(out), "# Samples")
}

// --cpu keeps the samples taken on the CPUs named, as perf does: on a
// recording made here with perf record --sample-cpu (the committed ones do
// not store the CPU), as many samples as perf script prints with the same
// --cpu, and the same top functions with the same self shares as perf
// report --cpu (what perf names by address, perfcheck leaves unnamed:
// splitUnnamed), for one CPU, a list and a range. The recorded program runs
// pinned once to each of the first two CPUs; the lookup is perf's
// (topLikePerf: the system libraries' debug files name libc's and ld.so's
// frames).
func TestCPUFilterMatchesPerf(t *testing.T) {
	t.Parallel()
	needPerf(t)
	dir := t.TempDir()
	for _, f := range []string{"cshared", "libhot.so"} {
		fixtures.CopyFile(t, filepath.Join(fixtureDir, "bin", f), filepath.Join(dir, f))
	}
	fixtures.NeedTool(t, "taskset")
	// One run of the program pinned to each of the first two CPUs, so
	// that each takes samples and --cpu 0 keeps some and leaves others.
	prog := filepath.Join(dir, "cshared")
	data := recordWithRetry(t, dir, "cpu.data", []string{"--sample-cpu", "-g", "-e", "cpu-clock:u", "-F", "999"},
		"sh", "-c", `taskset -c 0 "$0" 200 2 & taskset -c 1 "$0" 200 2; wait`, prog)
	all := uint64(strings.Count(perfOut(t, "script", "-F", "tid", "-i", data), "\n"))
	for _, cpus := range []string{"0", "1", "0-1", "0,1"} {
		t.Run(cpus, func(t *testing.T) {
			script := perfOut(t, "script", "-F", "tid", "--cpu", cpus, "-i", data)
			wantSamples := uint64(strings.Count(script, "\n"))
			require.NotZero(t, wantSamples, "perf keeps no sample on CPU %s", cpus)
			if cpus == "0" || cpus == "1" {
				require.Less(t, wantSamples, all, "every sample on CPU %s: the filter would keep them all", cpus)
			}
			tj := topLikePerf(t, data, "/", "--cpu", cpus)
			require.Len(t, tj.Events, 1)
			assert.Equal(t, wantSamples, tj.Events[0].Samples)
			want, unnamed := splitUnnamed(perfSelfBy(perfOut(t, "report", "--no-children", "--stdio", "-g", "none", "--percentage", "relative",
				"--sort", "sym", "--cpu", cpus, "-i", data)))
			require.NotEmpty(t, want)
			assertSameSelf(t, want, tj.Events[0])
			assertUnnamedGrouped(t, unnamed, tj.Events[0])
		})
	}
	tj := topLikePerf(t, data, "/")
	assert.Equal(t, all, tj.Events[0].Samples, "samples without --cpu")
}

// perfAddrName is how perf report names a frame it has no symbols for:
// its address, "0x0000000000000bcb".
var perfAddrName = regexp.MustCompile(`^0x[0-9a-f]+$`)

// splitUnnamed separates perf's entries named by address from those
// named by function. The program reads the clock through the vdso, and
// perf record -N caches no copy of it, so perf report names a vdso frame
// by its address; a run slowed down by other load takes few samples, so
// that one such frame reaches the 1% perfSelfBy keeps.
func splitUnnamed(es []perfEntry) (named, unnamed []perfEntry) {
	for _, e := range es {
		if perfAddrName.MatchString(e.name) {
			unnamed = append(unnamed, e)
		} else {
			named = append(named, e)
		}
	}
	return named, unnamed
}

// assertUnnamedGrouped checks that the share perf leaves unnamed is in ev
// unnamed too: under --symfs the running vdso does not stand for the
// recording's, so perfcheck groups its frames under the DSO instead of
// naming them. perf's entries below 1% are not counted, so the groups may
// hold more.
func assertUnnamedGrouped(t *testing.T, unnamed []perfEntry, ev topEvent) {
	t.Helper()
	if len(unnamed) == 0 {
		return
	}
	var want, got float64
	parts := 0
	for _, e := range unnamed {
		want += e.pct
		parts += max(e.parts, 1)
	}
	for _, e := range ev.Entries {
		if e.Group {
			got += e.SelfPct
		}
	}
	assert.GreaterOrEqual(t, got, want-0.0051*float64(parts), "perfcheck's unnamed (grouped) share, perf's unnamed entries %v", unnamed)
}

// recordWithRetry runs perf record -N -q with extra flags on argv into
// dir/name, with HOME=dir, and returns the recording's path. perf 6.1
// now and then dies of a signal in its build-id code: the recording is
// made again then, up to fixtures.PerfAttempts times.
func recordWithRetry(t *testing.T, dir, name string, extra []string, argv ...string) string {
	t.Helper()
	data := filepath.Join(dir, name)
	args := append(append(append([]string{"record", "-N", "-q", "-o", data}, extra...), "--"), argv...)
	for attempt := 1; ; attempt++ {
		cmd := exec.Command("perf", args...)
		cmd.Env = fixtures.PerfEnv(dir)
		b, err := cmd.CombinedOutput()
		if err == nil {
			return data
		}
		if !fixtures.PerfDied(err) || attempt == fixtures.PerfAttempts {
			t.Fatalf("perf %s: %v\n%s", strings.Join(args, " "), err, b)
		}
		t.Logf("perf record died (%v), attempt %d: recording again", err, attempt)
	}
}
