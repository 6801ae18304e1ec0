package check

import (
	"sort"
	"strconv"
	"strings"
	"time"
)

// Report is the check's summary, the value `perfcheck check --json` prints
// (docs/check-json.md is its schema).
type Report struct {
	File         string     `json:"file"`
	Events       []string   `json:"events,omitempty"` // the recording's event names by index, "" when unknown
	RecordingEnd *time.Time `json:"recording_end,omitempty"`
	// RecordingEndSource is where RecordingEnd comes from: "clock" (the
	// recording's own clock) or "mtime" (the file's modification time).
	RecordingEndSource   string `json:"recording_end_source,omitempty"`
	Samples              uint64 `json:"samples"`
	TrustedSamples       uint64 `json:"trusted_samples"`
	UntrustedLeafSamples uint64 `json:"untrusted_leaf_samples"`
	UntrustedAnySamples  uint64 `json:"untrusted_any_samples"`
	// Strict are the trust figures under --strict's policy (unverified
	// DSOs untrusted too), which `perfcheck check --strict` prints.
	Strict TrustFigures `json:"strict_figures"`
	DSOs   []*DSO       `json:"dsos"`
	Advice []Advice     `json:"advice,omitempty"`
	// Notes are limits of this check on this recording, in words.
	Notes []string `json:"notes,omitempty"`
	// Problems counts the DSOs whose verdict fails the check (mismatch,
	// missing, replaced); StrictProblems also counts unverified ones.
	Problems       int `json:"problems"`
	StrictProblems int `json:"strict_problems"`
	// Partial is true when reading stopped at Error before the end of the
	// recording: the report covers the records before it.
	Partial bool   `json:"partial,omitempty"`
	Error   string `json:"error,omitempty"`
}

// Advice is one thing to do, with the DSOs it is about.
type Advice struct {
	Text  string   `json:"text"`
	Paths []string `json:"paths"`
}

// Report summarizes the result.
func (r *Result) Report() *Report {
	rep := &Report{
		File:                 r.File,
		Samples:              r.Samples,
		TrustedSamples:       r.TrustedSamples,
		UntrustedLeafSamples: r.UntrustedLeafSamples,
		UntrustedAnySamples:  r.UntrustedAnySamples,
		Strict:               r.Strict,
		DSOs:                 append(make([]*DSO, 0, len(r.DSOs)), r.DSOs...),
	}
	for _, e := range r.EventInfo {
		rep.Events = append(rep.Events, e.Name)
	}
	if r.Partial {
		rep.Partial = true
		if r.ReadErr != nil {
			rep.Error = r.ReadErr.Error()
		}
	}
	if !r.RecordingEnd.IsZero() {
		t := r.RecordingEnd.UTC()
		rep.RecordingEnd = &t
		rep.RecordingEndSource = r.RecordingEndSource
	}
	advice := map[string][]string{}
	var order []string
	for _, d := range r.DSOs {
		if d.Verdict.Problem(false) {
			rep.Problems++
		}
		if d.Verdict.Problem(true) {
			rep.StrictProblems++
		}
		if d.advice != "" && d.Verdict != Verified {
			if _, ok := advice[d.advice]; !ok {
				order = append(order, d.advice)
			}
			advice[d.advice] = append(advice[d.advice], d.Path)
		}
	}
	// What the reader tolerated comes first: a recording perf record did
	// not finish holds fewer samples than it ran for, and lacks the
	// header features (build-ids) that the verdicts rely on.
	for _, w := range r.ReadWarnings {
		rep.Notes = append(rep.Notes, "recording: "+w)
	}
	if r.StackUserSamples > 0 {
		rep.Notes = append(rep.Notes, strconv.FormatUint(r.StackUserSamples, 10)+
			" samples carry a user stack copy (perf record --call-graph dwarf) that perfcheck cannot unwind (only x86-64 with user registers is unwound): their user callers beyond the leaf are not checked")
	}
	if r.UnprovenUnwinds > 0 {
		rep.Notes = append(rep.Notes, strconv.FormatUint(r.UnprovenUnwinds, 10)+
			" samples' user stacks were unwound only up to a binary that could not be proven to be the one that ran (its unwind tables could invent callers): their outer callers are not checked")
	}
	for _, a := range order {
		paths := advice[a]
		sort.Strings(paths)
		rep.Advice = append(rep.Advice, Advice{Text: a, Paths: paths})
	}
	return rep
}

// Failed reports whether the check fails: some DSO samples touch is
// mismatch, missing or replaced (with strict, also unverified).
func (rep *Report) Failed(strict bool) bool {
	if strict {
		return rep.StrictProblems > 0
	}
	return rep.Problems > 0
}

// Summary is the one-line summary the check prints.
func (rep *Report) Summary() string {
	return rep.summary(TrustFigures{rep.TrustedSamples, rep.UntrustedLeafSamples, rep.UntrustedAnySamples})
}

// StrictSummary is the summary under --strict's policy: a sample with an
// unverified frame is not fully trusted.
func (rep *Report) StrictSummary() string {
	return rep.summary(rep.Strict) + " (--strict: unverified frames untrusted)"
}

func (rep *Report) summary(f TrustFigures) string {
	pct := func(n uint64) string {
		if rep.Samples == 0 {
			return "0%"
		}
		s := strconv.FormatFloat(float64(n)*100/float64(rep.Samples), 'f', 1, 64)
		return strings.TrimSuffix(s, ".0") + "%"
	}
	return strconv.FormatUint(rep.Samples, 10) + " samples, " + pct(f.TrustedSamples) + " fully trusted; " +
		pct(f.UntrustedLeafSamples) + " have an untrusted leaf; " + pct(f.UntrustedAnySamples) + " an untrusted frame"
}
