package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// In a call graph, the frames of an untrusted binary are one node per
// frame labelled with the verdict and the binary, never named; the text
// prints them under their entry, indented as graph lines.
func TestTopGraphLabelsUntrusted(t *testing.T) {
	t.Parallel()
	symfs := ckSymfs(t)
	data := ckFixture(t, "forkexec.data")
	tj := topWith(t, data, symfs, "-g", "callee")
	require.Len(t, tj.Events, 1)
	untrusted := 0
	var walk func([]graphNode)
	walk = func(nodes []graphNode) {
		for _, n := range nodes {
			if !n.Trusted {
				untrusted++
				assert.Empty(t, n.Name, "an untrusted frame is named: %+v", n)
				assert.NotEqual(t, "verified", n.Verdict)
			}
			walk(n.Children)
		}
	}
	for _, e := range tj.Events[0].Entries {
		walk(e.Graph)
	}
	require.NotZero(t, untrusted, "forkexec.data has kernel frames of a kernel that is not this one")

	out, errs, code := ckRun(t, append([]string{"top", "-g", "callee", "-n", "0", "--symfs", symfs, data}, ckHermetic(t)...)...)
	require.Equal(t, exitOK, code, errs)
	assert.Regexp(t, `(?m)^ {4,}\s*\d+\.\d\d%  \[mismatch\] \[kernel\.kallsyms\]$`, out)
}

// --children prints perf's Children and Self columns, children first.
func TestTopChildrenColumns(t *testing.T) {
	t.Parallel()
	symfs := ckSymfs(t)
	out, errs, code := ckRun(t, append([]string{"top", "--children", "--symfs", symfs, ckFixture(t, "cshared-fp.data")}, ckHermetic(t)...)...)
	require.Equal(t, exitOK, code, errs)
	assert.Regexp(t, `(?m)^CHILDREN +SELF +SAMPLES  FUNCTION$`, out)
	assert.Regexp(t, `(?m)^ +\d+\.\d\d% +0\.00% +0  main \(`, out, "main has children and no self time")
}

// Ordering and call-graph flags that do not go together are refused with
// the reason.
func TestTopModeUsageErrors(t *testing.T) {
	t.Parallel()
	data := ckFixture(t, "cshared-fp.data")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--children", "--no-children"}, "--children and --no-children: give one"},
		{[]string{"--no-children", "--sort", "total"}, "--no-children orders by self: it does not go with --sort total"},
		{[]string{"-g", "both"}, `-g both: "both" is not a mode (graph, fractal, flat, folded, none) or an order (caller, callee)`},
		{[]string{"-g", "fractal,0.5,caller"}, `-g fractal,0.5,caller: "0.5" is not a mode (graph, fractal, flat, folded, none) or an order (caller, callee)`},
		{[]string{"-g", "none,callee", "--children", "--max-stack", "3"}, "--max-stack with -g none,callee: give -g callee to keep the frames nearest the leaf"},
		{[]string{"--max-stack", "3"}, "--max-stack cuts the stacks of the call graph and of children: give -g or --children"},
		{[]string{"-g", "none", "--max-stack", "3"}, "--max-stack cuts the stacks of the call graph and of children: give -g or --children"},
		{[]string{"--max-stack", "0"}, "--max-stack cuts the stacks of the call graph and of children: give -g or --children"},
		{[]string{"--sort", "dso", "--max-stack", "-1"}, "--max-stack cuts the stacks of the call graph and of children: give -g or --children"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			t.Parallel()
			_, errs, code := ckRun(t, append(append([]string{"top"}, c.args...), data)...)
			assert.Equal(t, exitError, code)
			assert.Contains(t, errs, "perfcheck top: "+c.want)
		})
	}
}

// The text of -g flat and folded prints each call chain --json lists,
// with its share, under its entry: flat as the share and then its frames
// one per line, folded as one line; --children prints the graphs under
// its rows.
func TestTopGraphChainsText(t *testing.T) {
	t.Parallel()
	symfs := ckSymfs(t)
	data := ckFixture(t, "cshared-fp.data")
	tj := topWith(t, data, symfs, "-g", "folded,caller", "-n", "3")
	require.Len(t, tj.Events, 1)
	blocks := map[string][]string{} // each entry's text, by mode
	for _, e := range tj.Events[0].Entries {
		require.NotEmpty(t, e.Chains, e.Name)
		assert.Empty(t, e.Graph, "flat and folded have chains, not a graph")
		folded := e.label() + "\n"
		flat := e.label() + "\n"
		for _, c := range e.Chains {
			folded += fmt.Sprintf("%.2f%% %s\n", c.Percent, strings.Join(c.Frames, ";"))
			flat += fmt.Sprintf("%11.2f%%\n", c.Percent)
			for _, f := range c.Frames {
				flat += fmt.Sprintf("%16s%s\n", "", f)
			}
		}
		blocks["folded"] = append(blocks["folded"], folded)
		blocks["flat"] = append(blocks["flat"], flat)
	}
	for mode, want := range blocks {
		out, errs, code := ckRun(t, append([]string{"top", "-g", mode + ",caller", "-n", "3", "--symfs", symfs, data}, ckHermetic(t)...)...)
		require.Equal(t, exitOK, code, errs)
		for _, b := range want {
			assert.Contains(t, out, b, mode)
		}
	}

	out, errs, code := ckRun(t, append([]string{"top", "--children", "-g", "caller", "--symfs", symfs, data}, ckHermetic(t)...)...)
	require.Equal(t, exitOK, code, errs)
	assert.Regexp(t, `(?m)^ +\d+\.\d\d% +0\.00% +0  main \(.*\n {6}\d+\.\d\d%  main \(.*\n {6}\d+\.\d\d%  worker \(`, out)
}

// The text of -g fractal prints the "[...]" line of a node's callees
// (--json's rest_percent) after them, on their column: in cshared-fp.data
// with --children and --percent-limit 5, do_work's callees under main
// leave out some of its samples.
func TestTopFractalRestText(t *testing.T) {
	t.Parallel()
	symfs := ckSymfs(t)
	data := ckFixture(t, "cshared-fp.data")
	args := []string{"--children", "-g", "fractal,caller", "--percent-limit", "5", "-n", "0"}
	tj := topWith(t, data, symfs, args...)
	require.Len(t, tj.Events, 1)
	var main *topEntry
	for i, e := range tj.Events[0].Entries {
		switch e.Name {
		case "main":
			main = &tj.Events[0].Entries[i]
		case "do_work":
			require.Zero(t, e.SelfSamples, "do_work has no self time: its samples are its callees'")
		}
	}
	require.NotNil(t, main)
	// main, worker: one chain; then do_work among worker's callees.
	require.Len(t, main.Graph, 1)
	require.Len(t, main.Graph[0].Children, 1)
	var doWork *graphNode
	for i, n := range main.Graph[0].Children[0].Children {
		if n.Name == "do_work" {
			doWork = &main.Graph[0].Children[0].Children[i]
		}
	}
	require.NotNil(t, doWork)
	require.NotZero(t, doWork.Rest, "do_work's callees under 5%% are left out")
	var sum uint64
	for _, c := range doWork.Children {
		sum += c.Period
	}
	assert.Equal(t, doWork.Period, sum+doWork.Rest, "the rest and the callees make do_work's samples")

	out, errs, code := ckRun(t, append(append([]string{"top", "--symfs", symfs, data}, args...), ckHermetic(t)...)...)
	require.Equal(t, exitOK, code, errs)
	last := doWork.Children[len(doWork.Children)-1]
	// The last callee's line (and its callees', further in), then the rest
	// on the callees' column.
	// do_work is on the column of worker's callees (4), its callees two
	// further in.
	assert.Regexp(t, fmt.Sprintf(`(?m)^ {6}%7.2f%%  %s \(.*\n(?: {8,}\S.*\n)* {6}%7.2f%%  \[\.\.\.\]\n`,
		last.Percent, regexp.QuoteMeta(last.Name), doWork.RestPct), out)
	assert.InDelta(t, 100*float64(doWork.Rest)/float64(doWork.Period), doWork.RestPct, 1e-9, "a share of do_work's callees")
}
