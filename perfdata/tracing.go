package perfdata

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// TraceEvent is one tracepoint's format from the TRACING_DATA payload: the
// text of tracefs's events/SYSTEM/NAME/format, which perf copies into the
// recording (tracing_data_get in tools/perf/util/trace-event-info.c).
type TraceEvent struct {
	System, Name string
	// ID is the tracepoint's id: a tracepoint event's attr.config.
	ID uint64
	// Fields are the raw record's fields in order, the common_* ones
	// first.
	Fields []TraceField
	// PrintFmt is the kernel's format string and arguments ("print fmt:").
	PrintFmt string
}

// TraceField is one field of a tracepoint's raw record.
type TraceField struct {
	Name   string
	Type   string // the C declaration without the name ("unsigned long", "char[16]", "__data_loc char[]")
	Offset int
	Size   int
	Signed bool
}

// tracingMagic starts a TRACING_DATA payload.
var tracingMagic = []byte("\x17\x08Dtracing")

// ParseTracingData decodes the tracepoint formats of a TRACING_DATA payload
// (the feature's section, or a TRACING_DATA record's payload), laid out as
// trace_report in tools/perf/util/trace-event-read.c reads it: magic,
// version, byte order, long and page size, the header_page and
// header_event files, the ftrace formats, then per system its event
// formats (kallsyms, printk strings and saved command lines follow; see
// Features.TracePrintk). base is the absolute offset of b's first byte,
// for errors.
func ParseTracingData(b []byte, base int64) ([]TraceEvent, error) {
	var evs []TraceEvent
	_, err := walkTracing(b, base, func(sys string, at int, text []byte) error {
		ev, err := parseTraceFormat(string(text))
		if err != nil {
			return &FormatError{Offset: base + int64(at), Msg: fmt.Sprintf("tracing data: event format of system %s: %v", sys, err), Err: ErrMalformed}
		}
		ev.System = sys
		evs = append(evs, ev)
		return nil
	})
	return evs, err
}

// walkTracing reads a TRACING_DATA payload up to the end of its event
// formats, passing each format's text and offset in b to event (nil:
// skipped), and returns the decoder positioned after them.
func walkTracing(b []byte, base int64, event func(sys string, at int, text []byte) error) (*decoder, error) {
	ferr := func(off int, cause error, format string, args ...any) error {
		return &FormatError{Offset: base + int64(off), Msg: "tracing data: " + fmt.Sprintf(format, args...), Err: cause}
	}
	if !bytes.HasPrefix(b, tracingMagic) {
		return nil, ferr(0, ErrMalformed, "bad magic")
	}
	off := len(tracingMagic)
	nul := bytes.IndexByte(b[off:], 0)
	if nul < 0 {
		return nil, ferr(off, io.ErrUnexpectedEOF, "version string not terminated")
	}
	off += nul + 1
	if len(b)-off < 6 {
		return nil, ferr(off, io.ErrUnexpectedEOF, "header cut short")
	}
	var order binary.ByteOrder = binary.LittleEndian
	if b[off] != 0 {
		order = binary.BigEndian
	}
	off += 6 // byte order, long size, u32 page size
	d := new(newDecoder(b, base, order, "tracing data"))
	d.off = off
	for _, name := range []string{"header_page", "header_event"} {
		if got := d.cstring(len(name) + 1); got != name && d.err == nil {
			return nil, ferr(d.off-len(name)-1, ErrMalformed, "%q where %s belongs", got, name)
		}
		d.sized64()
	}
	nf := d.u32()
	for i := uint32(0); i < nf && d.err == nil; i++ {
		d.sized64()
	}
	nsys := d.u32()
	for i := uint32(0); i < nsys && d.err == nil; i++ {
		sys := d.cstringAny()
		n := d.u32()
		for j := uint32(0); j < n && d.err == nil; j++ {
			at := d.off
			text := d.sized64()
			if d.err != nil || event == nil {
				continue
			}
			if err := event(sys, at, text); err != nil {
				return nil, err
			}
		}
	}
	return d, d.err
}

// TracePrintk returns the printk strings of the TRACING_DATA feature (in
// pipe mode, of the TRACING_DATA record) by kernel address: the strings
// tracefs's printk_formats lists, which a tracepoint's payload points to
// (rcu:rcu_utilization's "const char * s"), as libtraceevent keeps them
// (parse_ftrace_printk in tools/perf/util/trace-event-parse.c and
// tep_register_print_string): the text between the quotes, with the
// kernel's escapes (\n, \t, \") kept and a final \n dropped.
func (fs *Features) TracePrintk() (map[uint64]string, error) {
	b, base, err := fs.raw(FeatureTracingData)
	if err != nil {
		return nil, err
	}
	m, err := parseTracePrintk(b, base)
	if fe, ok := err.(*FormatError); ok {
		fe.File = fs.name
	}
	return m, err
}

// parseTracePrintk reads the sections after a payload's event formats:
// kallsyms and the printk strings, each a u32 size and that many bytes.
func parseTracePrintk(b []byte, base int64) (map[uint64]string, error) {
	d, err := walkTracing(b, base, nil)
	if err != nil {
		return nil, err
	}
	d.skip(int(d.u32())) // kallsyms, which perf skips
	text := d.bytes(int(d.u32()))
	if d.err != nil {
		return nil, d.err
	}
	m := make(map[uint64]string)
	for line := range strings.SplitSeq(string(text), "\n") {
		addr, s, ok := printkLine(line)
		if ok {
			m[addr] = s
		}
	}
	return m, nil
}

// printkLine reads `0xffffffff82a1b2c3 : "string"`: the address before the
// first colon, and what follows the colon and one more character.
func printkLine(line string) (addr uint64, s string, ok bool) {
	a, rest, ok := strings.Cut(line, ":")
	if !ok || rest == "" {
		return 0, "", false
	}
	a = strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(a), "0x"), "0X")
	end := 0
	for end < len(a) && isHexDigit(a[end]) {
		end++
	}
	addr, err := strconv.ParseUint(a[:end], 16, 64)
	if err != nil {
		return 0, "", false
	}
	s = strings.TrimPrefix(rest[1:], `"`)
	if t, quoted := strings.CutSuffix(s, `"`); quoted {
		s = strings.TrimSuffix(t, `\n`)
	}
	return addr, s, true
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// sized64 reads a u64 size and that many bytes.
func (d *decoder) sized64() []byte {
	n := d.u64()
	if d.err == nil && n > uint64(d.remaining()) {
		d.fail(io.ErrUnexpectedEOF, "%d bytes announced, %d left", n, d.remaining())
		return nil
	}
	return d.bytes(int(n))
}

// cstringAny reads a NUL-terminated string of any length.
func (d *decoder) cstringAny() string {
	if d.err != nil {
		return ""
	}
	n := bytes.IndexByte(d.b[d.off:], 0)
	if n < 0 {
		d.fail(io.ErrUnexpectedEOF, "string not terminated")
		return ""
	}
	s := string(d.b[d.off : d.off+n])
	d.off += n + 1
	return s
}

// parseTraceFormat reads one event's format file:
//
//	name: sched_switch
//	ID: 316
//	format:
//		field:unsigned short common_type;	offset:0;	size:2;	signed:0;
//		...
//	print fmt: "prev_comm=%s ...", REC->prev_comm, ...
func parseTraceFormat(text string) (TraceEvent, error) {
	var ev TraceEvent
	haveID := false
	for line := range strings.Lines(text) {
		line = strings.TrimRight(line, "\n")
		t := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "name:"):
			ev.Name = strings.TrimSpace(line[len("name:"):])
		case strings.HasPrefix(line, "ID:"):
			id, err := strconv.ParseUint(strings.TrimSpace(line[len("ID:"):]), 10, 64)
			if err != nil {
				return ev, fmt.Errorf("ID line %q", line)
			}
			ev.ID, haveID = id, true
		case strings.HasPrefix(t, "field:"):
			f, err := parseTraceField(t)
			if err != nil {
				return ev, err
			}
			ev.Fields = append(ev.Fields, f)
		case strings.HasPrefix(line, "print fmt:"):
			ev.PrintFmt = strings.TrimSpace(line[len("print fmt:"):])
		}
	}
	if ev.Name == "" || !haveID {
		return ev, fmt.Errorf("no name or ID")
	}
	return ev, nil
}

// parseTraceField reads "field:TYPE NAME;\toffset:N;\tsize:N;\tsigned:N;".
func parseTraceField(line string) (TraceField, error) {
	var f TraceField
	parts := strings.Split(line, ";")
	decl := strings.TrimSpace(strings.TrimPrefix(parts[0], "field:"))
	// The name is the last word; the brackets of an array name
	// ("comm[16]") go with the type.
	name, arr := decl, ""
	if strings.HasSuffix(decl, "]") {
		if i := strings.LastIndexByte(decl, '['); i >= 0 {
			name, arr = decl[:i], decl[i:]
		}
	}
	sp := strings.LastIndexAny(name, " *")
	if sp < 0 {
		return f, fmt.Errorf("field %q", line)
	}
	f.Name, f.Type = name[sp+1:], strings.TrimSpace(name[:sp+1])+arr
	for _, p := range parts[1:] {
		k, v, ok := strings.Cut(strings.TrimSpace(p), ":")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return f, fmt.Errorf("field %q: %s", line, p)
		}
		switch k {
		case "offset":
			f.Offset = n
		case "size":
			f.Size = n
		case "signed":
			f.Signed = n != 0
		}
	}
	return f, nil
}

// TraceEvents returns the tracepoint formats of the TRACING_DATA feature
// (in pipe mode, of the TRACING_DATA record; for simpleperf's files, of
// the TRACING_DATA record that starts the data section).
func (fs *Features) TraceEvents() ([]TraceEvent, error) {
	b, base, err := fs.raw(FeatureTracingData)
	if err != nil {
		return nil, err
	}
	evs, err := ParseTracingData(b, base)
	if fe, ok := err.(*FormatError); ok {
		fe.File = fs.name
	}
	return evs, err
}

// nameTracepoints names the tracepoint events that nothing named yet
// (EVENT_DESC, EVENT_UPDATE) "system:name" from their formats, as perf
// names them from the tracing data (evsel__prepare_tracepoint_event in
// tools/perf/util/evlist.c).
func (es *eventSet) nameTracepoints(evs []TraceEvent) {
	for i := range es.events {
		e := &es.events[i]
		if es.named[i] || e.Attr.Type != AttrTypeTracepoint {
			continue
		}
		for _, t := range evs {
			if t.ID == e.Attr.Config {
				e.Name = t.System + ":" + t.Name
				es.named[i] = true
				break
			}
		}
	}
}

// SimpleperfMetaInfo returns simpleperf's META_INFO feature: NUL-separated
// key and value strings (timestamp, clockid, event_type_info, ...), as
// simpleperf's RecordFileReader::ReadMetaInfoFeature reads them.
func (fs *Features) SimpleperfMetaInfo() (map[string]string, error) {
	b, _, err := fs.raw(FeatureSimpleperfMetaInfo)
	if err != nil {
		return nil, err
	}
	parts := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	m := make(map[string]string, len(parts)/2)
	for i := 0; i+1 < len(parts); i += 2 {
		m[parts[i]] = parts[i+1]
	}
	return m, nil
}

// simpleperfTracepoints turns META_INFO's event_type_info ("name,type,config"
// lines, which simpleperf writes in place of the tracing data when it has
// none) into trace events with a system and a name.
func simpleperfTracepoints(info string) []TraceEvent {
	var evs []TraceEvent
	for line := range strings.Lines(info) {
		f := strings.Split(strings.TrimSpace(line), ",")
		if len(f) != 3 || f[1] != strconv.Itoa(int(AttrTypeTracepoint)) {
			continue
		}
		sys, name, ok := strings.Cut(f[0], ":")
		id, err := strconv.ParseUint(f[2], 10, 64)
		if ok && err == nil {
			evs = append(evs, TraceEvent{System: sys, Name: name, ID: id})
		}
	}
	return evs
}
