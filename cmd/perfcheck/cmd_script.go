package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/perfcheck/perfcheck/check"
	"github.com/perfcheck/perfcheck/perfdata"
	"github.com/perfcheck/perfcheck/symbolize"
)

func init() {
	register(&command{
		name:      "script",
		usage:     "perfcheck script [flags] perf.data|-",
		summary:   "print every sample and its callchain in perf script's grammar, untrusted frames marked",
		run:       runScript,
		jsonLines: true,
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
	Addr        string        `json:"addr,omitempty"` // PERF_SAMPLE_ADDR ("0x..."), when the event recorded it
	Trusted     bool          `json:"trusted"`
	LeafTrusted bool          `json:"leaf_trusted"`
	Frames      []scriptFrame `json:"frames"`
	// Branches is the branch stack (PERF_SAMPLE_BRANCH_STACK), most
	// recent first, as recorded: absent when the event recorded none.
	Branches []scriptBranch `json:"branches,omitempty"`
}

// scriptBranch is one entry of a branch stack: its addresses as recorded
// ("0x..."), unresolved, and its flags as perf script -F brstack reads
// them.
type scriptBranch struct {
	From         string `json:"from"`
	To           string `json:"to"`
	Mispredicted bool   `json:"mispredicted,omitempty"`
	Predicted    bool   `json:"predicted,omitempty"`
	InTx         bool   `json:"in_tx,omitempty"`
	Abort        bool   `json:"abort,omitempty"`
	Cycles       uint16 `json:"cycles,omitempty"` // 0: not counted
	Type         string `json:"type,omitempty"`   // perf's name of the branch type, when recorded
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
		"Prints each sample and its callchain in perf script's own text grammar; an untrusted frame is \"[verdict] dso+0xoffset (dso)\", never named.", stderr)
	jsonOut := fs.Bool("json", false, "print one JSON object per sample (JSON Lines; docs/commands-check.md)")
	inlines := fs.Bool("inline", false, "print inlined frames on their own lines, as perf script --inline")
	noInlines := fs.Bool("no-inline", false, "print no inlined frames (the default), as perf script --no-inline")
	fieldSpec := fs.String("F", "", "fields to print, as perf script -F: `LIST` of comm,tid,pid,time,cpu,period,event,addr,ip,sym,symoff,dso,srcline,weight,data_src,phys_addr,iregs,uregs,brstack,brstacksym,brstackoff,trace, or +FIELD/-FIELD to change the default")
	trustLines := fs.Bool("trust-lines", false, "print a \"# perfcheck: trusted=...\" comment line before each sample (parsers of perf script skip it)")
	folded := fs.Bool("folded", false, "print folded stacks, \"comm;root;...;leaf weight\", as stackcollapse-perf.pl folds this command's text")
	count := fs.Bool("count", false, "with --folded, weigh stacks by their samples instead of their period")
	pos, code := interspersed(fs, args)
	if code >= 0 {
		return code
	}
	file, err := af.file(pos, stdin)
	if err != nil {
		return usageError(fs, stderr, "%v", err)
	}
	fields, err := parseScriptFields(*fieldSpec)
	if err != nil {
		return errorf(stderr, "script", "%v", err)
	}
	if *folded && (*jsonOut || *fieldSpec != "" || *trustLines) {
		return errorf(stderr, "script", "--folded takes none of --json, -F, --trust-lines")
	}
	if !*folded && *count {
		return errorf(stderr, "script", "--count goes with --folded")
	}
	if *inlines && *noInlines {
		return errorf(stderr, "script", "--inline and --no-inline: give one")
	}
	opts, done := af.options(stderr)
	defer done()
	opts.Branches = !*jsonOut && !*folded && fields.locatesBranches()
	// Folded stacks come from the check's aggregates; the samples
	// printed one by one are handed over as the check reads them: from a
	// pipe as they arrive, otherwise from a second reading once the
	// verdicts are known (check.Options.OnSample).
	var p *samplePrinter
	if !*folded {
		p = &samplePrinter{w: bufio.NewWriterSize(stdout, 64<<10), fields: fields, inlines: *inlines, trust: *trustLines, json: *jsonOut, pipe: pipeFormat(file)}
		opts.OnSample = p.print
	}
	a, readErr := analyze(context.Background(), file, opts, stdin, stderr)
	if p != nil {
		if err := p.finish(a); err != nil {
			return errorf(stderr, "script", "%v", err)
		}
	}
	if a == nil {
		return errorf(stderr, "script", "%v", readErr)
	}
	if *folded {
		ev, skipped, err := writeFolded(stdout, a, foldedOptions{count: *count, inlines: *inlines})
		if err != nil {
			return errorf(stderr, "script", "%v", err)
		}
		if len(skipped) > 0 {
			fmt.Fprintf(stderr, "perfcheck script: note: folded the samples of %s only; --event names one of %s\n", ev, strings.Join(skipped, ", "))
		}
	}
	// Notes go to stderr: stdout keeps perf script's one-sample-per-line
	// shape (or one JSON object per line).
	for _, n := range a.notes(a.res.Report()) {
		fmt.Fprintln(stderr, "perfcheck script: note: "+n)
	}
	if p != nil && p.sf != nil {
		for _, n := range p.sf.allNotes() {
			fmt.Fprintln(stderr, "perfcheck script: note: "+n)
		}
	}
	if len(a.res.Changed) > 0 {
		for _, c := range a.res.Changed {
			fmt.Fprintf(stderr, "perfcheck script: %s: printed as %s while the stream was read, %s at its end: its frames above are not to be trusted as printed\n",
				c.DSO.Path, c.Printed, c.DSO.Verdict)
		}
		return exitProblems
	}
	if readErr != nil {
		// The samples before the error were printed, as perf script
		// does; the error and exit 2 say the rest is missing.
		return errorf(stderr, "script", "partial output: %v", readErr)
	}
	return exitOK
}

// samplePrinter prints each sample the check hands over
// (check.Options.OnSample), as text in the script format or as JSON Lines.
// The format is made at the first sample, from the events the recording
// has described by then (a stream describes them before its samples).
type samplePrinter struct {
	w       *bufio.Writer
	fields  scriptFields
	inlines bool
	trust   bool
	json    bool
	pipe    bool // the recording is in pipe format (pipeFormat)

	a    *analysis // over the events known at the first sample
	sf   *scriptFormat
	enc  *json.Encoder
	line []byte
	// flushDue is set every flushEvery (and at first) by ticker's
	// goroutine, and the next sample printed flushes: reading the
	// clock per sample cost more than formatting a short one.
	flushDue atomic.Bool
	ticker   *time.Ticker
	stop     chan struct{}
}

// flushEvery bounds how long a printed sample may wait in the buffer: a
// stream read as it is written is followed as it goes.
const flushEvery = 200 * time.Millisecond

func (p *samplePrinter) print(s *check.Sample) error {
	if p.a == nil {
		if err := p.start(&analysis{res: sampleResult(s)}); err != nil {
			return err
		}
	}
	if p.enc != nil {
		if err := p.enc.Encode(p.a.scriptJSON(s)); err != nil {
			return err
		}
	} else {
		// Samples gather in line, which goes to w, its own size, when
		// full: w writes it through without copying it.
		p.line = p.sf.appendSample(p.line, s)
		if len(p.line) >= p.w.Size() {
			if err := p.writeLines(); err != nil {
				return err
			}
		}
	}
	if p.flushDue.Load() {
		p.flushDue.Store(false)
		if err := p.writeLines(); err != nil {
			return err
		}
		return p.w.Flush()
	}
	return nil
}

// writeLines hands the gathered samples to w.
func (p *samplePrinter) writeLines() error {
	_, err := p.w.Write(p.line)
	p.line = p.line[:0]
	return err
}

// startFlushing sets flushDue now and every flushEvery, until finish.
func (p *samplePrinter) startFlushing() {
	p.flushDue.Store(true)
	p.ticker, p.stop = time.NewTicker(flushEvery), make(chan struct{})
	go func(tick <-chan time.Time, stop <-chan struct{}) {
		for {
			select {
			case <-tick:
				p.flushDue.Store(true)
			case <-stop:
				return
			}
		}
	}(p.ticker.C, p.stop)
}

// start makes the format over a's events.
func (p *samplePrinter) start(a *analysis) error {
	p.a = a
	p.startFlushing()
	if p.json {
		p.enc = json.NewEncoder(p.w)
		p.enc.SetEscapeHTML(false)
		return nil
	}
	sf, err := newScriptFormat(a, p.fields)
	if err != nil {
		return err
	}
	sf.inlines, sf.trust, sf.pipe = p.inlines, p.trust, p.pipe
	p.sf = sf
	return nil
}

// finish flushes what was printed and, when no sample came, checks the
// fields against the checked recording a (nil when the check failed), so
// that a field it cannot print is refused whatever the sample count.
func (p *samplePrinter) finish(a *analysis) error {
	if p.a == nil && a != nil {
		if err := p.start(a); err != nil {
			return err
		}
	}
	if p.ticker != nil {
		p.ticker.Stop()
		close(p.stop)
		p.ticker = nil
	}
	if err := p.writeLines(); err != nil {
		return err
	}
	return p.w.Flush()
}

// hasCPU reports whether event i recorded PERF_SAMPLE_CPU; perf script
// prints the cpu field only then.
func (a *analysis) hasCPU(i int) bool {
	return i >= 0 && i < len(a.res.EventInfo) && a.res.EventInfo[i].Attr.SampleType&perfdata.SampleCPU != 0
}

// hasAddr reports whether event i recorded PERF_SAMPLE_ADDR.
func (a *analysis) hasAddr(i int) bool {
	return i >= 0 && i < len(a.res.EventInfo) && a.res.EventInfo[i].Attr.SampleType&perfdata.SampleAddr != 0
}

// hasCallchain reports whether event i recorded callchains
// (PERF_SAMPLE_CALLCHAIN).
func (a *analysis) hasCallchain(i int) bool {
	return i >= 0 && i < len(a.res.EventInfo) && a.res.EventInfo[i].Attr.SampleType&perfdata.SampleCallchain != 0
}

// nameWidth is the width perf script right-aligns event names to: the
// longest event name of the recording (evlist__max_name_len).
func (a *analysis) nameWidth() int {
	if a.evWidth == 0 {
		for i := range a.res.EventInfo {
			a.evWidth = max(a.evWidth, len(a.res.EventName(i)))
		}
	}
	return a.evWidth
}

// appendPadLeft appends s right-aligned to w columns (printf's "%*s").
func appendPadLeft[S string | []byte](b []byte, s S, w int) []byte {
	for i := len(s); i < w; i++ {
		b = append(b, ' ')
	}
	return append(b, s...)
}

func (a *analysis) scriptJSON(s *check.Sample) *scriptSample {
	out := &scriptSample{
		Comm: s.Comm, PID: int32(s.PID), TID: int32(s.TID), Time: s.Time, Event: a.res.EventName(s.Event), Period: s.Period,
		Trusted: s.Stack.Trusted, LeafTrusted: s.Stack.LeafTrusted,
	}
	locs := s.Stack.Locations()
	out.Frames = make([]scriptFrame, 0, len(locs))
	if a.hasCPU(s.Event) {
		c := s.CPU
		out.CPU = &c
	}
	if a.hasAddr(s.Event) {
		out.Addr = "0x" + strconv.FormatUint(s.Addr, 16)
	}
	if s.Record != nil {
		for _, e := range s.Record.Branches {
			out.Branches = append(out.Branches, scriptBranch{
				From: "0x" + strconv.FormatUint(e.From, 16), To: "0x" + strconv.FormatUint(e.To, 16),
				Mispredicted: e.Mispred(), Predicted: e.Predicted(), InTx: e.InTx(), Abort: e.Abort(),
				Cycles: e.Cycles(), Type: branchTypeName(e),
			})
		}
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
			f.Symbol = l.Frames[n-1].Name()
		}
		out.Frames = append(out.Frames, f)
	}
	return out
}
