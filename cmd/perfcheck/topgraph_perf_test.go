package main

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// perfChildrenLine is a line of perf report --children --stdio -g none -n:
// children, self, samples, then the symbol.
var perfChildrenLine = regexp.MustCompile(`^\s+([0-9.]+)%\s+([0-9.]+)%\s+(\d+)\s+(\S.*?)\s*$`)

// top --children lists what perf report --children --sort sym does: the
// same functions of --percent-limit or more (of children), each with the
// same children and self shares and self samples, in the same order of
// children. Kernel symbols and the addresses perf cannot name are left
// out: perfcheck groups those frames by DSO (TestTopSortMatchesPerfReport).
func TestTopChildrenMatchesPerfReport(t *testing.T) {
	t.Parallel()
	needPerf(t)
	symfs := ckSymfs(t)
	for _, file := range []string{"threads.data", "forkexec.data", "cshared-fp.data"} {
		for _, limit := range []string{"0.5", "5"} {
			t.Run(file+" "+limit, func(t *testing.T) {
				t.Parallel()
				data := recordedAfterBins(t, ckFixture(t, file))
				out := perfOut(t, "report", "--children", "--stdio", "-g", "none", "-n", "--sort", "sym",
					"--percent-limit", limit, "--symfs", symfs, "-i", data)
				tj := topLikePerf(t, data, symfs, "--children", "--percent-limit", limit)
				compareChildren(t, out, tj)
			})
		}
	}
}

// compareChildren compares top --children's entries (tj) with perf
// report --children --stdio -g none -n --sort sym's (out): the same
// functions, each with the same children and self shares and self
// samples, in the same order of children. Kernel symbols and the
// addresses perf cannot name are left out: perfcheck groups those frames
// by DSO (TestTopSortMatchesPerfReport).
func compareChildren(t *testing.T, out string, tj topJSON) {
	t.Helper()
	type line struct {
		children, self float64
		samples        uint64
	}
	want := map[string]line{}
	var wantOrder []float64
	for _, l := range strings.Split(out, "\n") {
		m := perfChildrenLine.FindStringSubmatch(l)
		if m == nil || strings.HasPrefix(m[4], "[k] ") || strings.HasPrefix(m[4], "[.] 0x") {
			continue
		}
		var w line
		w.children, _ = strconv.ParseFloat(m[1], 64)
		w.self, _ = strconv.ParseFloat(m[2], 64)
		w.samples, _ = strconv.ParseUint(m[3], 10, 64)
		want[strings.TrimPrefix(m[4], "[.] ")] = w
		wantOrder = append(wantOrder, w.children)
	}
	require.NotEmpty(t, want)
	require.Len(t, tj.Events, 1)
	got := map[string]line{}
	var gotOrder []float64
	for _, e := range tj.Events[0].Entries {
		if e.Group {
			continue // perf's [k] lines and addresses
		}
		got[e.Name] = line{e.TotalPct, e.SelfPct, e.SelfSamples}
		gotOrder = append(gotOrder, math.Round(e.TotalPct*100)/100)
	}
	assert.Equal(t, wantOrder, gotOrder, "children shares, in order")
	for name, w := range want {
		g, ok := got[name]
		if assert.True(t, ok, "%q (%.2f%% in perf report) missing from perfcheck top:\n%v", name, w.children, got) {
			assert.Equal(t, w.samples, g.samples, name)
			assert.LessOrEqual(t, math.Abs(g.children-w.children), 0.0051, "%s children: %.4f%%, perf %.2f%%", name, g.children, w.children)
			assert.LessOrEqual(t, math.Abs(g.self-w.self), 0.0051, "%s self: %.4f%%, perf %.2f%%", name, g.self, w.self)
		}
	}
	for name := range got {
		_, ok := want[name]
		assert.True(t, ok, "%q in perfcheck top, not in perf report", name)
	}
}

// top -g caller and -g callee draw the call graphs perf report
// --no-children -g does: for each entry, the same paths of functions with
// the same shares of the event, the same ones left out by --percent-limit
// and cut by --max-stack.
func TestTopGraphMatchesPerfReport(t *testing.T) {
	t.Parallel()
	needPerf(t)
	symfs := ckSymfs(t)
	for _, order := range []string{"caller", "callee"} {
		for _, c := range []struct{ limit, maxStack string }{{"0.5", "0"}, {"2", "0"}, {"2", "3"}, {"0.5", "5"}} {
			t.Run(order+" "+c.limit+" "+c.maxStack, func(t *testing.T) {
				t.Parallel()
				data := recordedAfterBins(t, ckFixture(t, "cshared-fp.data"))
				var cut []string // "0": no --max-stack, every frame
				if c.maxStack != "0" {
					cut = []string{"--max-stack", c.maxStack}
				}
				args := append([]string{"report", "--no-children", "--stdio", "-g", order, "--percent-limit", c.limit, "--symfs", symfs, "-i", data}, cut...)
				want := perfGraphPaths(t, perfOut(t, args...), false)
				require.NotEmpty(t, want)
				tj := topLikePerf(t, data, symfs, append([]string{"-g", order, "--percent-limit", c.limit}, cut...)...)
				require.Len(t, tj.Events, 1)
				got := map[string]float64{}
				for _, e := range tj.Events[0].Entries {
					if e.Group && e.DSO == "[kernel.kallsyms]" {
						continue // perf's [k] entries: see TestTopSortMatchesPerfReport
					}
					name := entryKey(e)
					got[name] = e.SelfPct
					entryGraphPaths(got, name, e)
				}
				assertSamePathShares(t, want, got)
			})
		}
	}
}

// topLikePerf is topWith with the lookup perf has under --symfs
// (ckLikePerf): the system libraries' debug files name the frames of libc,
// as they do for perf.
func topLikePerf(t *testing.T, data, symfs string, args ...string) topJSON {
	t.Helper()
	out, errs, code := ckRun(t, append(append(append([]string{"top", "--json", "-n", "0", "--symfs", symfs}, ckLikePerf(t)...), args...), data)...)
	require.Equal(t, exitOK, code, errs)
	var tj topJSON
	require.NoError(t, json.Unmarshal([]byte(out), &tj))
	return tj
}

// entryKey is e as perfGraphPaths keys perf's entries: "dso function",
// the DSO's base name, as perf prints it.
func entryKey(e topEntry) string { return filepath.Base(e.DSO) + " " + e.Name }

// entryGraphPaths adds the graph of e, named name, to m (graphPaths),
// with fractal mode's "[...]" among its roots as "name:[...]".
func entryGraphPaths(m map[string]float64, name string, e topEntry) {
	graphPaths(m, name+":", e.Graph)
	if e.GraphRest > 0 {
		m[name+":[...]"] = e.GraphRestPct
	}
}

// graphPaths adds each node of nodes to m under its path from the entry
// ("entry:root;...;node"), with its share, and fractal mode's "[...]"
// after a node's callees as "entry:root;...;node;[...]".
func graphPaths(m map[string]float64, prefix string, nodes []graphNode) {
	for _, n := range nodes {
		name := n.Name
		if name == "" {
			name = "[" + n.Verdict + "] " + n.DSO
		}
		p := prefix + name
		m[p] = n.Percent
		graphPaths(m, p+";", n.Children)
		if n.Rest > 0 {
			m[p+";[...]"] = n.RestPct
		}
	}
}

var (
	// perfGraphEntry is an entry line of perf report sorted by dso,sym
	// (perf's default sort ends with them): the first share, then the
	// DSO, the kind of symbol and the symbol.
	perfGraphEntry = regexp.MustCompile(`^\s+([0-9.]+)%\s+.*?(\S+)\s+\[(.)\] (\S.*?)\s*$`)
	perfGraphShare = regexp.MustCompile(`--([0-9.]+)%--`)
)

// perfGraphPaths reads perf report --stdio -g (graph or, fractal, fractal
// mode) as graphPaths keys them: the entries' shares under "dso
// function" (entryKey),
// and each node of their graphs under its path. perf prints a share where
// the graph branches; a node in a chain has the share of the node before
// it, and a graph's single root ("---") the entry's share, or all of it
// (100%) in fractal mode. Fractal mode's "[...]" lines (the share of a
// node's callees that those printed leave) are read as a node "[...]";
// perf 6.1 at times prints them "[...] (inlined)", reading a flag of a
// symbol it never set, and that suffix is dropped.
func perfGraphPaths(t *testing.T, out string, fractal bool) map[string]float64 {
	t.Helper()
	return perfGraphPathsBy(t, out, fractal, func(l string) (name string, pct float64, ok bool) {
		e := perfGraphEntry.FindStringSubmatch(l)
		if e == nil {
			return "", 0, false
		}
		if e[3] == "k" {
			return "", 0, true
		}
		pct, _ = strconv.ParseFloat(e[1], 64)
		return e[2] + " " + e[4], pct, true
	})
}

// perfGraphPathsBy is perfGraphPaths with entry lines read by entry: ok
// for an entry line, and its name and share, or "" for an entry whose
// graph is left out.
func perfGraphPathsBy(t *testing.T, out string, fractal bool, entry func(l string) (name string, pct float64, ok bool)) map[string]float64 {
	t.Helper()
	type node struct {
		path string
		pct  float64
	}
	m := map[string]float64{}
	var cur *node
	var at map[int]node // the last node whose name starts at a column
	for _, l := range strings.Split(out, "\n") {
		if name, pct, ok := entry(l); ok {
			cur = nil
			if name == "" {
				continue
			}
			cur, at = &node{name + ":", pct}, map[int]node{}
			m[name] = pct
			continue
		}
		if cur == nil || strings.HasPrefix(l, "#") || strings.Trim(l, " |") == "" {
			continue
		}
		col := strings.IndexFunc(l, func(r rune) bool { return r != ' ' && r != '|' })
		var parent, n node
		var ok bool
		key := col // where the lines that continue the node's chain start
		switch s := perfGraphShare.FindStringSubmatchIndex(l); {
		case s != nil:
			// "|--12.34%--name": the chain goes on 11 columns after the
			// branch, whatever the width of the share.
			col, key = s[1], s[0]-1+11
			parent, ok = at[s[0]-1]
			n.pct, _ = strconv.ParseFloat(l[s[2]:s[3]], 64)
		case strings.HasPrefix(l[col:], "---"):
			col += 3
			key = col
			n.pct = cur.pct
			if fractal {
				n.pct = 100
			}
		default:
			parent, ok = at[col]
			require.True(t, ok, "a chain without a start: %q", l)
			n.pct = parent.pct
		}
		if !ok {
			parent = *cur
		} else {
			parent.path += ";"
		}
		name := strings.TrimSpace(l[col:])
		if name == "[...] (inlined)" {
			name = "[...]"
		}
		n.path = parent.path + name
		at[key] = n
		m[n.path] = n.pct
	}
	return m
}

// top -g in perf's modes, with and without --children, draws what perf
// report --stdio -g MODE,ORDER draws: graph (shares of the event, perf's
// default) and fractal (shares of the parent's callees) the same paths
// with the same shares, folded the same call chains with the same
// shares, the same left out by --percent-limit. With --children an
// entry's graph also holds the part of every stack from the entry on.
func TestTopGraphModesMatchPerfReport(t *testing.T) {
	t.Parallel()
	needPerf(t)
	symfs := ckSymfs(t)
	for _, c := range []struct{ file, children string }{
		{"cshared-fp.data", "--no-children"}, {"cshared-fp.data", "--children"}, {"forkexec.data", "--no-children"}, {"forkexec.data", "--children"},
	} {
		children := c.children
		for _, mode := range []string{"graph", "fractal", "folded"} {
			for _, order := range []string{"caller", "callee"} {
				for _, limit := range []string{"0.5", "5"} {
					t.Run(strings.Join([]string{c.file, children, mode, order, limit}, " "), func(t *testing.T) {
						t.Parallel()
						compareGraphMode(t, recordedAfterBins(t, ckFixture(t, c.file)), symfs, children, mode, order, limit)
					})
				}
			}
		}
	}
}

// A function with self time of its own that also calls another, in
// programs recorded here: its node ends some chains and goes on in
// others. On its graph's only root chain (outer's callers, under
// --children in caller order) perf gives its callees fractal shares of
// the whole entry; below a branch (main calls outer and other, in the
// second program) of its callees only (perf's children_hit); flat and
// folded list the chain that ends there.
func TestTopGraphSelfAndCalleesMatchPerfReport(t *testing.T) {
	t.Parallel()
	needPerf(t)
	fixtures.NeedTool(t, "gcc")
	dir := t.TempDir()
	src := filepath.Join(dir, "outer.c")
	require.NoError(t, os.WriteFile(src, []byte(outerInnerC), 0o644))
	for _, prog := range []struct{ name, define string }{{"outer", ""}, {"branch", "-DOTHER=other()"}} {
		bin := filepath.Join(dir, prog.name)
		args := []string{"-O1", "-fno-omit-frame-pointer", "-o", bin, src}
		if prog.define != "" {
			args = append(args, prog.define)
		}
		b, err := exec.Command("gcc", args...).CombinedOutput()
		require.NoError(t, err, "%s", b)
		data := recordWithRetry(t, dir, prog.name+".data", []string{"-g", "-e", "cpu-clock:u", "-F", "2000"}, bin)
		for _, children := range []string{"--no-children", "--children"} {
			for _, mode := range []string{"graph", "fractal", "folded"} {
				for _, order := range []string{"caller", "callee"} {
					t.Run(strings.Join([]string{prog.name, children, mode, order}, " "), func(t *testing.T) {
						t.Parallel()
						compareGraphMode(t, data, "/", children, mode, order, "0.5")
					})
				}
			}
		}
	}
}

// outerInnerC spends CPU time in outer itself and in inner, which outer
// calls, each in its own loop, and, built with -DOTHER='other()', in
// other, which main then calls beside outer (cpu_seconds: see hotC). inner calls touch
// so that it is not a leaf function, which gcc builds without a frame
// pointer (its caller would be lost); the work after each call keeps it
// from being a tail call.
const outerInnerC = `
#include <time.h>
volatile unsigned long sink;
__attribute__((noinline)) void touch(void) { sink++; }
__attribute__((noinline)) void inner(void) { for (int i = 0; i < 20000; i++) sink += i * 7; touch(); sink++; }
__attribute__((noinline)) void outer(void) { for (int i = 0; i < 30000; i++) sink ^= i * 13; inner(); sink++; }
__attribute__((noinline)) void other(void) { for (int i = 0; i < 10000; i++) sink -= i; touch(); sink++; }
` + cpuSecondsC + `
#ifndef OTHER
#define OTHER
#endif
int main(void) { double end = cpu_seconds() + 0.3; while (cpu_seconds() < end) for (int i = 0; i < 10; i++) { outer(); OTHER; } return 0; }
`

// compareGraphMode compares top's -g MODE,ORDER graphs (or chains) of
// data with perf report's, with --percent-limit limit, children
// (--children or --no-children), and the flags extra given to both: the
// same paths with the same shares.
func compareGraphMode(t *testing.T, data, symfs, children, mode, order, limit string, extra ...string) {
	t.Helper()
	g := mode + "," + order
	out := perfOut(t, append([]string{"report", children, "--stdio", "-g", g, "--sort", "dso,sym", "--percent-limit", limit, "--symfs", symfs, "-i", data}, extra...)...)
	tj := topLikePerf(t, data, symfs, append([]string{children, "-g", g, "--percent-limit", limit}, extra...)...)
	require.Len(t, tj.Events, 1)
	var want map[string]float64
	if mode == "folded" {
		want = perfFoldedPaths(out)
	} else {
		want = perfGraphPaths(t, out, mode == "fractal")
	}
	require.NotEmpty(t, want)
	got := map[string]float64{}
	for _, e := range tj.Events[0].Entries {
		if e.Group && (e.DSO == "[kernel.kallsyms]" || e.DSO == "[unknown]") {
			continue // perf's [k] entries ("[unknown] [k] 0000000000000000" too): see TestTopSortMatchesPerfReport
		}
		name := entryKey(e)
		got[name] = e.SelfPct
		if children == "--children" {
			got[name] = e.TotalPct
		}
		if mode == "folded" {
			for _, c := range e.Chains {
				got[name+":"+strings.Join(chainNames(c.Frames), ";")] = c.Percent
			}
		} else {
			entryGraphPaths(got, name, e)
		}
	}
	// Frames neither can name (the recording's kernel,
	// which is not this machine's, the vdso, no mapping):
	// perf shows them as addresses, one node each,
	// perfcheck as one "[verdict] dso" group per DSO, so
	// the paths through them differ in shape. Fractal
	// mode keeps their small branches (shares of their
	// parents): they are left out of the comparison.
	for p := range want {
		if perfUnnamed.MatchString(p) {
			delete(want, p)
		}
	}
	for p := range got {
		if groupLabel.MatchString(p) {
			delete(got, p)
		}
	}
	assertSamePathShares(t, want, got)
}

var (
	// perfUnnamed matches a graph path (or entry) through a frame perf
	// shows as an address.
	perfUnnamed = regexp.MustCompile(`(^\[unknown\] |[:;]0x[0-9a-f]+(;|$)|[:;]0000000000000000(;|$))`)
	// groupLabel matches a graph path through a frame perfcheck shows as
	// its DSO's group, "[verdict] dso".
	groupLabel = regexp.MustCompile(`[:;]\[[a-z-]+\] `)
)

// perfFoldedPaths reads perf report --stdio -g folded: the entries'
// shares under "dso function" (entryKey), and each chain under
// "dso function:a;b;c".
func perfFoldedPaths(out string) map[string]float64 {
	m := map[string]float64{}
	entry := ""
	for _, l := range strings.Split(out, "\n") {
		if e := perfGraphEntry.FindStringSubmatch(l); e != nil {
			entry = ""
			if e[3] != "k" {
				entry = e[2] + " " + e[4]
				m[entry], _ = strconv.ParseFloat(e[1], 64)
			}
			continue
		}
		pct, chain, ok := strings.Cut(l, "% ")
		if entry == "" || !ok || strings.HasPrefix(l, "#") {
			continue
		}
		m[entry+":"+chain], _ = strconv.ParseFloat(pct, 64)
	}
	return m
}

// chainNames are the functions of a chain's frames as perf names them:
// "function (dso)" labels without the DSO and its verdict.
func chainNames(frames []string) []string {
	out := make([]string, len(frames))
	for i, f := range frames {
		if j := strings.LastIndex(f, ") ["); j > 0 && strings.HasSuffix(f, "]") {
			f = f[:j+1] // "function (dso) [unverified]"
		}
		if j := strings.LastIndex(f, " ("); j > 0 && strings.HasSuffix(f, ")") {
			f = f[:j]
		}
		out[i] = f
	}
	return out
}

// top --max-stack N cuts each call chain as perf report --max-stack N
// does before it counts children and draws graphs: to the N outermost
// frames in caller order (perf's order with --children), to the leaf and
// its N-1 callers in callee order, the leaf counted in any case; with 0
// or less, as perf, no frame of the chain (children equal self, no
// graph). A
// program recorded in the test calls nine functions deep, each with self
// time, so that every cut leaves out some: top --children lists the same
// children and self shares as perf report --children -g none, and draws
// the same graphs and chains, with and without --children, in both orders.
func TestTopMaxStackMatchesPerfReport(t *testing.T) {
	t.Parallel()
	data := recordDeep(t)
	for _, n := range []string{"1", "3", "6", "0", "-2"} {
		for _, order := range []string{"", "caller", "callee"} {
			t.Run("children "+n+" "+order, func(t *testing.T) {
				t.Parallel()
				g := "none"
				args := []string{"--children", "--max-stack", n}
				if order != "" {
					g = order + ",none"
					args = append(args, "-g", order)
				}
				out := perfOut(t, "report", "--children", "--stdio", "-g", g, "-n", "--sort", "sym", "--max-stack", n, "--symfs", "/", "-i", data)
				compareChildren(t, out, topLikePerf(t, data, "/", args...))
			})
			if order == "" {
				continue
			}
			for _, children := range []string{"--no-children", "--children"} {
				for _, mode := range []string{"graph", "folded"} {
					t.Run(strings.Join([]string{children, mode, order, n}, " "), func(t *testing.T) {
						t.Parallel()
						compareGraphMode(t, data, "/", children, mode, order, "0.5", "--max-stack", n)
					})
				}
			}
		}
	}
}

// deepC calls d1 to d9, each from the one before, each spending CPU time
// in its own loop (more the deeper), then touch, so that d9 is not a leaf
// function, which gcc builds without a frame pointer (cpu_seconds: see
// hotC); the work after each call keeps it from being a tail call.
const deepC = `
#include <time.h>
volatile unsigned long sink;
__attribute__((noinline)) void touch(void) { sink++; }
#define STEP(name, next, n) __attribute__((noinline)) void name(void) { for (int i = 0; i < n; i++) sink += i * 3; next(); sink++; }
STEP(d9, touch, 9000)
STEP(d8, d9, 8000)
STEP(d7, d8, 7000)
STEP(d6, d7, 6000)
STEP(d5, d6, 5000)
STEP(d4, d5, 4000)
STEP(d3, d4, 3000)
STEP(d2, d3, 2000)
STEP(d1, d2, 1000)
` + cpuSecondsC + `
int main(void) { double end = cpu_seconds() + 0.3; while (cpu_seconds() < end) for (int i = 0; i < 10; i++) d1(); return 0; }
`

// recordDeep builds deepC and returns its recording with perf -g.
func recordDeep(t *testing.T) string {
	t.Helper()
	needPerf(t)
	fixtures.NeedTool(t, "gcc")
	dir := t.TempDir()
	src := filepath.Join(dir, "deep.c")
	require.NoError(t, os.WriteFile(src, []byte(deepC), 0o644))
	bin := filepath.Join(dir, "deep")
	b, err := exec.Command("gcc", "-O1", "-fno-omit-frame-pointer", "-o", bin, src).CombinedOutput()
	require.NoError(t, err, "%s", b)
	return recordWithRetry(t, dir, "deep.data", []string{"-g", "-e", "cpu-clock:u", "-F", "2000"}, bin)
}

// top -g with perf's --sort keys draws each keyed entry's graph as perf
// report -g --sort KEYS does: with --no-children the stacks of the
// entry's samples, with --children also the part of every stack from
// the entry's first frame on; the same entries with the same shares,
// the same paths with the same shares, in both orders, in graph mode
// with --max-stack 3, 0 (no frame: no graph) and none, and in fractal
// mode with its "[...]" lines, on the program of
// TestTopMaxStackMatchesPerfReport and on cshared-fp.data, whose stacks
// cross three DSOs.
func TestTopGraphBySortKeysMatchesPerfReport(t *testing.T) {
	t.Parallel()
	deep := recordDeep(t)
	symfs := ckSymfs(t)
	for _, rec := range []struct{ name, data, symfs string }{{"deep", deep, "/"}, {"cshared-fp", "", symfs}} {
		for _, keys := range []string{"dso", "comm,dso", "pid", "dso,sym"} {
			for _, order := range []string{"caller", "callee"} {
				for _, c := range []struct{ children, mode, maxStack string }{
					{"--no-children", "graph", ""}, {"--no-children", "graph", "3"}, {"--no-children", "graph", "0"}, {"--no-children", "fractal", ""},
					{"--children", "graph", ""}, {"--children", "graph", "3"}, {"--children", "graph", "0"}, {"--children", "fractal", ""},
				} {
					t.Run(strings.Join([]string{rec.name, keys, order, c.children, c.mode, c.maxStack}, " "), func(t *testing.T) {
						t.Parallel()
						data := rec.data
						if data == "" {
							data = recordedAfterBins(t, ckFixture(t, "cshared-fp.data"))
						}
						args := []string{c.children, "-g", c.mode + "," + order, "--sort", keys, "--percent-limit", "0.5"}
						if c.maxStack != "" {
							args = append(args, "--max-stack", c.maxStack)
						}
						out := perfOut(t, append([]string{"report", "--stdio", "--symfs", rec.symfs, "-i", data}, args...)...)
						want := perfKeyedGraphPaths(t, out, keys, c.mode == "fractal")
						require.NotEmpty(t, want)
						tj := topLikePerf(t, data, rec.symfs, args...)
						require.Len(t, tj.Events, 1)
						got := map[string]float64{}
						for _, e := range tj.Events[0].Entries {
							name := perfLabel(keys, e)
							got[name] = e.SelfPct
							if c.children == "--children" {
								got[name] = e.TotalPct
							}
							entryGraphPaths(got, name, e)
							if c.maxStack == "0" {
								assert.Empty(t, e.Graph, "--max-stack 0 keeps no frame to draw")
							}
						}
						for _, m := range []map[string]float64{want, got} {
							for p := range m {
								if perfUnnamed.MatchString(p) || groupLabel.MatchString(p) || strings.Contains(p, "[kernel.kallsyms]") {
									delete(m, p) // frames perf shows as addresses: see compareGraphMode
								}
							}
						}
						assertSamePathShares(t, want, got)
					})
				}
			}
		}
	}
}

// perfKeyedEntry is an entry line of perf report --sort KEYS without
// -n: the share (the first, children, with --children), then the keys'
// values.
var perfKeyedEntry = regexp.MustCompile(`^\s+([0-9.]+)%\s+(?:[0-9.]+%\s+)?(\S.*?)\s*$`)

// perfKeyedGraphPaths is perfGraphPaths for perf report --sort keys: an
// entry is named by its keys' values one space apart (as top's label,
// its columns joined by one space), or by entryKey for dso,sym.
func perfKeyedGraphPaths(t *testing.T, out, keys string, fractal bool) map[string]float64 {
	t.Helper()
	if keys == "dso,sym" {
		return perfGraphPaths(t, out, fractal)
	}
	return perfGraphPathsBy(t, out, fractal, func(l string) (string, float64, bool) {
		e := perfKeyedEntry.FindStringSubmatch(l)
		if e == nil {
			return "", 0, false
		}
		pct, _ := strconv.ParseFloat(e[1], 64)
		return strings.Join(strings.Fields(e[2]), " "), pct, true
	})
}

// assertSamePathShares requires every graph path of perf report's (want)
// in perfcheck top's (got) and no other, each share within perf's
// printed precision.
func assertSamePathShares(t *testing.T, want, got map[string]float64) {
	t.Helper()
	for p, w := range want {
		g, ok := got[p]
		if assert.True(t, ok, "%q (%.2f%% in perf report) missing from perfcheck top", p, w) {
			assert.LessOrEqual(t, math.Abs(g-w), 0.0051, "%s: %.4f%%, perf %.2f%%", p, g, w)
		}
	}
	for p, g := range got {
		_, ok := want[p]
		assert.True(t, ok, "%q (%.2f%%) in perfcheck top, not in perf report", p, g)
	}
}
