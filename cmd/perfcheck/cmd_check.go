package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/perfcheck/perfcheck/check"
	"github.com/perfcheck/perfcheck/dso"
)

func init() {
	register(&command{
		name:    "check",
		usage:   "perfcheck [check] [flags] perf.data|-",
		summary: "tell whether the recording's function names can be trusted (the default command)",
		run:     runCheck,
	})
}

// checkJSON is what `perfcheck check --json` prints: the check package's
// Report (docs/check-json.md) plus how this run judged it.
type checkJSON struct {
	*check.Report
	Strict bool `json:"strict"` // --strict: unverified DSOs fail too
	Failed bool `json:"failed"` // the exit status is 1
	// MaxUntrusted is --max-untrusted: the run failed only when more than
	// this percentage of the samples has an untrusted frame.
	MaxUntrusted *float64 `json:"max_untrusted_percent,omitempty"`
}

func runCheck(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, af := newAnalyzeFlagSet("check", "usage: perfcheck [check] [flags] perf.data|-",
		"Checks that every binary the samples touch is the one that ran; exit 0 clean, 1 problems, 2 error.", stderr)
	jsonOut := fs.Bool("json", false, "print the report as JSON (docs/check-json.md)")
	strict := fs.Bool("strict", false, "fail on unverified DSOs too (no build-id recorded, no evidence of change)")
	brief := fs.Bool("brief", false, "list only the DSOs that fail, then the summary and what to do (for system-wide recordings)")
	maxUntrusted := fs.Float64("max-untrusted", -1, "exit 1 only when more than `PCT` percent of the samples have an untrusted frame (default: when any DSO the samples touch fails)")
	pos, code := interspersed(fs, args)
	if code >= 0 {
		return code
	}
	file, err := af.file(pos, stdin)
	if err != nil {
		return usageError(fs, stderr, "%v", err)
	}
	if *maxUntrusted > 100 || *maxUntrusted < 0 && *maxUntrusted != -1 {
		return usageError(fs, stderr, "--max-untrusted %g: give a percentage from 0 to 100", *maxUntrusted)
	}
	opts, done := af.options(stderr)
	defer done()
	opts.ReportOnly = true // the verdicts need no names, the report no stacks
	a, readErr := analyze(context.Background(), file, opts, stdin, stderr)
	if a == nil {
		return errorf(stderr, "check", "%v", readErr)
	}
	rep := a.res.Report()
	failed := rep.Failed(*strict)
	var limit *float64
	if *maxUntrusted >= 0 {
		limit = maxUntrusted
		failed = untrustedPercent(rep, *strict) > *maxUntrusted
	}
	if *jsonOut {
		if err := writeJSON(stdout, checkJSON{Report: rep, Strict: *strict, Failed: failed, MaxUntrusted: limit}); err != nil {
			return errorf(stderr, "check", "%v", err)
		}
	} else {
		shown := rep
		if *brief {
			shown = failingOnly(rep, *strict)
		}
		writeCheckText(stdout, shown, *strict, af.trustPaths)
		if *brief && len(shown.DSOs) < len(rep.DSOs) {
			fmt.Fprintf(stdout, "(%d other DSO%s the samples touch passed; --brief lists only those that fail)\n",
				len(rep.DSOs)-len(shown.DSOs), plural(len(rep.DSOs)-len(shown.DSOs)))
		}
		if limit != nil {
			verdict := "within"
			if failed {
				verdict = "over"
			}
			fmt.Fprintf(stdout, "%s --max-untrusted %g%%: %.1f%% of the samples have an untrusted frame.\n",
				verdict, *limit, untrustedPercent(rep, *strict))
		}
	}
	if readErr != nil {
		// The report of what was read is printed, but a check of part of
		// a recording is not a pass: exit 2, the error on stderr.
		return errorf(stderr, "check", "%v", readErr)
	}
	if failed {
		return exitProblems
	}
	return exitOK
}

// writeCheckText prints the report: the DSO table, with the reason and the
// evidence under each DSO that is not verified, then the summary and what
// to do.
func writeCheckText(w io.Writer, rep *check.Report, strict, trustPaths bool) {
	fmt.Fprintf(w, "%s: %s\n", rep.File, strings.Join(nonEmpty(rep.Events), ", "))
	writeRecordingEnd(w, rep)
	if rep.Partial {
		fmt.Fprintf(w, "PARTIAL: reading stopped at an error; this report covers only the records before it: %s\n", rep.Error)
	}
	fmt.Fprintln(w)
	writeDSOTable(w, rep, strict)
	writeDSODetails(w, rep, trustPaths)
	writeCheckEnd(w, rep, strict)
}

// writeDSOTable prints the DSO table: one line per DSO with its verdict,
// hits, build-id and where its binary was found.
func writeDSOTable(w io.Writer, rep *check.Report, strict bool) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "VERDICT\tLEAF\tANY\tBUILD-ID\tFOUND\tDSO")
	for _, d := range rep.DSOs {
		id := d.BuildID.String()
		if id == "" {
			id = "-"
		} else if len(id) > 12 {
			id = id[:12]
		}
		found := d.Source
		if found == "" {
			found = "-"
		}
		mark := ""
		if d.Verdict.Problem(strict) {
			mark = " !"
		}
		fmt.Fprintf(tw, "%s%s\t%d\t%d\t%s\t%s\t%s\n", d.Verdict, mark, d.HitsLeaf, d.HitsAny, id, found, d.Path)
	}
	tw.Flush()
}

// writeDSODetails prints, under the table, the details of every DSO that
// is not plainly verified: the reason and the evidence.
func writeDSODetails(w io.Writer, rep *check.Report, trustPaths bool) {
	first := true
	for _, d := range rep.DSOs {
		if d.Verdict == check.Verified && d.FoundPath == d.Path && d.SymbolError == "" && len(d.Notes) == 0 {
			continue
		}
		if d.Verdict == check.NoFile && len(d.Notes) == 0 {
			continue
		}
		if first {
			fmt.Fprintln(w)
			first = false
		}
		if (d.Verdict == check.Verified || d.Verdict == check.NoFile) && d.SymbolError == "" {
			// Verified through another file than the recorded path
			// (perf's cache, a debug directory, debuginfod): say which.
			if d.Verdict == check.NoFile {
				fmt.Fprintf(w, "%s: %s\n", d.Path, d.Verdict)
			} else if d.FoundPath != d.Path {
				fmt.Fprintf(w, "%s: verified; binary used: %s (%s)\n", d.Path, d.FoundPath, d.Source)
			} else {
				fmt.Fprintf(w, "%s: verified\n", d.Path)
			}
			writeDSONotes(w, d.Notes)
			continue
		}
		writeDSODetail(w, d, trustPaths)
	}
}

// writeDSODetail prints the reason and the evidence for d, which is not
// verified (or could not be opened for symbols).
func writeDSODetail(w io.Writer, d *check.DSO, trustPaths bool) {
	fmt.Fprintf(w, "%s: %s\n", d.Path, d.Verdict)
	if d.Reason != "" {
		fmt.Fprintf(w, "    %s\n", d.Reason)
	}
	if len(d.BuildID) > 0 {
		src := d.BuildIDSource
		if src == "" {
			src = "recorded"
		}
		fmt.Fprintf(w, "    recorded build-id: %s (%s)\n", d.BuildID, src)
	}
	for _, c := range d.Candidates {
		fmt.Fprintf(w, "    candidate build-id: %s\n", c)
	}
	if d.FoundPath != "" && d.Verdict != check.Missing && (d.FoundPath != d.Path || !bytes.Equal(d.FoundBuildID, d.BuildID)) {
		what := "file at the path"
		if d.Verdict == check.Verified {
			what = "binary used"
		}
		fb := d.FoundBuildID.String()
		if fb == "" {
			fb = "no build-id"
		}
		fmt.Fprintf(w, "    %s: %s (%s)\n", what, d.FoundPath, fb)
	}
	if d.GoBuildID != "" {
		fmt.Fprintf(w, "    Go build-id: %s\n", d.GoBuildID)
	}
	if d.SymbolError != "" {
		fmt.Fprintf(w, "    symbols: %s\n", d.SymbolError)
	}
	writeDSONotes(w, d.Notes)
	if !d.Verdict.Trusted() {
		if trustPaths && (d.Verdict == check.Mismatch || d.Verdict == check.Replaced) {
			fmt.Fprintf(w, "    frames named from the file at the path (--trust-paths) and marked untrusted\n")
		} else {
			fmt.Fprintf(w, "    frames shown as %s+0xOFFSET [%s], never named\n", dso.BaseName(d.Path), d.Verdict)
		}
	}
}

// writeCheckEnd prints the summary, the notes, what to do, and the
// verdict line.
func writeCheckEnd(w io.Writer, rep *check.Report, strict bool) {
	fmt.Fprintln(w)
	if strict {
		fmt.Fprintln(w, rep.StrictSummary())
	} else {
		fmt.Fprintln(w, rep.Summary())
	}
	if len(rep.Notes) > 0 {
		// Limits of the check on this recording (e.g. --call-graph dwarf
		// samples whose unwinding stopped at an unproven binary): the
		// counts above do not cover what lies beyond them.
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Notes:")
		for _, n := range rep.Notes {
			fmt.Fprintf(w, "  - %s\n", n)
		}
	}
	if len(rep.Advice) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "What to do:")
		for _, a := range rep.Advice {
			fmt.Fprintf(w, "  - %s\n", a.Text)
			for _, p := range a.Paths {
				fmt.Fprintf(w, "      %s\n", p)
			}
		}
	}
	fmt.Fprintln(w)
	if rep.Partial {
		fmt.Fprintln(w, "PARTIAL: the recording could not be read to its end (see above); the verdicts cover the records before the error.")
	}
	// A partial read exits 2: nothing is OK about it, whatever the
	// records before the error showed.
	switch n := problemCount(rep, strict); {
	case n == 0 && rep.Partial:
		fmt.Fprintln(w, "INCOMPLETE: no DSO the samples read touch is mismatched, missing or replaced, but the rest of the recording was not checked.")
	case n == 0 && strict:
		fmt.Fprintln(w, "OK: every DSO the samples touch is verified.")
	case n == 0:
		fmt.Fprintln(w, "OK: no DSO the samples touch is mismatched, missing or replaced.")
	default:
		what := "mismatched, missing or replaced"
		if strict {
			what += " (or unverified, --strict)"
		}
		fmt.Fprintf(w, "FAIL: %d DSO%s the samples touch %s %s.\n", n, plural(n), isAre(n), what)
	}
}

// writeDSONotes prints a DSO's notes (check.DSO.Notes) under its details.
func writeDSONotes(w io.Writer, notes []string) {
	for _, n := range notes {
		fmt.Fprintf(w, "    note: %s\n", n)
	}
}

// failingOnly is rep with only the DSOs that fail under strict: what
// --brief lists.
func failingOnly(rep *check.Report, strict bool) *check.Report {
	b := *rep
	b.DSOs = nil
	for _, d := range rep.DSOs {
		if d.Verdict.Problem(strict) {
			b.DSOs = append(b.DSOs, d)
		}
	}
	return &b
}

// untrustedPercent is the share of the samples with an untrusted frame
// anywhere in the stack, under strict's policy.
func untrustedPercent(rep *check.Report, strict bool) float64 {
	if rep.Samples == 0 {
		return 0
	}
	n := rep.UntrustedAnySamples
	if strict {
		n = rep.Strict.UntrustedAnySamples
	}
	return float64(n) * 100 / float64(rep.Samples)
}

func problemCount(rep *check.Report, strict bool) int {
	if strict {
		return rep.StrictProblems
	}
	return rep.Problems
}

func nonEmpty(ss []string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return []string{"no named events"}
	}
	return out
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

// writeRecordingEnd says when the recording ended, the time binaries
// without a build-id are compared with, and where that time comes from.
func writeRecordingEnd(w io.Writer, rep *check.Report) {
	switch {
	case rep.RecordingEnd == nil:
		fmt.Fprintln(w, "recording end: unknown (a stream without a wall-clock reference): modification times are not compared")
	case rep.RecordingEndSource == check.EndFromClock:
		fmt.Fprintf(w, "recording end: %s (the last sample, by the recording's own clock)\n", rep.RecordingEnd.Format(time.RFC3339))
	default:
		fmt.Fprintf(w, "recording end: %s (the file's modification time; a copy resets it: record with -k CLOCK_MONOTONIC to carry the clock)\n", rep.RecordingEnd.Format(time.RFC3339))
	}
}
