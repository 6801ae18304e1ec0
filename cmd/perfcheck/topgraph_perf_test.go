package main

import (
	"encoding/json"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
				tj := topLikePerf(t, data, symfs, "--children", "--percent-limit", limit)
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
			})
		}
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
				args := []string{"report", "--no-children", "--stdio", "-g", order, "--percent-limit", c.limit, "--symfs", symfs, "-i", data}
				if c.maxStack != "0" {
					args = append(args, "--max-stack", c.maxStack)
				}
				want := perfGraphPaths(t, perfOut(t, args...))
				require.NotEmpty(t, want)
				tj := topLikePerf(t, data, symfs, "-g", order, "--percent-limit", c.limit, "--max-stack", c.maxStack)
				require.Len(t, tj.Events, 1)
				got := map[string]float64{}
				for _, e := range tj.Events[0].Entries {
					if e.Group && e.DSO == "[kernel.kallsyms]" {
						continue // perf's [k] entries: see TestTopSortMatchesPerfReport
					}
					got[e.Name] = e.SelfPct
					graphPaths(got, e.Name+":", e.Graph)
				}
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

// graphPaths adds each node of nodes to m under its path from the entry
// ("entry:root;...;node"), with its share.
func graphPaths(m map[string]float64, prefix string, nodes []graphNode) {
	for _, n := range nodes {
		name := n.Name
		if name == "" {
			name = "[" + n.Verdict + "] " + n.DSO
		}
		p := prefix + name
		m[p] = n.Percent
		graphPaths(m, p+";", n.Children)
	}
}

var (
	perfGraphEntry = regexp.MustCompile(`^\s+([0-9.]+)%\s+.*?\[(.)\] (\S.*?)\s*$`)
	perfGraphShare = regexp.MustCompile(`--([0-9.]+)%--`)
)

// perfGraphPaths reads perf report --stdio -g (graph mode) as
// graphPaths keys them: the entries' shares under their names, and each
// node of their graphs under its path. perf prints a share where the
// graph branches; a node in a chain has the share of the node before it.
func perfGraphPaths(t *testing.T, out string) map[string]float64 {
	t.Helper()
	type node struct {
		path string
		pct  float64
	}
	m := map[string]float64{}
	var entry *node
	var at map[int]node // the last node whose name starts at a column
	for _, l := range strings.Split(out, "\n") {
		if e := perfGraphEntry.FindStringSubmatch(l); e != nil {
			entry = nil
			if e[2] == "k" {
				continue
			}
			pct, _ := strconv.ParseFloat(e[1], 64)
			entry, at = &node{e[3] + ":", pct}, map[int]node{}
			m[e[3]] = pct
			continue
		}
		if entry == nil || strings.HasPrefix(l, "#") || strings.Trim(l, " |") == "" {
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
			n.pct = entry.pct
		default:
			parent, ok = at[col]
			require.True(t, ok, "a chain without a start: %q", l)
			n.pct = parent.pct
		}
		if !ok {
			parent = *entry
		} else {
			parent.path += ";"
		}
		n.path = parent.path + strings.TrimSpace(l[col:])
		at[key] = n
		m[n.path] = n.pct
	}
	return m
}
