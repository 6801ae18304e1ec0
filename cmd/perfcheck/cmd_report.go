package main

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/perfcheck/perfcheck/check"
)

func init() {
	register(&command{
		name:    "report",
		usage:   "perfcheck report -o report.html [flags] perf.data",
		summary: "one HTML file for a postmortem: header, verdicts, trust, top functions, flame graph",
		run:     runReport,
	})
}

//go:embed report.html.tmpl
var reportHTML string

var reportTemplate = template.Must(template.New("report").Parse(reportHTML))

// reportPage is what report.html.tmpl shows, in its order: the recording's
// header, the verdicts with their reasons and advice, the trust figures,
// the top functions, the flame graph.
type reportPage struct {
	Name, File, Command, TimeRange, Events string
	Status, Partial                        string
	Failed                                 bool
	Info                                   *infoJSON
	DSOs                                   []*check.DSO
	Advice                                 []check.Advice
	Notes                                  []string
	Trust                                  []trustRow
	Top                                    []reportTop
	GraphTitle                             string
	Graph                                  template.HTML // flamegraph.WriteFragment's, escaped by it
}

type trustRow struct {
	N           uint64
	What, Share string
	Class       string // "bad" for the untrusted rows that are not zero
}

type reportTop struct {
	topEvent
	Entries []reportEntry
}

type reportEntry struct {
	topEntry
	Label string
}

func runReport(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, af := newAnalyzeFlagSet("report", "usage: perfcheck report -o report.html [flags] perf.data",
		"Writes one self-contained HTML file for a postmortem: the recording's header, the verdicts with reasons and advice, the trust figures, the top functions and the flame graph.", stderr)
	out := fs.String("o", "", "write the report to `FILE` (HTML; \"-\": stdout)")
	n := fs.Int("n", 20, "list the `N` hottest functions per event (0: all)")
	var fo foldedOptions
	file, code := outputArgs(fs, af, args, stdin, stderr, out, "- for stdout")
	if code >= 0 {
		return code
	}
	if *n < 0 {
		return usageError(fs, stderr, "-n %d: give 0 (all) or more", *n)
	}
	if file == "-" {
		// The header comes from a read of its own (as info's).
		return errorf(stderr, "report", "the report reads the recording twice: give a file, not -")
	}
	if *out != "-" && sameFile(*out, file) {
		return errorf(stderr, "report", "-o %s is the input file", *out)
	}
	opts, done := af.options(stderr)
	defer done()
	a, readErr := analyze(context.Background(), file, opts, stdin, stderr)
	if a == nil {
		return errorf(stderr, "report", "%v", readErr)
	}
	page, err := a.reportPage(file, *n, fo)
	if err != nil {
		return errorf(stderr, "report", "%v", err)
	}
	if err := writeFile(*out, stdout, func(w io.Writer) error { return reportTemplate.Execute(w, page) }); err != nil {
		return errorf(stderr, "report", "%v", err)
	}
	if readErr != nil {
		return errorf(stderr, "report", "partial report written: %v", readErr)
	}
	return exitOK
}

// reportPage gathers the report of the recording name, analysed in a.
func (a *analysis) reportPage(name string, n int, fo foldedOptions) (*reportPage, error) {
	f, err := openRecording(name, nil)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// A read error here is the check's too (same file): the check's
	// partial note says it.
	info, _ := gatherInfo(f, name)
	rep := a.res.Report()
	p := &reportPage{Name: filepath.Base(name), File: name, Info: info, Command: strings.Join(info.CmdLine, " "),
		TimeRange: reportTimeRange(info), Events: strings.Join(nonEmpty(rep.Events), ", "),
		Failed: rep.Failed(false), DSOs: rep.DSOs, Advice: rep.Advice, Notes: a.notes(rep)}
	p.Status = "OK: no DSO the samples touch is mismatched, missing or replaced."
	if p.Failed {
		p.Status = fmt.Sprintf("FAIL: %d DSO%s the samples touch %s mismatched, missing or replaced; their frames are not named.",
			rep.Problems, plural(rep.Problems), isAre(rep.Problems))
	}
	if rep.Partial {
		p.Partial = partialNote(a.res)
		p.Status = "INCOMPLETE: the recording could not be read to its end; the verdicts cover the records before the error."
		p.Failed = true
	}
	p.Trust = trustRows(rep)
	for _, ev := range a.top(check.TopOptions{N: n}, "") {
		rt := reportTop{topEvent: ev}
		for _, e := range ev.Entries {
			rt.Entries = append(rt.Entries, reportEntry{e, e.label()})
		}
		p.Top = append(p.Top, rt)
	}
	g, _, err := a.flameGraph(fo)
	if err != nil {
		return nil, err
	}
	p.GraphTitle = g.Title
	var buf bytes.Buffer
	if err := g.WriteFragment(&buf); err != nil {
		return nil, err
	}
	p.Graph = template.HTML(buf.String())
	return p, nil
}

func trustRows(rep *check.Report) []trustRow {
	row := func(n uint64, what string, untrusted bool) trustRow {
		r := trustRow{N: n, What: what, Share: percent(n, rep.Samples)}
		if untrusted && n > 0 {
			r.Class = "bad"
		}
		return r
	}
	return []trustRow{
		row(rep.Samples, "samples", false),
		row(rep.TrustedSamples, "fully trusted: every frame in a verified or unverified binary", false),
		row(rep.UntrustedLeafSamples, "with an untrusted leaf: the function that ran is not known", true),
		row(rep.UntrustedAnySamples, "with an untrusted frame anywhere in the stack", true),
	}
}

// reportTimeRange is info's time range line.
func reportTimeRange(in *infoJSON) string {
	t := in.TimeRange
	if t == nil {
		return "unknown"
	}
	s := perfTime(t.FirstNS) + " .. " + perfTime(t.LastNS) + " (" +
		strconv.FormatFloat(float64(t.LastNS-t.FirstNS)/1e6, 'f', 3, 64) + " ms, perf clock)"
	if t.FirstWall != "" {
		s += "; " + t.FirstWall + " .. " + t.LastWall
	}
	return s
}
