package check

import (
	"errors"
	"fmt"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/perfcheck/perfcheck/perfdata"
)

// Filter selects the samples a check looks at, with the meaning of perf
// report's filters of the same names: a sample is kept when it matches
// every field that is set, and a field when any of its values matches.
// The zero Filter keeps every sample. Samples left out are not counted
// anywhere, so verdicts cover only the DSOs the kept samples touch.
type Filter struct {
	Comms []string // the thread's command name when sampled (perf --comms)
	PIDs  []uint32 // the process (perf --pid)
	TIDs  []uint32 // the thread (perf --tid)
	CPUs  []uint32 // the CPU the sample was taken on (perf --cpu)
	// DSOs are the binaries the sample's IP is in, by recorded path or
	// base name (perf --dsos).
	DSOs []string
	// Events are event names, as EventName gives them; a name without
	// modifiers ("cycles") also matches the event with them ("cycles:u").
	Events []string
	// Time is perf's --time: "START,END" in seconds of the recording's
	// clock (either end may be left out), several such ranges separated
	// by spaces; or parts of the span between the first and last sample
	// (the recording's SAMPLE_TIME header): "10%/2" is the second tenth,
	// "0%-10%" the first, several separated by commas.
	Time string
}

// isZero reports whether f keeps every sample.
func (f *Filter) isZero() bool {
	return len(f.Comms)+len(f.PIDs)+len(f.TIDs)+len(f.CPUs)+len(f.DSOs)+len(f.Events) == 0 && f.Time == ""
}

// sampleFilter is a Filter made ready for a recording: event names turned
// into indexes, time ranges into nanoseconds.
type sampleFilter struct {
	Filter
	events []bool // by event index; nil keeps every event
	times  []timeRange
	// pending, for a stream, is the recording whose events (and header)
	// the filter is made ready for at its first sample: a stream
	// describes them as it goes, before its samples. err is what that
	// found wrong; the check then fails with it.
	pending *pendingFilter
	err     error
}

// pendingFilter is what a filter of a stream needs at its first sample.
type pendingFilter struct {
	rec  recording
	name string
}

// timeRange is [start, end] in nanoseconds, inclusive as perf's; a zero
// bound is open.
type timeRange struct{ start, end uint64 }

// newSampleFilter prepares f for recording rec (named name in errors);
// nil when f keeps every sample.
func newSampleFilter(f Filter, rec recording, name string) (*sampleFilter, error) {
	if f.isZero() {
		return nil, nil
	}
	sf := &sampleFilter{Filter: f}
	if _, ok := rec.(*perfdata.File); !ok && (len(f.Events) > 0 || len(f.CPUs) > 0 || f.Time != "") {
		sf.pending = &pendingFilter{rec: rec, name: name}
		return sf, nil
	}
	if err := filterError(name, sf.ready(rec)); err != nil {
		return nil, err
	}
	return sf, nil
}

// filterError names the recording in err, what ready found wrong; a
// stream ("-") is named by its caller.
func filterError(name string, err error) error {
	if err == nil || name == "-" || name == "" {
		return err
	}
	return fmt.Errorf("%s: %w", name, err)
}

// ready turns f's event names into indexes and its time ranges into
// nanoseconds, for recording rec.
func (sf *sampleFilter) ready(rec recording) error {
	f := &sf.Filter
	if len(f.Events) > 0 {
		evs := rec.Events()
		sf.events = make([]bool, len(evs))
		var names []string
		for _, want := range f.Events {
			found := false
			for i := range evs {
				n := evs[i].Name
				if n == "" {
					n = "event" + strconv.Itoa(i)
				}
				if n == want || strings.HasPrefix(n, want+":") {
					sf.events[i], found = true, true
				}
				if len(names) < len(evs) {
					names = append(names, n)
				}
			}
			if !found {
				return fmt.Errorf("no event %q; the recording's events are %s", want, strings.Join(names, ", "))
			}
		}
	}
	if len(f.CPUs) > 0 && !slices.ContainsFunc(rec.Events(), func(e perfdata.Event) bool { return e.Attr.SampleType&perfdata.SampleCPU != 0 }) {
		// As perf report -C refuses it: every sample would be left out.
		return errors.New("the samples hold no CPU (perf record -a or --sample-cpu records it)")
	}
	if f.Time != "" {
		var err error
		if sf.times, err = parseTimeRanges(f.Time, rec); err != nil {
			return fmt.Errorf("--time %s: %w", f.Time, err)
		}
	}
	return nil
}

// keep reports whether the session takes sample e. The cheap fields are
// tested first; comm and DSO need a lookup.
func (f *sampleFilter) keep(s *session, e *sampleEvent) bool {
	if p := f.pending; p != nil {
		f.pending = nil
		f.err = filterError(p.name, f.ready(p.rec))
	}
	if f.err != nil {
		return false
	}
	if f.events != nil && (e.Event >= len(f.events) || !f.events[e.Event]) {
		return false
	}
	if len(f.PIDs) > 0 && !slices.Contains(f.PIDs, e.PID) ||
		len(f.TIDs) > 0 && !slices.Contains(f.TIDs, e.TID) ||
		len(f.CPUs) > 0 && !slices.Contains(f.CPUs, e.CPU) {
		return false
	}
	if f.times != nil && !inRanges(f.times, e.Time) {
		return false
	}
	if len(f.Comms) > 0 && !slices.Contains(f.Comms, s.tracker.ThreadComm(e.TID)) {
		return false
	}
	if len(f.DSOs) > 0 {
		p := s.dsos[s.resolve(e.PID, e.Mode, e.IP).dso].Path
		if !slices.Contains(f.DSOs, p) && !slices.Contains(f.DSOs, path.Base(p)) {
			return false
		}
	}
	return true
}

// inRanges reports whether t is in one of rs, as perf_time__ranges_skip_sample.
func inRanges(rs []timeRange, t uint64) bool {
	for _, r := range rs {
		if (r.start == 0 || t >= r.start) && (r.end == 0 || t <= r.end) {
			return true
		}
	}
	return false
}

// parseTimeRanges parses perf's --time (perf_time__parse_for_ranges in
// tools/perf/util/time-utils.c).
func parseTimeRanges(spec string, rec recording) ([]timeRange, error) {
	if !strings.Contains(spec, "%") {
		var out []timeRange
		for _, part := range strings.Fields(spec) {
			a, b, ok := strings.Cut(part, ",")
			if !ok {
				return nil, fmt.Errorf("%q: want START,END", part)
			}
			var r timeRange
			var err error
			if r.start, err = parseSecNsec(a); err != nil {
				return nil, err
			}
			if r.end, err = parseSecNsec(b); err != nil {
				return nil, err
			}
			if r.end != 0 && r.end < r.start {
				return nil, fmt.Errorf("%q: END before START", part)
			}
			out = append(out, r)
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("no range")
		}
		return out, nil
	}
	first, last, err := rec.Features().SampleTime()
	if err != nil || first == 0 && last == 0 {
		return nil, fmt.Errorf("percentages need the first and last sample times, which the recording does not hold (a pipe-mode recording, or perf record --buildid-all without --timestamp-boundary)")
	}
	var out []timeRange
	for _, part := range strings.Split(spec, ",") {
		lo, hi, err := parsePercentRange(part)
		if err != nil {
			return nil, err
		}
		total := float64(last - first)
		r := timeRange{start: first + uint64(math.Round(lo*total)), end: first + uint64(math.Round(hi*total))}
		if r.end > r.start && hi != 1 {
			r.end-- // the next slice's start is not this one's
		}
		out = append(out, r)
	}
	return out, nil
}

// parsePercentRange parses "A%/N" (the Nth slice of A%) or "A%-B%" into
// fractions of the span.
func parsePercentRange(s string) (lo, hi float64, err error) {
	pct := func(v string) (float64, error) {
		n, ok := strings.CutSuffix(strings.TrimSpace(v), "%")
		f, err := strconv.ParseFloat(n, 64)
		if !ok || err != nil || f < 0 || f > 100 {
			return 0, fmt.Errorf("%q: want a percentage from 0%% to 100%%", v)
		}
		return f / 100, nil
	}
	if a, n, ok := strings.Cut(s, "/"); ok {
		p, err := pct(a)
		if err != nil {
			return 0, 0, err
		}
		i, err := strconv.Atoi(strings.TrimSpace(n))
		if err != nil || i < 1 || p*float64(i) > 1+1e-9 {
			return 0, 0, fmt.Errorf("%q: want A%%/N with N from 1 to 100/A", s)
		}
		return p * float64(i-1), min(p*float64(i), 1), nil
	}
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		return 0, 0, fmt.Errorf("%q: want A%%/N or A%%-B%%", s)
	}
	if lo, err = pct(a); err != nil {
		return 0, 0, err
	}
	if hi, err = pct(b); err != nil {
		return 0, 0, err
	}
	if hi < lo {
		return 0, 0, fmt.Errorf("%q: the end is before the start", s)
	}
	return lo, hi, nil
}

// parseSecNsec parses perf's "SECONDS.NANOSECONDS" (at most nine digits
// after the point); "" is 0, an open bound.
func parseSecNsec(s string) (uint64, error) {
	if s == "" {
		return 0, nil
	}
	sec, frac, _ := strings.Cut(s, ".")
	n, err := strconv.ParseUint(sec, 10, 64)
	if err != nil || len(frac) > 9 || n > math.MaxUint64/1_000_000_000 {
		return 0, fmt.Errorf("%q: want SECONDS.NANOSECONDS", s)
	}
	var ns uint64
	if frac != "" {
		if ns, err = strconv.ParseUint(frac+strings.Repeat("0", 9-len(frac)), 10, 64); err != nil {
			return 0, fmt.Errorf("%q: want SECONDS.NANOSECONDS", s)
		}
	}
	return n*1e9 + ns, nil
}
