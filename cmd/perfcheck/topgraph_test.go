package main

import (
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
		{[]string{"--children", "--sort", "dso,sym"}, "--children orders functions by children: it does not go with --sort dso,sym"},
		{[]string{"--no-children", "--sort", "total"}, "--no-children orders by self: it does not go with --sort total"},
		{[]string{"-g", "both"}, "-g both: give caller or callee"},
		{[]string{"-g", "caller", "--children"}, "-g shows the stacks of each function's self time"},
		{[]string{"-g", "caller", "--sort", "dso"}, "-g shows the stacks of each function's self time"},
		{[]string{"--max-stack", "3"}, "--max-stack trims the call graph: give -g caller or -g callee"},
		{[]string{"-g", "callee", "--max-stack", "-1"}, "--max-stack -1: give 0 (all) or more"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			t.Parallel()
			_, errs, code := ckRun(t, append(append([]string{"top"}, c.args...), data)...)
			assert.Equal(t, exitError, code)
			assert.Contains(t, errs, "perfcheck top: "+c.want)
		})
	}
}
