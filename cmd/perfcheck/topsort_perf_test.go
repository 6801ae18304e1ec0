package main

import (
	"math"
	"path"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// perfSortedLine is a line of perf report --stdio -g none -n: the share,
// the samples, then the keys ("[.] " before a user-space symbol).
var perfSortedLine = regexp.MustCompile(`^\s+([0-9.]+)%\s+(\d+)\s+(\S.*?)\s*$`)

// top --sort with perf's keys groups as perf report --no-children --sort
// does: the same entries of --percent-limit or more, each with the same
// samples and share, the same one first. Kernel symbols are left out of
// the comparison: under --symfs the recording's kernel is not this
// host's, and perfcheck groups its frames instead of naming them.
func TestTopSortMatchesPerfReport(t *testing.T) {
	t.Parallel()
	needPerf(t)
	symfs := ckSymfs(t)
	for _, file := range []string{"threads.data", "forkexec.data", "cshared-fp.data"} {
		for _, keys := range []string{"comm", "pid", "dso", "sym", "dso,sym", "comm,dso", "pid,sym", "comm,pid,dso,sym", "sym,dso"} {
			for _, limit := range []string{"0.5", "5"} {
				t.Run(file+" "+keys+" "+limit, func(t *testing.T) {
					t.Parallel()
					data := recordedAfterBins(t, ckFixture(t, file))
					out := perfOut(t, "report", "--no-children", "--stdio", "-g", "none", "-n", "--sort", keys,
						"--percent-limit", limit, "--symfs", symfs, "-i", data)
					type line struct {
						pct     float64
						samples uint64
					}
					want := map[string]line{}
					first := ""
					for _, l := range strings.Split(out, "\n") {
						m := perfSortedLine.FindStringSubmatch(l)
						if m == nil || strings.Contains(m[3], "[k] ") {
							continue
						}
						label := strings.Join(strings.Fields(strings.ReplaceAll(m[3], "[.] ", "")), " ")
						pct, _ := strconv.ParseFloat(m[1], 64)
						n, _ := strconv.ParseUint(m[2], 10, 64)
						want[label] = line{pct, n}
						if first == "" {
							first = label
						}
					}
					require.NotEmpty(t, want)
					tj := topWith(t, data, symfs, "--sort", keys, "--percent-limit", limit, "-n", "0")
					require.Len(t, tj.Events, 1)
					got := map[string]line{}
					var gotFirst string
					for _, e := range tj.Events[0].Entries {
						if e.Group && e.DSO == "[kernel.kallsyms]" {
							continue // kernel groups: see above
						}
						label := perfLabel(keys, e)
						got[label] = line{e.SelfPct, e.SelfSamples}
						if gotFirst == "" {
							gotFirst = label
						}
					}
					assert.Equal(t, first, gotFirst, "the first entry")
					for l, w := range want {
						g, ok := got[l]
						if assert.True(t, ok, "%q (%.2f%% in perf report) missing from perfcheck top:\n%v", l, w.pct, got) {
							assert.Equal(t, w.samples, g.samples, l)
							assert.LessOrEqual(t, math.Abs(g.pct-w.pct), 0.0051, "%s: %.4f%%, perf %.2f%%", l, g.pct, w.pct)
						}
					}
					for l := range got {
						_, ok := want[l]
						assert.True(t, ok, "%q in perfcheck top, not in perf report", l)
					}
				})
			}
		}
	}
}

// perfLabel is e's keys as perf report prints them, one space apart.
func perfLabel(keys string, e topEntry) string {
	var parts []string
	for _, k := range strings.Split(keys, ",") {
		switch k {
		case "comm":
			parts = append(parts, e.Comm)
		case "pid":
			parts = append(parts, strconv.FormatUint(uint64(e.TID), 10)+":"+e.Comm)
		case "dso":
			parts = append(parts, path.Base(e.DSO))
		case "sym":
			parts = append(parts, e.Name)
		}
	}
	return strings.Join(parts, " ")
}

// --percent-limit leaves out the functions under the limit, of self by
// default and of total with --sort total, and says how many.
func TestTopPercentLimit(t *testing.T) {
	t.Parallel()
	symfs := ckSymfs(t)
	data := ckFixture(t, "cshared-fp.data")
	for _, by := range []string{"self", "total"} {
		all := topWith(t, data, symfs, "--sort", by)
		cut := topWith(t, data, symfs, "--sort", by, "--percent-limit", "10")
		require.Len(t, cut.Events, 1)
		var want []topEntry
		for _, e := range all.Events[0].Entries {
			if by == "self" && e.SelfPct >= 10 || by == "total" && e.TotalPct >= 10 {
				want = append(want, e)
			}
		}
		require.NotEmpty(t, want)
		assert.Equal(t, want, cut.Events[0].Entries, by)
		assert.Equal(t, len(all.Events[0].Entries)-len(want), cut.Events[0].BelowLimit, by)
		assert.NotZero(t, cut.Events[0].BelowLimit, by)
	}
	out, _, code := ckRun(t, append([]string{"top", "--percent-limit", "10", "--symfs", symfs, data}, ckHermetic(t)...)...)
	require.Equal(t, exitOK, code)
	assert.Regexp(t, `\(\d+ under --percent-limit 10%\)`, out)
}
