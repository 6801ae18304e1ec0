package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/perfcheck/perfcheck/check"
	"github.com/perfcheck/perfcheck/perfdata"
	"github.com/perfcheck/perfcheck/symbolize"
)

func init() {
	register(&command{
		name:    "script",
		usage:   "perfcheck script [flags] perf.data|-",
		summary: "print every sample with its trust-marked callchain, as perf script",
		run:     runScript,
	})
}

// scriptSample is one line of `perfcheck script --json` (JSON Lines: one
// object per line, in perf's delivery order).
type scriptSample struct {
	Comm        string        `json:"comm"`
	PID         int32         `json:"pid"`
	TID         int32         `json:"tid"`
	CPU         *uint32       `json:"cpu,omitempty"` // absent when the event did not record PERF_SAMPLE_CPU
	Time        uint64        `json:"time"`          // perf clock, nanoseconds
	Event       string        `json:"event"`
	Period      uint64        `json:"period"`
	Trusted     bool          `json:"trusted"`
	LeafTrusted bool          `json:"leaf_trusted"`
	Frames      []scriptFrame `json:"frames"`
}

// scriptFrame is one location of a sample's stack, leaf first.
type scriptFrame struct {
	Offset  string            `json:"offset"`            // file offset in the DSO ("0x..."); for the kernel and file-less memory the address
	Address string            `json:"address,omitempty"` // the runtime address as recorded ("0x...")
	DSO     string            `json:"dso"`
	Verdict string            `json:"verdict"`
	Trusted bool              `json:"trusted"`
	Symbol  string            `json:"symbol,omitempty"` // the outermost function at this location; absent when not named
	Frames  []symbolize.Frame `json:"frames,omitempty"`
}

func runScript(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, af := newAnalyzeFlagSet("script", "usage: perfcheck script [flags] perf.data|-",
		"Prints each sample (comm pid/tid [cpu] time: period event:) and its callchain; untrusted frames stay dso+0xoffset [verdict].", stderr)
	jsonOut := fs.Bool("json", false, "print one JSON object per sample (JSON Lines; docs/commands-check.md)")
	inlines := fs.Bool("inline", false, "print inlined frames on their own lines, as perf script --inline")
	pos, code := interspersed(fs, args)
	if code >= 0 {
		return code
	}
	if len(pos) != 1 {
		fs.Usage()
		return exitError
	}
	opts, done := af.options(stderr)
	defer done()
	opts.KeepSamples = true
	a, readErr := analyze(context.Background(), pos[0], opts, stdin, stderr)
	if a == nil {
		return errorf(stderr, "script", "%v", readErr)
	}
	bw := bufio.NewWriterSize(stdout, 64<<10)
	var enc *json.Encoder
	if *jsonOut {
		enc = json.NewEncoder(bw)
		enc.SetEscapeHTML(false)
	}
	var line []byte
	err := a.res.EachSample(func(s *check.Sample) error {
		if enc != nil {
			return enc.Encode(a.scriptJSON(s))
		}
		line = a.appendScriptSample(line[:0], s, *inlines)
		_, err := bw.Write(line)
		return err
	})
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		return errorf(stderr, "script", "%v", err)
	}
	// Notes go to stderr: stdout keeps perf script's one-sample-per-line
	// shape (or one JSON object per line).
	for _, n := range a.notes(a.res.Report()) {
		fmt.Fprintln(stderr, "perfcheck script: note: "+n)
	}
	if readErr != nil {
		// The samples before the error were printed, as perf script
		// does; the error and exit 2 say the rest is missing.
		return errorf(stderr, "script", "partial output: %v", readErr)
	}
	return exitOK
}

// hasCPU reports whether event i recorded PERF_SAMPLE_CPU; perf script
// prints the cpu field only then.
func (a *analysis) hasCPU(i int) bool {
	return i >= 0 && i < len(a.events) && a.events[i].Attr.SampleType&perfdata.SampleCPU != 0
}

// hasCallchain reports whether event i recorded callchains
// (PERF_SAMPLE_CALLCHAIN).
func (a *analysis) hasCallchain(i int) bool {
	return i >= 0 && i < len(a.events) && a.events[i].Attr.SampleType&perfdata.SampleCallchain != 0
}

// nameWidth is the width perf script right-aligns event names to: the
// longest event name of the recording (evlist__max_name_len).
func (a *analysis) nameWidth() int {
	if a.evWidth == 0 {
		for i := range a.res.Events {
			a.evWidth = max(a.evWidth, len(a.eventName(i)))
		}
	}
	return a.evWidth
}

func (a *analysis) eventName(i int) string {
	if i >= 0 && i < len(a.res.Events) && a.res.Events[i] != "" {
		return a.res.Events[i]
	}
	return "event" + strconv.Itoa(i)
}

// appendScriptSample formats one sample as perf 6.1's
// `perf script -F comm,pid,tid[,cpu],time,period,event,ip,sym,dso` does
// (process_sample_event and perf_sample__fprintf_start in
// tools/perf/builtin-script.c): "%16s %5d/%-5d [%03d] %5lu.%06lu: %10lu
// %s: ", then one line per callchain entry "\t%16lx sym (dso)". An
// untrusted sample ends its first line with "[untrusted]"; an unnamed
// frame is "dso+0xoffset [verdict]", an unverified one ends with
// "[unverified]".
func (a *analysis) appendScriptSample(b []byte, s *check.Sample, inlines bool) []byte {
	if a.hasCallchain(s.Event) {
		// perf prints the comm unpadded when callchains follow.
		b = append(b, s.Comm...)
	} else {
		b = appendPadLeft(b, s.Comm, 16)
	}
	b = append(b, ' ')
	b = appendPadLeft(b, strconv.Itoa(int(s.PID)), 5)
	b = append(b, '/')
	n := len(b)
	b = strconv.AppendInt(b, int64(s.TID), 10)
	for len(b)-n < 5 {
		b = append(b, ' ')
	}
	b = append(b, ' ')
	if a.hasCPU(s.Event) {
		b = append(b, '[')
		c := strconv.Itoa(int(s.CPU))
		for i := len(c); i < 3; i++ {
			b = append(b, '0')
		}
		b = append(b, c...)
		b = append(b, "] "...)
	}
	b = appendPadLeft(b, strconv.FormatUint(s.Time/1e9, 10), 5)
	b = append(b, '.')
	us := strconv.FormatUint(s.Time%1e9/1e3, 10)
	for i := len(us); i < 6; i++ {
		b = append(b, '0')
	}
	b = append(b, us...)
	b = append(b, ": "...)
	b = appendPadLeft(b, strconv.FormatUint(s.Period, 10), 10)
	b = append(b, ' ')
	b = appendPadLeft(b, a.eventName(s.Event), a.nameWidth())
	b = append(b, ": "...)
	locs := s.Stack.Locations()
	if !a.hasCallchain(s.Event) && len(locs) == 1 && !(inlines && len(locs[0].Frames) > 1) {
		// No callchain: perf prints the sample's ip on the header line,
		// as recorded (the runtime address; perf_sample__fprintf_ip
		// prints sample->ip, not the map-relative address it prints for
		// callchain entries).
		l := locs[0]
		ip := l.Offset
		if len(s.IPs) > 0 {
			ip = s.IPs[0]
		}
		b = append(b, ' ')
		b = appendPadLeft(b, strconv.FormatUint(ip, 16), 16)
		b = append(b, ' ')
		b = append(b, l.String()...)
		if len(l.Frames) > 0 {
			b = appendTrustMark(b, l)
		}
		if !s.Stack.Trusted {
			b = append(b, " [untrusted]"...)
		}
		return append(b, '\n')
	}
	if !s.Stack.Trusted {
		b = append(b, "[untrusted]"...)
	}
	b = append(b, '\n')
	for _, l := range locs {
		if inlines && len(l.Frames) > 1 {
			for _, f := range l.Frames {
				b = appendFrameAddr(b, l)
				name := f.Function
				if name == "" {
					name = f.RawName
				}
				b = append(b, name...)
				if f.Inlined {
					b = append(b, " (inlined)"...)
				}
				b = append(b, " ("...)
				b = append(b, l.DSO.Path...)
				b = append(b, ')')
				b = appendTrustMark(b, l)
				b = append(b, '\n')
			}
			continue
		}
		b = appendFrameAddr(b, l)
		b = append(b, l.String()...)
		if len(l.Frames) > 0 {
			b = appendTrustMark(b, l)
		}
		b = append(b, '\n')
	}
	return append(b, '\n')
}

func appendFrameAddr(b []byte, l *check.Location) []byte {
	b = append(b, '\t')
	b = appendPadLeft(b, strconv.FormatUint(l.Offset, 16), 16)
	return append(b, ' ')
}

// appendTrustMark marks a named frame whose DSO is not verified: unverified
// (named, no proof) or, with --trust-paths, untrusted.
func appendTrustMark(b []byte, l *check.Location) []byte {
	if l.DSO.Verdict != check.Verified && l.DSO.Verdict != check.NoFile {
		b = append(b, " ["...)
		b = append(b, l.DSO.Verdict.String()...)
		b = append(b, ']')
	}
	return b
}

func appendPadLeft(b []byte, s string, w int) []byte {
	for i := len(s); i < w; i++ {
		b = append(b, ' ')
	}
	return append(b, s...)
}

func (a *analysis) scriptJSON(s *check.Sample) *scriptSample {
	out := &scriptSample{
		Comm: s.Comm, PID: s.PID, TID: s.TID, Time: s.Time, Event: a.eventName(s.Event), Period: s.Period,
		Trusted: s.Stack.Trusted, LeafTrusted: s.Stack.LeafTrusted,
	}
	locs := s.Stack.Locations()
	out.Frames = make([]scriptFrame, 0, len(locs))
	if a.hasCPU(s.Event) {
		c := s.CPU
		out.CPU = &c
	}
	for i, l := range locs {
		f := scriptFrame{
			Offset:  "0x" + strconv.FormatUint(l.Offset, 16),
			DSO:     l.DSO.Path,
			Verdict: l.DSO.Verdict.String(),
			Trusted: l.Trusted(),
			Frames:  l.Frames,
		}
		if i < len(s.IPs) {
			f.Address = "0x" + strconv.FormatUint(s.IPs[i], 16)
		}
		if n := len(l.Frames); n > 0 {
			f.Symbol = l.Frames[n-1].Function
			if f.Symbol == "" {
				f.Symbol = l.Frames[n-1].RawName
			}
		}
		out.Frames = append(out.Frames, f)
	}
	return out
}
