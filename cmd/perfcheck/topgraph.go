package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/perfcheck/perfcheck/check"
)

// top is the library's ranking (check.Top) as `top --json` prints it:
// event names, units, percentages, and each entry's call graph in the
// form -g's mode gives it (graphMode: "" for none).
func (a *analysis) top(opts check.TopOptions, graphMode string) []topEvent {
	var out []topEvent
	for _, t := range check.Top(a.res, opts) {
		te := topEvent{Event: t.Event, Unit: periodUnit(t.Attr), Samples: t.Samples, Period: t.Period,
			Omitted: t.Omitted}
		for _, e := range t.Entries {
			x := topEntry{
				Name: e.Name, DSO: e.DSO.Path, Verdict: e.DSO.Verdict.String(), Trusted: e.DSO.Trusted(),
				Group: e.Group(), Self: e.Self, Total: e.Total, SelfSamples: e.SelfSamples, TotalSamples: e.TotalSamples,
				SelfPct: t.Percent(e.Self), TotalPct: t.Percent(e.Total), lbl: e.Label(),
			}
			x.Graph, x.Chains = graphOf(&t, e.Graph, graphMode)
			x.GraphRest, x.GraphRestPct = e.GraphRest, restPct(e.GraphRest, e.Graph)
			te.Entries = append(te.Entries, x)
		}
		out = append(out, te)
	}
	return out
}

// graphOf is the call graph roots of an entry of t as `top --json`
// prints it in -g's printed form mode: nodes, or chains in flat and
// folded mode.
func graphOf(t *check.TopTable, roots []*check.GraphNode, mode string) ([]graphNode, []graphChain) {
	switch mode {
	case "flat", "folded":
		return nil, graphChains(t, roots)
	default:
		return graphNodes(t, roots, mode == "fractal"), nil
	}
}

// graphNodes is a call graph as `top --json` prints it; fractal makes
// each node's percentage one of its Base, not of the event's period.
func graphNodes(t *check.TopTable, nodes []*check.GraphNode, fractal bool) []graphNode {
	var out []graphNode
	for _, n := range nodes {
		pct := t.Percent(n.Period)
		if fractal {
			pct = float64(n.Period) * 100 / float64(max(n.Base, 1))
		}
		out = append(out, graphNode{Name: n.Name, DSO: n.DSO.Path, Verdict: n.DSO.Verdict.String(), Trusted: n.DSO.Trusted(),
			Period: n.Period, Samples: n.Samples, Percent: pct, Children: graphNodes(t, n.Children, fractal),
			Rest: n.Rest, RestPct: restPct(n.Rest, n.Children), lbl: n.Label()})
	}
	return out
}

// restPct is rest, what the callees kept leave of what they are shares
// of in fractal mode (check.GraphNode.Rest), as a percentage of that:
// their Base.
func restPct(rest uint64, kept []*check.GraphNode) float64 {
	if rest == 0 || len(kept) == 0 {
		return 0
	}
	return float64(rest) * 100 / float64(max(kept[0].Base, 1))
}

// graphChains lists the call chains of a graph (check.GraphFlat): one per
// node where stacks end, heaviest first, as perf's flat and folded modes.
func graphChains(t *check.TopTable, roots []*check.GraphNode) []graphChain {
	var out []graphChain
	var walk func(nodes []*check.GraphNode, path []string)
	walk = func(nodes []*check.GraphNode, path []string) {
		for _, n := range nodes {
			p := append(path[:len(path):len(path)], n.Label())
			if n.Ends > 0 {
				out = append(out, graphChain{Frames: p, Period: n.Ends, Percent: t.Percent(n.Ends)})
			}
			walk(n.Children, p)
		}
	}
	walk(roots, nil)
	slices.SortStableFunc(out, func(a, b graphChain) int { return cmp.Compare(b.Period, a.Period) })
	return out
}

// printGraph prints e's call graph under it in -g's mode: graph and
// fractal as a tree (printNodes), flat as each chain's share and then its
// frames one per line, folded as each chain's share and its frames joined
// by semicolons on one line.
func printGraph(w io.Writer, e topEntry, mode string) {
	switch mode {
	case "flat":
		for _, c := range e.Chains {
			fmt.Fprintf(w, "%11.2f%%\n", c.Percent)
			for _, f := range c.Frames {
				fmt.Fprintf(w, "%16s%s\n", "", f)
			}
		}
	case "folded":
		for _, c := range e.Chains {
			fmt.Fprintf(w, "%.2f%% %s\n", c.Percent, strings.Join(c.Frames, ";"))
		}
	default:
		printNodes(w, e.Graph, e.GraphRest, e.GraphRestPct, 4)
	}
}

// printNodes prints a call graph under its entry, indented by indent: a
// chain of single callers (or callees) on one column, as perf's graph,
// and each branch two columns further in, followed, in fractal mode, by
// perf's "[...]" line for the rest (restPct percent) that the nodes
// leave of what they are shares of.
func printNodes(w io.Writer, nodes []graphNode, rest uint64, restPct float64, indent int) {
	for len(nodes) == 1 && rest == 0 {
		fmt.Fprintf(w, "%*s%7.2f%%  %s\n", indent, "", nodes[0].Percent, nodes[0].lbl)
		rest, restPct = nodes[0].Rest, nodes[0].RestPct
		nodes = nodes[0].Children
	}
	if len(nodes) == 0 {
		return
	}
	for _, n := range nodes {
		fmt.Fprintf(w, "%*s%7.2f%%  %s\n", indent, "", n.Percent, n.lbl)
		printNodes(w, n.Children, n.Rest, n.RestPct, indent+2)
	}
	if rest > 0 {
		fmt.Fprintf(w, "%*s%7.2f%%  [...]\n", indent, "", restPct)
	}
}
