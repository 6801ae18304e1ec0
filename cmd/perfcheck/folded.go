package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/perfcheck/perfcheck/check"
)

// foldedOptions tune `perfcheck script --folded`.
type foldedOptions struct {
	event   string // the event whose samples are folded; "" = the first with samples
	count   bool   // weigh each stack by its samples, not their period
	inlines bool   // inlined frames are frames of their own (--inline)
}

// writeFolded prints the folded stacks of one event: for each distinct
// stack, "comm;root;...;leaf weight", sorted, as FlameGraph's
// stackcollapse-perf.pl folds perf script's text — here perfcheck
// script's, whose untrusted frames it folds to "[mismatch] libfoo.so.1".
// It works on the check's aggregates, so it needs no per-sample record.
// It returns the event folded and the events left out.
func writeFolded(w io.Writer, a *analysis, opts foldedOptions) (event string, skipped []string, err error) {
	ev, err := foldedEvent(a, opts.event)
	if err != nil {
		return "", nil, err
	}
	weights := map[string]uint64{}
	var parts []string
	for _, ag := range a.res.Aggregates() {
		if ag.Event != ev {
			continue
		}
		parts = append(parts[:0], strings.ReplaceAll(foldedComm(ag), " ", "_"))
		locs := ag.Stack.Locations()
		for i := len(locs) - 1; i >= 0; i-- {
			parts = appendFoldedFrames(parts, locs[i], opts.inlines)
		}
		wt := ag.Period
		if opts.count {
			wt = ag.Samples
		}
		weights[strings.Join(parts, ";")] += wt
	}
	keys := make([]string, 0, len(weights))
	for k := range weights {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	bw := bufio.NewWriterSize(w, 64<<10)
	for _, k := range keys {
		bw.WriteString(k)
		bw.WriteByte(' ')
		bw.WriteString(strconv.FormatUint(weights[k], 10))
		bw.WriteByte('\n')
	}
	for i := range a.res.EventInfo {
		if i != ev && eventHasSamples(a.res, i) {
			skipped = append(skipped, a.res.EventName(i))
		}
	}
	return a.res.EventName(ev), skipped, bw.Flush()
}

// foldedEvent is the index of the event to fold: the one named, else the
// first of the recording that has samples. Periods of different events do
// not add up, so one is folded at a time (stackcollapse-perf.pl also keeps
// one event, the first it meets).
func foldedEvent(a *analysis, name string) (int, error) {
	for i := range a.res.EventInfo {
		if name == "" && eventHasSamples(a.res, i) || name != "" && a.res.EventName(i) == name {
			return i, nil
		}
	}
	if name == "" {
		return 0, nil
	}
	var names []string
	for i := range a.res.EventInfo {
		names = append(names, a.res.EventName(i))
	}
	return 0, fmt.Errorf("--event %s: the recording's events are %s", name, strings.Join(names, ", "))
}

func eventHasSamples(res *check.Result, ev int) bool {
	for _, ag := range res.Aggregates() {
		if ag.Event == ev {
			return true
		}
	}
	return false
}

func foldedComm(ag check.Aggregate) string {
	if ag.Comm == "" {
		return ":" + strconv.Itoa(int(int32(ag.TID)))
	}
	return ag.Comm
}

// appendFoldedFrames appends the frames of l, outermost first: the
// function holding the code, then (with inlines) the inlined callees.
func appendFoldedFrames(parts []string, l *check.Location, inlines bool) []string {
	last := len(l.Frames) - 1
	parts = append(parts, foldedFrame(l, last))
	if inlines {
		for i := last - 1; i >= 0; i-- {
			parts = append(parts, foldedFrame(l, i))
		}
	}
	return parts
}

// foldedFrame is frame i of l as stackcollapse-perf.pl folds the line
// perfcheck script prints for it: the symbol field without its +0xOFF;
// "[unknown]" becomes "[BASE]" of the DSO ("[unknown]" when there is
// none); then its default tidying: ";" becomes ":", everything from the
// first "(" on goes (argument lists) unless the name looks like a Go
// method ("pkg.(*T).M") or the "(" opens "(anonymous namespace)", and
// quotes go.
func foldedFrame(l *check.Location, i int) string {
	sym, _, _ := scriptSymbol(l, i)
	if sym == "[unknown]" {
		if l.DSO.Path != "[unknown]" {
			// Not dso.BaseName: stackcollapse-perf.pl strips the
			// module with s/.*\///, so a bracketed name keeps its
			// brackets inside ours ("[[kernel.kallsyms]]") and a name
			// with a slash loses what comes before it, and folded
			// output is compared with that script's.
			p := l.DSO.Path
			if j := strings.LastIndexByte(p, '/'); j >= 0 {
				p = p[j+1:]
			}
			sym = "[" + p + "]"
		}
		return sym
	}
	sym = strings.ReplaceAll(sym, ";", ":")
	if !goMethod.MatchString(sym) {
		sym = cutArgs(sym)
	}
	return strings.NewReplacer(`"`, "", `'`, "").Replace(sym)
}

// goMethod is a Go method name, whose parentheses are part of the name.
var goMethod = regexp.MustCompile(`\.\(.*\)\.`)

// cutArgs drops everything from the first "(" that does not open
// "(anonymous namespace)".
func cutArgs(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] == '(' && !strings.HasPrefix(s[i:], "(anonymous namespace)") {
			return s[:i]
		}
	}
	return s
}
