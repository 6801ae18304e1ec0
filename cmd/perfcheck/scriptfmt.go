package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/perfcheck/perfcheck/check"
	"github.com/perfcheck/perfcheck/dso"
	"github.com/perfcheck/perfcheck/perfdata"
)

// scriptFormat prints samples in perf script's text grammar
// (process_event, perf_sample__fprintf_start and sample__fprintf_callchain
// in tools/perf/builtin-script.c and util/evsel_fprintf.c), so that the
// tools that read perf script's output read perfcheck's unchanged.
type scriptFormat struct {
	a       *analysis
	fields  []scriptField // per event index
	inlines bool          // each inlined frame on its own line (--inline)
	trust   bool          // a "# perfcheck:" comment line per sample (--trust-lines)
	// dataSrcWidth is the widest data_src text printed so far, which
	// perf script pads the next ones to (data_src__fprintf's maxlen).
	dataSrcWidth int
	regNames     []string // names of the recording's registers by number
	// traces are the payload formats of the tracepoint events whose
	// trace field is printed, by event index (nil: not printed).
	traces []*traceFormat
	// notes say what the default fields leave out (a payload format
	// perfcheck does not evaluate), for stderr.
	notes []string
	// kernelSym names the kernel addresses payloads print, once
	// kernelDecided (kernelSymbols).
	kernelSym     kernelSymbol
	kernelDecided bool
	pipe          bool // the recording is in pipe format
	// texts keeps the symbol field of callchain lines, per location and
	// set of fields; scratch is where one is made.
	texts   []symTexts
	scratch []byte
}

// sampleResult is what the script format needs of the recording, from its
// first sample: its events, its architecture (the registers' names) and
// its tracepoint formats, as the recording has described them by then.
func sampleResult(s *check.Sample) *check.Result {
	res := &check.Result{EventInfo: s.Events}
	if s.Features == nil {
		return res
	}
	res.Arch, _ = s.Features.Arch()
	for i := range s.Events {
		if s.Events[i].Attr.Type == perfdata.AttrTypeTracepoint {
			res.TraceEvents, res.TraceErr = s.Features.TraceEvents()
			res.TracePrintk, res.TracePrintkErr = s.Features.TracePrintk()
			break
		}
	}
	return res
}

// newScriptFormat resolves fs for each event of a.
func newScriptFormat(a *analysis, fs scriptFields) (*scriptFormat, error) {
	sf := &scriptFormat{a: a, regNames: registerNames(a.res.Arch)}
	for i := range a.res.EventInfo {
		var attr *perfdata.Attr
		if i < len(a.res.EventInfo) {
			attr = &a.res.EventInfo[i].Attr
		}
		f, err := fs.forEvent(a.res.EventName(i), attr)
		if err != nil {
			return nil, err
		}
		if f&(fieldIRegs|fieldURegs) != 0 && sf.regNames == nil {
			return nil, fmt.Errorf("cannot print %s: perfcheck names the registers of x86 and arm64 recordings, not of %q", fieldName(f&(fieldIRegs|fieldURegs)), a.res.Arch)
		}
		sf.fields = append(sf.fields, f)
		tf, err := sf.traceFormat(i, f, fs)
		if err != nil {
			return nil, err
		}
		sf.traces = append(sf.traces, tf)
	}
	return sf, nil
}

// traceFormat returns event i's payload format when its trace field is
// printed; one perfcheck cannot evaluate is an error when -F named trace,
// else a note and no payload.
func (sf *scriptFormat) traceFormat(i int, f scriptField, fs scriptFields) (*traceFormat, error) {
	if f&fieldTrace == 0 {
		return nil, nil
	}
	a, name := sf.a.res, sf.a.res.EventName(i)
	var err error = a.TraceErr
	if errors.Is(err, perfdata.ErrNoFeature) {
		err = errors.New("the recording has no tracepoint formats (no TRACING_DATA)")
	}
	if err == nil {
		err = fmt.Errorf("the recording has no format for it")
		for j := range a.TraceEvents {
			if a.TraceEvents[j].ID == a.EventInfo[i].Attr.Config {
				var tf *traceFormat
				tf, err = newTraceFormat(&a.TraceEvents[j])
				if err == nil && tf.readsPrintk() {
					tf.printk = a.TracePrintk
					if a.TracePrintkErr != nil {
						err = fmt.Errorf("its %%s of a kernel string pointer needs the recording's printk strings: %w", a.TracePrintkErr)
					}
				}
				if err == nil {
					return tf, nil
				}
				break
			}
		}
	}
	if fs.explicit&fieldTrace != 0 {
		return nil, fmt.Errorf("cannot print the payload of %q: %v", name, err)
	}
	sf.notes = append(sf.notes, fmt.Sprintf("the payload of %q is not printed: %v", name, err))
	return nil, nil
}

// allNotes are sf's notes, and for each payload that printed kernel
// addresses in hex, why.
func (sf *scriptFormat) allNotes() []string {
	notes := sf.notes
	if sf.kernelSym != nil {
		return notes
	}
	for i, tf := range sf.traces {
		if tf != nil && tf.printsFunctions() {
			why := "the check names none of the recording's kernel functions (see its [kernel.kallsyms] verdict)"
			if sf.pipe {
				why = "perf prints them so from a pipe-format recording"
			}
			notes = append(notes, fmt.Sprintf("the kernel addresses (%%pS, %%ps) in the payload of %q print in hex: %s", sf.a.res.EventName(i), why))
		}
	}
	return notes
}

func (sf *scriptFormat) fieldsOf(event int) scriptField {
	if event >= 0 && event < len(sf.fields) {
		return sf.fields[event]
	}
	return perfDefaultFields &^ (fieldCPU | fieldSrcline)
}

// appendSample formats one sample: the sample line, then, for an event
// that recorded callchains, one line per frame and an empty line; without
// callchains the frame ends the sample line.
func (sf *scriptFormat) appendSample(b []byte, s *check.Sample) []byte {
	f := sf.fieldsOf(s.Event)
	if sf.trust {
		b = appendTrustLine(b, s)
	}
	chain := sf.a.hasCallchain(s.Event)
	b = sf.appendStart(b, s, f, chain && f&fieldIP != 0)
	if f&fieldPeriod != 0 {
		b = appendUintPadLeft(b, s.Period, 10, 10)
		b = append(b, ' ')
	}
	if f&fieldEvent != 0 {
		b = appendPadLeft(b, sf.a.res.EventName(s.Event), sf.a.nameWidth())
		b = append(b, ": "...)
	}
	rec := s.Record
	if rec == nil {
		rec = &noRecord
	}
	if f&fieldTrace != 0 && s.Event < len(sf.traces) && sf.traces[s.Event] != nil && rec.Raw != nil {
		// A payload that does not evaluate (a field past a cut record)
		// prints as far as it goes.
		tf := sf.traces[s.Event]
		if tf.printsFunctions() {
			tf.kernelSym = sf.kernelSymbols(s)
		}
		b, _ = tf.appendTrace(b, rec.Raw)
	}
	if f&fieldAddr != 0 {
		b = sf.appendAddr(b, f, s)
	}
	if f&fieldDataSrc != 0 {
		b = sf.appendDataSrc(b, rec.DataSrc)
	}
	if f&fieldWeight != 0 {
		w := rec.Weight
		if rec.Fields&perfdata.SampleWeightStruct != 0 {
			// perf prints the struct's first word (perf_sample's
			// weight, evsel__parse_sample).
			w = uint64(rec.WeightVar1())
		}
		b = appendUintPadLeft(b, w, 10, 16)
	}
	if f&fieldIP == 0 {
		return append(sf.appendTail(b, f, s, rec), '\n')
	}
	locs := s.Stack.Locations()
	if !chain {
		// sample__fprintf_sym without a callchain cursor prints the
		// sample's ip as recorded (the runtime address), not the
		// map-relative one it prints for callchain entries, and names
		// it by the symbol that holds the code: no inlined callee,
		// --inline or not (inlined frames come from the callchain).
		b = append(b, ' ')
		if len(locs) > 0 {
			ip := locs[0].Offset
			if len(s.IPs) > 0 {
				ip = s.IPs[0]
			}
			b = sf.appendFrame(b, f, ip, locs[0], len(locs[0].Frames)-1, false)
		}
		return append(sf.appendTail(b, f, s, rec), '\n')
	}
	b = append(b, '\n')
	for _, l := range locs {
		if sf.inlines && len(l.Frames) > 1 {
			// perf script --inline: the inlined callees, innermost
			// first, each "name+0xOFF (inlined)", then the function
			// that holds the code.
			for i := range l.Frames[:len(l.Frames)-1] {
				b = append(b, '\t')
				b = sf.appendFrame(b, f, l.Offset, l, i, true)
				b = append(b, '\n')
			}
		}
		b = append(b, '\t')
		if f&fieldIP != 0 {
			b = appendHex16(b, l.Offset)
		}
		b = append(b, sf.symText(f, l)...)
		b = appendFrameRest(b, f, l, len(l.Frames)-1, sf.inlines)
		b = append(b, '\n')
	}
	return append(sf.appendTail(b, f, s, rec), '\n')
}

// symTexts holds, for one set of fields, the symbol field a callchain
// line prints (appendFrameSym of the location's outermost frame, "" when
// the fields have none), per location: a location's name, offset and
// trust are settled before the first sample is printed, and most frames
// of a recording are locations printed before, whose text is then copied
// from one place instead of gathered from the location's frames. It
// grows with the distinct locations, as the Result does, in blocks that
// never move.
type symTexts struct {
	f      scriptField
	blocks [][]byte
	span   []symSpan // by Location.ID
}

// symSpan is where a location's text lies in symTexts.blocks: block
// blk+1 (0: not made), bytes [off, off+n).
type symSpan struct{ blk, off, n uint32 }

// symTextBlock is the size of a symTexts block.
const symTextBlock = 1 << 20

// symText returns the symbol field appendFrameSym prints for l's
// outermost frame with fields f, made once per location.
func (sf *scriptFormat) symText(f scriptField, l *check.Location) []byte {
	var t *symTexts
	for i := range sf.texts {
		if sf.texts[i].f == f {
			t = &sf.texts[i]
			break
		}
	}
	if t == nil {
		sf.texts = append(sf.texts, symTexts{f: f})
		t = &sf.texts[len(sf.texts)-1]
	}
	id := l.ID
	if id < len(t.span) && t.span[id].blk > 0 {
		sp := t.span[id]
		return t.blocks[sp.blk-1][sp.off : sp.off+sp.n]
	}
	sf.scratch = appendFrameSym(sf.scratch[:0], f, l, len(l.Frames)-1)
	text := sf.scratch
	if id <= 0 || len(text) > symTextBlock {
		return text // not numbered by a Result, or a name past any block
	}
	if id >= len(t.span) {
		t.span = append(t.span, make([]symSpan, id+1-len(t.span))...)
	}
	if len(t.blocks) == 0 || len(t.blocks[len(t.blocks)-1])+len(text) > symTextBlock {
		t.blocks = append(t.blocks, make([]byte, 0, symTextBlock))
	}
	bi := len(t.blocks) - 1
	off := len(t.blocks[bi])
	t.blocks[bi] = append(t.blocks[bi], text...)
	t.span[id] = symSpan{blk: uint32(bi + 1), off: uint32(off), n: uint32(len(text))}
	return t.blocks[bi][off:]
}

// appendHex16 appends v in hex right-aligned to 16 columns (printf's
// "%16lx"), as appendUintPadLeft(b, v, 16, 16) without its copies: every
// frame line begins with it.
func appendHex16(b []byte, v uint64) []byte {
	const digits = "0123456789abcdef"
	// The padding first, then the digits over it, in place: digits
	// made in a buffer of their own and copied stalled the copy on
	// the bytes just stored.
	n := len(b)
	b = append(b, "                "...)
	t := b[n : n+16]
	for i := 15; ; i-- {
		t[i] = digits[v&0xf]
		v >>= 4
		if v == 0 {
			break
		}
	}
	return b
}

// appendAddr is perf_sample__fprintf_addr: the address ("%16lx"), then,
// for the events whose addresses perf names (Sample.AddrLocation), its
// symbol and DSO as a frame's are printed, under the same verdict rules.
func (sf *scriptFormat) appendAddr(b []byte, f scriptField, s *check.Sample) []byte {
	b = appendUintPadLeft(b, s.Addr, 16, 16)
	l := s.AddrLocation
	if l == nil {
		return b
	}
	if f&fieldSym != 0 {
		b = append(b, ' ')
		var off uint64
		var hasOff bool
		b, off, hasOff = appendScriptSymbol(b, l, len(l.Frames)-1)
		if f&fieldSymOff != 0 && hasOff {
			b = append(b, "+0x"...)
			b = strconv.AppendUint(b, off, 16)
		}
	}
	if f&fieldDSO != 0 {
		b = append(b, " ("...)
		b = append(b, l.DSO.Path...)
		b = append(b, ')')
	}
	return b
}

// appendTail prints what perf script prints after the sample's ip or
// callchain (process_event): the interrupt and user registers, the
// branch stack, the physical address.
func (sf *scriptFormat) appendTail(b []byte, f scriptField, s *check.Sample, rec *perfdata.Sample) []byte {
	if f&fieldIRegs != 0 {
		b = sf.appendRegs(b, rec.RegsIntrABI, rec.RegsIntr, sf.a.regMask(s.Event, false))
	}
	if f&fieldURegs != 0 {
		b = sf.appendRegs(b, rec.RegsUserABI, rec.RegsUser, sf.a.regMask(s.Event, true))
	}
	if f&fieldsBranch != 0 {
		b = appendBranches(b, f, s, rec)
	}
	if f&fieldPhysAddr != 0 {
		b = appendUintPadLeft(b, rec.PhysAddr, 16, 16)
	}
	return b
}

// noRecord stands for a Sample without its record: no field recorded.
var noRecord perfdata.Sample

// appendStart is perf_sample__fprintf_start: comm (unpadded when a
// callchain follows), tid (or pid, or pid/tid), [cpu], time.
func (sf *scriptFormat) appendStart(b []byte, s *check.Sample, f scriptField, chain bool) []byte {
	if f&fieldComm != 0 {
		w := 16
		if chain {
			w = 0
		}
		if s.Comm != "" {
			b = appendPadLeft(b, s.Comm, w)
		} else {
			var tmp [16]byte
			b = appendPadLeft(b, strconv.AppendInt(append(tmp[:0], ':'), int64(int32(s.TID)), 10), w)
		}
		b = append(b, ' ')
	}
	switch {
	case f&fieldPID != 0 && f&fieldTID != 0:
		b = appendIntPadLeft(b, int64(int32(s.PID)), 5)
		b = append(b, '/')
		n := len(b)
		b = appendIntPadLeft(b, int64(int32(s.TID)), 0)
		b = appendSpaces(b, 5-(len(b)-n))
		b = append(b, ' ')
	case f&fieldPID != 0:
		b = appendIntPadLeft(b, int64(int32(s.PID)), 5)
		b = append(b, ' ')
	case f&fieldTID != 0:
		b = appendIntPadLeft(b, int64(int32(s.TID)), 5)
		b = append(b, ' ')
	}
	if f&fieldCPU != 0 {
		b = append(b, '[')
		b = appendZeroPadded(b, uint64(s.CPU), 3)
		b = append(b, "] "...)
	}
	if f&fieldTime != 0 {
		// "%12s: " of seconds.microseconds (timestamp__scnprintf_usec).
		sec := s.Time / 1e9
		n := digitsOf(sec, 10)
		b = appendDigits(appendSpaces(b, 12-n-7), sec, 10, n)
		b = appendDigits(append(b, '.'), s.Time%1e9/1e3, 10, 6)
		b = append(b, ": "...)
	}
	return b
}

// The number formatters below write their digits in place, after the
// padding: digits made in a buffer of their own and copied stalled the
// copy on the single bytes just stored (appendHex16), and a sample line
// has four numbers.

// appendUintPadLeft appends v in base, right-aligned to w columns.
func appendUintPadLeft(b []byte, v uint64, base, w int) []byte {
	if base != 10 && base != 16 {
		var tmp [64]byte
		return appendPadLeft(b, strconv.AppendUint(tmp[:0], v, base), w)
	}
	n := digitsOf(v, base)
	return appendDigits(appendSpaces(b, w-n), v, base, n)
}

// appendIntPadLeft appends v in decimal, right-aligned to w columns.
func appendIntPadLeft(b []byte, v int64, w int) []byte {
	if v >= 0 {
		return appendUintPadLeft(b, uint64(v), 10, w)
	}
	u := uint64(-v) // -MinInt64 wraps to its magnitude
	n := digitsOf(u, 10)
	return appendDigits(append(appendSpaces(b, w-n-1), '-'), u, 10, n)
}

// appendZeroPadded appends v in decimal with leading zeros to w digits
// (printf's "%0*d").
func appendZeroPadded(b []byte, v uint64, w int) []byte {
	return appendDigits(b, v, 10, max(w, digitsOf(v, 10)))
}

// digitsOf is the number of digits of v in base 10 or 16.
func digitsOf(v uint64, base int) int {
	n := 1
	if base == 16 {
		for ; v >= 16; v >>= 4 {
			n++
		}
		return n
	}
	for ; v >= 10; v /= 10 {
		n++
	}
	return n
}

// appendDigits appends the n lowest digits of v in base 10 or 16,
// leading zeros included.
func appendDigits(b []byte, v uint64, base, n int) []byte {
	const digits = "0123456789abcdef"
	start := len(b)
	for range n {
		b = append(b, '0')
	}
	d := b[start:]
	if base == 16 {
		for i := n - 1; i >= 0 && v != 0; i-- {
			d[i] = digits[v&0xf]
			v >>= 4
		}
		return b
	}
	for i := n - 1; i >= 0 && v != 0; i-- {
		d[i] = byte('0' + v%10)
		v /= 10
	}
	return b
}

// appendSpaces appends n spaces (none when n <= 0).
func appendSpaces(b []byte, n int) []byte {
	const spaces = "                                "
	for n > len(spaces) {
		b = append(b, spaces...)
		n -= len(spaces)
	}
	if n > 0 {
		b = append(b, spaces[:n]...)
	}
	return b
}

// appendFrame prints one frame of l: "%16x ADDR", " SYM+0xOFF", " (DSO)"
// and "\n  SRCLINE", as far as f asks. frame is the index in l.Frames of
// the function to name: the outermost, or with expanded (--inline) any
// of them. perf prints an inlined one (append_inlines' symbol, which
// starts where the holding one does) as "name+0xOFF", its srcline, then
// " (inlined)", without its DSO.
func (sf *scriptFormat) appendFrame(b []byte, f scriptField, addr uint64, l *check.Location, frame int, expanded bool) []byte {
	if f&fieldIP != 0 {
		b = appendHex16(b, addr)
	}
	return appendFrameRest(appendFrameSym(b, f, l, frame), f, l, frame, expanded)
}

// appendFrameSym is the symbol field appendFrame prints: " SYM+0xOFF".
func appendFrameSym(b []byte, f scriptField, l *check.Location, frame int) []byte {
	if f&fieldSym != 0 {
		b = append(b, ' ')
		var off uint64
		var hasOff bool
		b, off, hasOff = appendScriptSymbol(b, l, frame)
		if f&fieldSymOff != 0 && hasOff {
			b = append(b, "+0x"...)
			b = strconv.AppendUint(b, off, 16)
		}
	}
	return b
}

// appendFrameRest is what appendFrame prints after the symbol field of
// frame: " (DSO)", "\n  SRCLINE", and " (inlined)" for an inlined frame
// of an expanded location. The srcline of an expanded frame is its own
// line (for the holding function, the call site), else the innermost
// frame's (callchain_srcline, addr2line's first answer).
func appendFrameRest(b []byte, f scriptField, l *check.Location, frame int, expanded bool) []byte {
	inlined := expanded && frame < len(l.Frames)-1
	if f&fieldDSO != 0 && !inlined {
		b = append(b, " ("...)
		b = append(b, l.DSO.Path...)
		b = append(b, ')')
	}
	if f&fieldSrcline != 0 {
		if !(l.DSO.Verdict == check.NoFile && l.DSO.Path == "[unknown]") {
			line := 0
			if expanded {
				line = frame
			}
			b = append(b, "\n  "...)
			b = appendScriptSrcline(b, l, line)
		}
	}
	if inlined {
		b = append(b, " (inlined)"...)
	}
	return b
}

// scriptSymbol is the symbol field of a frame, with the trust mark inside
// it where parsers of perf script expect a name, never where they expect
// the offset or the DSO:
//
//   - a named frame: the function ("main_spin"), the offset into its
//     symbol; "[unverified] name" when its DSO is unverified, "[mismatch]
//     name" when it was named from an untrusted file (--trust-paths);
//   - a frame whose DSO's names are refused: "[VERDICT] BASE" and the
//     offset in the DSO ("[mismatch] libfoo.so.1+0x1130"), so that a
//     parser that strips "+0xOFF" keeps one frame per DSO and verdict;
//   - anything else unnamed: perf's "[unknown]", without an offset.
func scriptSymbol(l *check.Location, frame int) string {
	b, _, _ := appendScriptSymbol(nil, l, frame)
	return string(b)
}

// appendScriptSymbol appends scriptSymbol's text to b, and says which
// offset goes with it.
func appendScriptSymbol(b []byte, l *check.Location, frame int) (_ []byte, off uint64, hasOff bool) {
	name := ""
	if frame >= 0 && frame < len(l.Frames) {
		name = l.Frames[frame].Name()
	}
	d := l.DSO
	switch {
	case name != "" && !d.Trusted():
		return appendMarked(b, d.Verdict.String(), name), l.SymOffset, l.HasSymOffset
	case name != "" && d.Verdict == check.Unverified:
		return appendMarked(b, "unverified", name), l.SymOffset, l.HasSymOffset
	case name != "":
		return append(b, name...), l.SymOffset, l.HasSymOffset
	case !d.Trusted():
		return appendMarked(b, d.Verdict.String(), dso.BaseName(d.Path)), l.Offset, true
	}
	return append(b, "[unknown]"...), 0, false
}

// appendMarked appends "[mark] name".
func appendMarked(b []byte, mark, name string) []byte {
	b = append(b, '[')
	b = append(b, mark...)
	b = append(b, "] "...)
	return append(b, name...)
}

// appendScriptSrcline appends perf's srcline of a frame
// (map__fprintf_srcline): "file:line" of l.Frames[frame], the file's
// base name; where no line is known, perf's fallback "BASE[OFFSET]". An
// untrusted DSO's lines are never read. The caller prints none for
// memory that no mapping covers (the DSO "[unknown]" without a file).
func appendScriptSrcline(b []byte, l *check.Location, frame int) []byte {
	if l.DSO.Trusted() && frame < len(l.Frames) && l.Frames[frame].File != "" && l.Frames[frame].Line > 0 {
		b = append(b, filepath.Base(l.Frames[frame].File)...)
		b = append(b, ':')
		return strconv.AppendInt(b, int64(l.Frames[frame].Line), 10)
	}
	b = append(b, dso.BaseName(l.DSO.Path)...)
	b = append(b, '[')
	b = strconv.AppendUint(b, l.Offset, 16)
	return append(b, ']')
}

// appendTrustLine is the comment line --trust-lines prints before each
// sample. Parsers of perf script skip lines that begin with "#"
// (stackcollapse-perf.pl, speedscope), as perf script prints its header
// so.
func appendTrustLine(b []byte, s *check.Sample) []byte {
	locs := s.Stack.Locations()
	untrusted := 0
	for _, l := range locs {
		if !l.Trusted() {
			untrusted++
		}
	}
	b = append(b, "# perfcheck: trusted="...)
	b = append(b, check.YesNo(s.Stack.Trusted)...)
	b = append(b, " leaf_trusted="...)
	b = append(b, check.YesNo(s.Stack.LeafTrusted)...)
	b = append(b, " untrusted_frames="...)
	b = strconv.AppendInt(b, int64(untrusted), 10)
	b = append(b, '/')
	b = strconv.AppendInt(b, int64(len(locs)), 10)
	return append(b, '\n')
}
