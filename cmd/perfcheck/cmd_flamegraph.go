package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/perfcheck/perfcheck/check"
	"github.com/perfcheck/perfcheck/flamegraph"
)

func init() {
	register(&command{
		name:    "flamegraph",
		usage:   "perfcheck flamegraph -o out.html|out.svg [flags] perf.data|-",
		summary: "draw a self-contained flame graph (HTML or SVG); untrusted frames hatched and labelled",
		run:     runFlamegraph,
	})
}

func runFlamegraph(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, af := newAnalyzeFlagSet("flamegraph", "usage: perfcheck flamegraph -o out.html|out.svg [flags] perf.data|-",
		"Draws the stacks of script --folded as a flame graph in one file: HTML (zoom, search) or, for a name ending in .svg, SVG.", stderr)
	out := fs.String("o", "", "write the graph to `FILE`: SVG when it ends in .svg, else HTML (\"-\": HTML on stdout)")
	var fo foldedOptions
	fs.BoolVar(&fo.count, "count", false, "weigh stacks by their samples instead of their period")
	fs.BoolVar(&fo.inlines, "inline", false, "draw inlined frames as frames of their own")
	file, code := outputArgs(fs, af, args, stdin, stderr, out, ".svg for SVG, else HTML; - for stdout")
	if code >= 0 {
		return code
	}
	if file != "-" && *out != "-" && sameFile(*out, file) {
		return errorf(stderr, "flamegraph", "-o %s is the input file", *out)
	}
	opts, done := af.options(stderr)
	defer done()
	a, readErr := analyze(context.Background(), file, opts, stdin, stderr)
	if a == nil {
		return errorf(stderr, "flamegraph", "%v", readErr)
	}
	g, skipped, err := a.flameGraph(fo)
	if err != nil {
		return errorf(stderr, "flamegraph", "%v", err)
	}
	if readErr != nil {
		g.Notes = append([]flamegraph.Note{{Text: partialNote(a.res), Untrusted: true}}, g.Notes...)
	}
	write := g.WriteHTML
	if strings.EqualFold(filepath.Ext(*out), ".svg") {
		write = g.WriteSVG
	}
	if err := writeFile(*out, stdout, write); err != nil {
		return errorf(stderr, "flamegraph", "%v", err)
	}
	if len(skipped) > 0 {
		fmt.Fprintf(stderr, "perfcheck flamegraph: note: drew the samples of %s only; --event names one of %s\n", a.res.EventName(g.Event), strings.Join(skipped, ", "))
	}
	for _, n := range a.notes(a.res.Report()) {
		fmt.Fprintln(stderr, "perfcheck flamegraph: note: "+n)
	}
	if readErr != nil {
		return errorf(stderr, "flamegraph", "partial graph written: %v", readErr)
	}
	return exitOK
}

// eventGraph is a flame graph of one event's stacks.
type eventGraph struct {
	*flamegraph.Graph
	Event int
}

// flameGraph draws the stacks script --folded prints for one event, each
// frame coloured by its DSO's kind and verdict, with the verdict summary:
// the check's, then one line per untrusted DSO with the share of the
// graph's weight it holds. It also returns the events left out.
func (a *analysis) flameGraph(opts foldedOptions) (*eventGraph, []string, error) {
	ev, err := foldedEvent(a, opts.event)
	if err != nil {
		return nil, nil, err
	}
	g := &eventGraph{Graph: &flamegraph.Graph{}, Event: ev}
	g.Unit = "samples"
	if !opts.count && ev < len(a.res.EventInfo) {
		g.Unit = periodUnit(&a.res.EventInfo[ev].Attr)
	}
	leaf, through := map[*check.DSO]uint64{}, map[*check.DSO]uint64{}
	var stack []flamegraph.Frame
	seen := map[*check.DSO]bool{}
	eachFoldedStack(a, ev, opts, func(frames []foldedFrameAt, weight uint64) {
		stack = stack[:0]
		clear(seen)
		for _, f := range frames {
			fr := flamegraph.Frame{Name: f.name}
			if f.loc != nil {
				fr.Kind, fr.Verdict = f.loc.DSO.Kind, f.loc.DSO.Verdict
				if !seen[f.loc.DSO] {
					seen[f.loc.DSO] = true
					through[f.loc.DSO] += weight
				}
			}
			stack = append(stack, fr)
		}
		if l := frames[len(frames)-1].loc; l != nil {
			leaf[l.DSO] += weight
		}
		g.Add(stack, weight)
	})
	rep := a.res.Report()
	g.Title = fmt.Sprintf("%s: %s, %s %s", filepath.Base(a.res.File), a.res.EventName(ev), strconv.FormatUint(g.Total(), 10), g.Unit)
	g.Notes = append(g.Notes, flamegraph.Note{Text: rep.Summary(), Untrusted: rep.UntrustedAnySamples > 0})
	for _, d := range a.res.DSOs {
		if d.Trusted() || through[d] == 0 {
			continue
		}
		g.Notes = append(g.Notes, flamegraph.Note{Untrusted: true, Text: fmt.Sprintf(
			"[%s] %s: %s of the width is its own code (leaf), %s passes through it; its frames are not named: %s",
			d.Verdict, d.Path, percent(leaf[d], g.Total()), percent(through[d], g.Total()), d.Reason)})
	}
	return g, a.otherEvents(ev), nil
}

// percent is n's share of total, "12.3%".
func percent(n, total uint64) string {
	if total == 0 {
		return "0%"
	}
	return strconv.FormatFloat(float64(n)*100/float64(total), 'f', 1, 64) + "%"
}
