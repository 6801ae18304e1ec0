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
	idx := map[string]int{} // stack -> its index in keys and weights
	var keys []string
	var weights []uint64
	var buf []byte
	eachFoldedStack(a, ev, opts, func(frames []foldedFrameAt, weight uint64) {
		buf = buf[:0]
		for i, f := range frames {
			if i > 0 {
				buf = append(buf, ';')
			}
			buf = append(buf, f.name...)
		}
		k, ok := idx[string(buf)]
		if !ok {
			k = len(keys)
			keys = append(keys, string(buf))
			weights = append(weights, 0)
			idx[keys[k]] = k
		}
		weights[k] += weight
	})
	order := make([]int, len(keys))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(i, j int) bool { return keys[order[i]] < keys[order[j]] })
	bw := bufio.NewWriterSize(w, 64<<10)
	for _, k := range order {
		buf = append(buf[:0], keys[k]...)
		buf = append(buf, ' ')
		buf = strconv.AppendUint(buf, weights[k], 10)
		buf = append(buf, '\n')
		bw.Write(buf)
	}
	return a.res.EventName(ev), a.otherEvents(ev), bw.Flush()
}

// otherEvents are the names of the events with samples but ev.
func (a *analysis) otherEvents(ev int) []string {
	var out []string
	has := eventsWithSamples(a.res)
	for i := range a.res.EventInfo {
		if i != ev && has[i] {
			out = append(out, a.res.EventName(i))
		}
	}
	return out
}

// foldedFrameAt is a frame of a folded stack: its name as --folded prints
// it, and the location its code is at (nil for the root, the comm).
type foldedFrameAt struct {
	name string
	loc  *check.Location
}

// eachFoldedStack calls fn with the frames (root first: the comm, then the
// outermost caller) and the weight of each of the check's aggregates of
// event ev: the stacks --folded prints and the flame graph draws. frames
// is reused between calls.
func eachFoldedStack(a *analysis, ev int, opts foldedOptions, fn func(frames []foldedFrameAt, weight uint64)) {
	// A location is in many stacks: its frames are folded once, kept by
	// Location.ID (its index in Locations, plus one).
	byLoc := make([][]foldedFrameAt, len(a.res.Locations))
	folded := func(l *check.Location) []foldedFrameAt {
		i := l.ID - 1
		if i < 0 || i >= len(byLoc) || a.res.Locations[i] != l {
			return appendFoldedFrames(nil, l, opts.inlines) // not one of the result's
		}
		if byLoc[i] == nil {
			byLoc[i] = appendFoldedFrames(nil, l, opts.inlines)
		}
		return byLoc[i]
	}
	var frames []foldedFrameAt
	for _, ag := range a.res.Aggregates() {
		if ag.Event != ev {
			continue
		}
		frames = append(frames[:0], foldedFrameAt{name: strings.ReplaceAll(foldedComm(ag), " ", "_")})
		locs := ag.Stack.Locations()
		for i := len(locs) - 1; i >= 0; i-- {
			frames = append(frames, folded(locs[i])...)
		}
		wt := ag.Period
		if opts.count {
			wt = ag.Samples
		}
		fn(frames, wt)
	}
}

// foldedEvent is the index of the event to fold: the one named, else the
// first of the recording that has samples. Periods of different events do
// not add up, so one is folded at a time (stackcollapse-perf.pl also keeps
// one event, the first it meets).
func foldedEvent(a *analysis, name string) (int, error) {
	has := eventsWithSamples(a.res)
	for i := range a.res.EventInfo {
		if name == "" && has[i] || name != "" && a.res.EventName(i) == name {
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

// eventsWithSamples says, by event index, which events have samples: one
// pass over the aggregates for all of them.
func eventsWithSamples(res *check.Result) []bool {
	has := make([]bool, res.NumEvents())
	for _, ag := range res.Aggregates() {
		has[ag.Event] = true
	}
	return has
}

func foldedComm(ag check.Aggregate) string {
	if ag.Comm == "" {
		return ":" + strconv.Itoa(int(int32(ag.TID)))
	}
	return ag.Comm
}

// appendFoldedFrames appends the frames of l, outermost first: the
// function holding the code, then (with inlines) the inlined callees.
func appendFoldedFrames(frames []foldedFrameAt, l *check.Location, inlines bool) []foldedFrameAt {
	last := len(l.Frames) - 1
	frames = append(frames, foldedFrameAt{foldedFrame(l, last), l})
	if inlines {
		for i := last - 1; i >= 0; i-- {
			frames = append(frames, foldedFrameAt{foldedFrame(l, i), l})
		}
	}
	return frames
}

// foldedFrame is frame i of l as stackcollapse-perf.pl folds the line
// perfcheck script prints for it: the symbol field without its +0xOFF;
// "[unknown]" becomes "[BASE]" of the DSO ("[unknown]" when there is
// none); then its default tidying: ";" becomes ":", everything from the
// first "(" on goes (argument lists) unless the name looks like a Go
// method ("pkg.(*T).M") or the "(" opens "(anonymous namespace)", and
// quotes go.
func foldedFrame(l *check.Location, i int) string {
	sym := scriptSymbol(l, i)
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
	return unquote.Replace(sym)
}

// unquote drops the quotes stackcollapse-perf.pl drops.
var unquote = strings.NewReplacer(`"`, "", `'`, "")

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
