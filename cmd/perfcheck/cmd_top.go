package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/perfcheck/perfcheck/check"
	"github.com/perfcheck/perfcheck/perfdata"
	"github.com/perfcheck/perfcheck/pprofout"
)

func init() {
	register(&command{
		name:    "top",
		usage:   "perfcheck top [flags] perf.data|-",
		summary: "hottest functions by self and total time; untrusted code grouped by binary and verdict",
		run:     runTop,
	})
}

// topJSON is what `perfcheck top --json` prints.
type topJSON struct {
	File   string     `json:"file"`
	Events []topEvent `json:"events"`
	// Partial and Error: reading stopped at Error; the tables cover the
	// records before it.
	Partial bool   `json:"partial,omitempty"`
	Error   string `json:"error,omitempty"`
	// Notes are the check's notes on the recording and its DSOs, as
	// `perfcheck check` prints them ("PATH: note" for a DSO's).
	Notes []string `json:"notes,omitempty"`
}

// topEvent is the table of one event: perf report shows each event apart,
// since periods of different events do not add up.
type topEvent struct {
	Event   string     `json:"event"`
	Unit    string     `json:"unit"` // of period: "nanoseconds" for cpu-clock/task-clock, else "count"
	Samples uint64     `json:"samples"`
	Period  uint64     `json:"period"` // the sum of the samples' periods: 100% of self and total
	Entries []topEntry `json:"entries"`
	Omitted int        `json:"omitted"` // entries beyond -n
	// BelowLimit counts the entries left out by --percent-limit.
	BelowLimit int `json:"below_limit,omitempty"`
}

// topEntry is one line of top: a function of a trusted binary, or a whole
// untrusted binary (all its frames, which cannot be named) with its verdict.
type topEntry struct {
	Name string `json:"name"` // the function; "" for a group
	// Comm and TID are the values of perf's comm and pid sort keys, with
	// --sort naming them. With --sort keys, Total, TotalSamples and
	// TotalPct are set with --children only.
	Comm    string `json:"comm,omitempty"`
	TID     uint32 `json:"tid,omitempty"`
	DSO     string `json:"dso"`
	Verdict string `json:"verdict"`
	Trusted bool   `json:"trusted"`
	// Group is true when the entry stands for all the frames of DSO that
	// have no name: refused names (mismatch, missing, replaced), file-less
	// memory, or addresses the binary has no symbol for.
	Group        bool    `json:"group"`
	Self         uint64  `json:"self"`  // period of samples whose leaf is here
	Total        uint64  `json:"total"` // period of samples with this entry anywhere in the stack (once per sample)
	SelfSamples  uint64  `json:"self_samples"`
	TotalSamples uint64  `json:"total_samples"`
	SelfPct      float64 `json:"self_percent"`
	TotalPct     float64 `json:"total_percent"`
	// Graph is the call graph of -g graph or fractal (caller or callee).
	Graph []graphNode `json:"graph,omitempty"`
	// GraphRest and GraphRestPct are fractal mode's "[...]" among the
	// graph's roots: what the roots it keeps leave of the entry's stacks
	// (check.TopEntry.GraphRest).
	GraphRest    uint64  `json:"graph_rest,omitempty"`
	GraphRestPct float64 `json:"graph_rest_percent,omitempty"`
	// Chains are the call chains of -g flat or folded.
	Chains []graphChain `json:"chains,omitempty"`

	lbl string // check.TopEntry.Label
}

func (e *topEntry) label() string { return e.lbl }

// graphNode is a function in an entry's call graph (check.GraphNode);
// Percent is of the event's period, as perf's graph mode, or of its
// parent's callees with -g fractal.
type graphNode struct {
	Name     string      `json:"name"` // "" for a DSO's unnamed frames
	DSO      string      `json:"dso"`
	Verdict  string      `json:"verdict"`
	Trusted  bool        `json:"trusted"`
	Period   uint64      `json:"period"`
	Samples  uint64      `json:"samples"`
	Percent  float64     `json:"percent"`
	Children []graphNode `json:"children,omitempty"`
	// Rest and RestPct are fractal mode's "[...]" line after the node's
	// children: what they leave of the share they are of
	// (check.GraphNode.Rest).
	Rest    uint64  `json:"rest,omitempty"`
	RestPct float64 `json:"rest_percent,omitempty"`

	lbl string
}

// graphChain is a call chain of -g flat or folded: its frames in the
// graph's order and the period of the samples whose chain it is, with
// its share of the event's period.
type graphChain struct {
	Frames  []string `json:"frames"` // as the text prints them: "function (dso)", "[verdict] dso"
	Period  uint64   `json:"period"`
	Percent float64  `json:"percent"`
}

func runTop(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, af := newAnalyzeFlagSet("top", "usage: perfcheck top [flags] perf.data|-",
		"Prints the hottest functions, self and total; frames of untrusted binaries are grouped as [verdict] path, never named.", stderr)
	jsonOut := fs.Bool("json", false, "print JSON (docs/commands-check.md)")
	n := fs.Int("n", 20, "print the `N` hottest entries per event (0: all)")
	sortBy := fs.String("sort", "self", "order functions by `self` (as perf report --no-children) or total (as perf report --children), or group by perf's keys comm, pid, dso, sym and their combinations (dso,sym), by self (by children with --children)")
	limit := fs.Float64("percent-limit", 0, "leave out entries (and call-graph nodes) under `PCT` percent (of self, or of total with --sort total or --children), as perf's --percent-limit")
	children := fs.Bool("children", false, "order by children (total) and print perf's Children and Self columns, as perf report --children")
	noChildren := fs.Bool("no-children", false, "order by self, as perf report --no-children (the default)")
	graph := fs.String("g", "", "print each entry's call graph as perf report -g `MODE,ORDER`: MODE graph (shares of the event, the default), fractal (shares of the parent's callees), flat or folded (one line per call chain); ORDER caller (from the outermost caller down) or callee (from the entry out; the default without --children)")
	maxStack := fs.Int("max-stack", 0, "cut each call chain to its first `N` frames in the graph's order (the outermost callers without -g), for the call graph and children, as perf report --max-stack (default all; 0 or less: none, the sample's own function only)")
	pos, code := interspersed(fs, args)
	if code >= 0 {
		return code
	}
	file, err := af.file(pos, stdin)
	if err != nil {
		return usageError(fs, stderr, "%v", err)
	}
	var keys []check.SortKey
	if *sortBy != "self" && *sortBy != "total" {
		if keys, err = check.ParseSortKeys(*sortBy); err != nil {
			return usageError(fs, stderr, "--sort %s: %v, or self or total", *sortBy, err)
		}
	}
	if *limit < 0 || *limit > 100 {
		return usageError(fs, stderr, "--percent-limit %g: give a percentage from 0 to 100", *limit)
	}
	if *n < 0 {
		return usageError(fs, stderr, "-n %d: give 0 (all) or more", *n)
	}
	maxStackSet := false
	fs.Visit(func(f *flag.Flag) { maxStackSet = maxStackSet || f.Name == "max-stack" })
	opt, graphMode, msg := topMode(*sortBy, keys, *children, *noChildren, *graph, *maxStack, maxStackSet)
	if msg != "" {
		return usageError(fs, stderr, "%s", msg)
	}
	opts, done := af.options(stderr)
	defer done()
	a, readErr := analyze(context.Background(), file, opts, stdin, stderr)
	if a == nil {
		return errorf(stderr, "top", "%v", readErr)
	}
	rep := a.res.Report()
	out := topJSON{File: a.res.File, Notes: a.notes(rep)}
	opt.GraphLimit = *limit
	if keys != nil {
		out.Events = a.topKeyed(keys, *n, opt, graphMode)
	} else {
		opt.N = *n
		out.Events = a.top(opt, graphMode)
	}
	percentLimit(out.Events, *limit, opt.By == check.ByTotal)
	if readErr != nil {
		out.Partial, out.Error = true, readErr.Error()
	}
	if *jsonOut {
		if err := writeJSON(stdout, out); err != nil {
			return errorf(stderr, "top", "%v", err)
		}
		if readErr != nil {
			return errorf(stderr, "top", "%v", readErr)
		}
		return exitOK
	}
	bw := bufio.NewWriter(stdout)
	if readErr != nil {
		fmt.Fprintln(bw, partialNote(a.res))
		fmt.Fprintln(bw)
	}
	for i, ev := range out.Events {
		if i > 0 {
			fmt.Fprintln(bw)
		}
		fmt.Fprintf(bw, "%s: %d samples, period %d %s\n", ev.Event, ev.Samples, ev.Period, ev.Unit)
		if keys != nil && *children {
			fmt.Fprintf(bw, "%8s %8s %8s  %s\n", "CHILDREN", "SELF", "SAMPLES", strings.ToUpper(strings.ReplaceAll(*sortBy, ",", "  ")))
			for _, e := range ev.Entries {
				fmt.Fprintf(bw, "%7.2f%% %7.2f%% %8d  %s\n", e.TotalPct, e.SelfPct, e.SelfSamples, e.label())
				printGraph(bw, e, graphMode)
			}
		} else if keys != nil {
			fmt.Fprintf(bw, "%8s %8s  %s\n", "SELF", "SAMPLES", strings.ToUpper(strings.ReplaceAll(*sortBy, ",", "  ")))
			for _, e := range ev.Entries {
				fmt.Fprintf(bw, "%7.2f%% %8d  %s\n", e.SelfPct, e.SelfSamples, e.label())
				printGraph(bw, e, graphMode)
			}
		} else if *children {
			fmt.Fprintf(bw, "%8s %8s %8s  %s\n", "CHILDREN", "SELF", "SAMPLES", "FUNCTION")
			for _, e := range ev.Entries {
				fmt.Fprintf(bw, "%7.2f%% %7.2f%% %8d  %s\n", e.TotalPct, e.SelfPct, e.SelfSamples, e.label())
				printGraph(bw, e, graphMode)
			}
		} else {
			fmt.Fprintf(bw, "%8s %8s %8s  %s\n", "SELF", "TOTAL", "SAMPLES", "FUNCTION")
			for _, e := range ev.Entries {
				fmt.Fprintf(bw, "%7.2f%% %7.2f%% %8d  %s\n", e.SelfPct, e.TotalPct, e.SelfSamples, e.label())
				printGraph(bw, e, graphMode)
			}
		}
		if ev.BelowLimit > 0 {
			fmt.Fprintf(bw, "(%d under --percent-limit %g%%)\n", ev.BelowLimit, *limit)
		}
		if ev.Omitted > 0 {
			fmt.Fprintf(bw, "(%d more; -n 0 shows all)\n", ev.Omitted)
		}
	}
	fmt.Fprintln(bw)
	fmt.Fprintln(bw, rep.Summary())
	if rep.Problems > 0 {
		fmt.Fprintf(bw, "%d DSO%s mismatched, missing or replaced: their frames are grouped, not named. See `perfcheck check %s`.\n",
			rep.Problems, plural(rep.Problems), a.res.File)
	}
	for _, n := range out.Notes {
		fmt.Fprintln(bw, "note: "+n)
	}
	if err := bw.Flush(); err != nil {
		return errorf(stderr, "top", "%v", err)
	}
	if readErr != nil {
		return errorf(stderr, "top", "%v", readErr)
	}
	return exitOK
}

// topMode checks the ordering and call-graph flags together and turns
// them into check.TopOptions and the graph's printed form; the message
// says why they do not go together. maxStackSet says --max-stack was
// given: perf report --max-stack 0 (or less) keeps no frame of the chain.
func topMode(sortBy string, keys []check.SortKey, children, noChildren bool, graph string, maxStack int, maxStackSet bool) (check.TopOptions, string, string) {
	var o check.TopOptions
	switch {
	case children && noChildren:
		return o, "", "--children and --no-children: give one"
	case noChildren && sortBy == "total":
		return o, "", "--no-children orders by self: it does not go with --sort total"
	}
	if maxStackSet && maxStack <= 0 {
		maxStack = -1 // check.TopOptions' "none"
	}
	if children || sortBy == "total" {
		o.By = check.ByTotal
	}
	mode, msg := parseGraph(graph, &o)
	switch {
	case msg != "":
		return o, "", msg
	case o.Graph == check.NoGraph && maxStack != 0 && o.By != check.ByTotal:
		return o, "", "--max-stack cuts the stacks of the call graph and of children: give -g or --children"
	case o.Graph == check.NoGraph && maxStack > 0 && strings.Contains(graph, "callee"):
		// Without a graph the stacks are cut from the outermost caller.
		return o, "", "--max-stack with -g " + graph + ": give -g callee to keep the frames nearest the leaf"
	}
	o.MaxStack = maxStack
	return o, mode, ""
}

// parseGraph reads -g's value as perf report -g takes its first fields:
// a mode (graph, fractal, flat, folded, none) and an order (caller,
// callee), in any order, comma-separated, each optional. As perf 6.1
// does, the mode defaults to graph, the order to callee, or to caller
// with --children (o.By is ByTotal). It sets o's graph fields and returns
// the printed form: "graph", "fractal", "flat" or "folded".
func parseGraph(spec string, o *check.TopOptions) (mode, msg string) {
	if spec == "" {
		return "", ""
	}
	mode = "graph"
	order := check.Callees
	if o.By == check.ByTotal {
		order = check.Callers
	}
	for _, f := range strings.Split(spec, ",") {
		switch f {
		case "graph", "fractal", "flat", "folded", "none":
			mode = f
		case "caller":
			order = check.Callers
		case "callee":
			order = check.Callees
		default:
			return "", "-g " + spec + ": " + strconv.Quote(f) + " is not a mode (graph, fractal, flat, folded, none) or an order (caller, callee)"
		}
	}
	switch mode {
	case "none":
		return "", ""
	case "fractal":
		o.GraphMode = check.GraphFractal
	case "flat", "folded":
		o.GraphMode = check.GraphFlat
	}
	o.Graph = order
	return mode, ""
}

// topKeyed is the library's grouping by perf's sort keys
// (check.TopKeyed) as `top --json` prints it, the first n entries of each
// event (0: all), with their call graphs in -g's printed form graphMode.
func (a *analysis) topKeyed(keys []check.SortKey, n int, opt check.TopOptions, graphMode string) []topEvent {
	var out []topEvent
	for _, t := range check.TopKeyed(a.res, keys, opt) {
		te := topEvent{Event: t.Event, Unit: periodUnit(a.eventAttr(t.Event)), Samples: t.Samples, Period: t.Period}
		pct := func(v uint64) float64 { return float64(v) * 100 / float64(max(t.Period, 1)) }
		tt := &check.TopTable{Period: t.Period} // the shares of the graphs
		for i, e := range t.Entries {
			if n > 0 && i >= n {
				te.Omitted = len(t.Entries) - n
				break
			}
			x := topEntry{Name: e.Sym, Comm: e.Comm, TID: e.TID, Self: e.Self, SelfSamples: e.SelfSamples,
				SelfPct: pct(e.Self), Total: e.Total, TotalSamples: e.TotalSamples, TotalPct: pct(e.Total), lbl: e.Label(keys)}
			if e.DSO != nil {
				x.DSO, x.Verdict, x.Trusted = e.DSO.Path, e.DSO.Verdict.String(), e.DSO.Trusted()
				x.Group = e.Sym == "" && slices.Contains(keys, check.SortSym)
			}
			x.Graph, x.Chains = graphOf(tt, e.Graph, graphMode)
			x.GraphRest, x.GraphRestPct = e.GraphRest, restPct(e.GraphRest, e.Graph)
			te.Entries = append(te.Entries, x)
		}
		out = append(out, te)
	}
	return out
}

// eventAttr is the attributes of the event named name; nil when none is.
func (a *analysis) eventAttr(name string) *perfdata.Attr {
	for i := range a.res.EventInfo {
		if a.res.EventName(i) == name {
			return &a.res.EventInfo[i].Attr
		}
	}
	return nil
}

// percentLimit leaves out the entries under limit percent of self (of
// total, byTotal), counting them in BelowLimit, as perf report
// --percent-limit hides them.
func percentLimit(evs []topEvent, limit float64, byTotal bool) {
	if limit <= 0 {
		return
	}
	for i := range evs {
		kept := evs[i].Entries[:0]
		for _, e := range evs[i].Entries {
			if p := e.SelfPct; byTotal && e.TotalPct < limit || !byTotal && p < limit {
				evs[i].BelowLimit++
				continue
			}
			kept = append(kept, e)
		}
		evs[i].Entries = kept
	}
}

// periodUnit is the unit of the period of the event with attributes a:
// the software clocks count nanoseconds (cpu-clock and task-clock,
// PERF_COUNT_SW_CPU_CLOCK and PERF_COUNT_SW_TASK_CLOCK in
// include/uapi/linux/perf_event.h), every other event counts occurrences.
func periodUnit(a *perfdata.Attr) string {
	if a != nil {
		return pprofout.PeriodUnit(a)
	}
	return "count"
}
