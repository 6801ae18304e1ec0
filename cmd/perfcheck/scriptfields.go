package main

import (
	"fmt"
	"strings"

	"github.com/perfcheck/perfcheck/perfdata"
)

// scriptField is a field of `perf script -F`: which parts of a sample
// perfcheck script prints.
type scriptField uint32

// The fields perfcheck script can print, as perf script's enum
// perf_output_field (tools/perf/builtin-script.c) names them.
const (
	fieldComm scriptField = 1 << iota
	fieldTID
	fieldPID
	fieldTime
	fieldCPU
	fieldEvent
	fieldIP
	fieldSym
	fieldSymOff
	fieldDSO
	fieldSrcline
	fieldPeriod
	fieldAddr
	fieldWeight
	fieldDataSrc
	fieldPhysAddr
	fieldIRegs
	fieldURegs
	fieldBrstack
	fieldBrstackSym
	fieldBrstackOff
	fieldTrace
)

// scriptFieldNames are the names -F takes, in perf's spelling.
var scriptFieldNames = []struct {
	name  string
	field scriptField
}{
	{"comm", fieldComm}, {"tid", fieldTID}, {"pid", fieldPID}, {"time", fieldTime},
	{"cpu", fieldCPU}, {"event", fieldEvent}, {"ip", fieldIP}, {"sym", fieldSym},
	{"symoff", fieldSymOff}, {"dso", fieldDSO}, {"addr", fieldAddr}, {"srcline", fieldSrcline}, {"period", fieldPeriod},
	{"weight", fieldWeight}, {"data_src", fieldDataSrc}, {"phys_addr", fieldPhysAddr},
	{"iregs", fieldIRegs}, {"uregs", fieldURegs}, {"brstack", fieldBrstack}, {"brstacksym", fieldBrstackSym},
	{"brstackoff", fieldBrstackOff},
	{"trace", fieldTrace},
}

// perfDefaultFields is what perf script prints without -F for hardware,
// software and breakpoint events (output[] in builtin-script.c): comm,
// tid, cpu, time, period, event name, and ip, sym+symoff, dso of the
// sample or of each callchain entry. A default field whose data the
// event did not record (PERF_SAMPLE_CPU, ...) is left out, as perf
// leaves it out (evsel__check_attr); one asked for with -F is an error.
const perfDefaultFields = fieldComm | fieldTID | fieldCPU | fieldTime | fieldPeriod | fieldEvent |
	fieldIP | fieldSym | fieldSymOff | fieldDSO

// tracepointDefaultFields is perf script's default for tracepoints: no
// period, the payload (trace), and the ip, sym+symoff and dso only when
// callchains were recorded (perf_session__check_output_opt).
const tracepointDefaultFields = fieldComm | fieldTID | fieldCPU | fieldTime | fieldEvent | fieldTrace

// typeTracepoint is PERF_TYPE_TRACEPOINT.
const typeTracepoint = 2

// scriptFields are the fields asked for: perf's defaults (per event type)
// changed by -F +FIELD/-FIELD, or the list -F gives. explicit are those
// -F named, which must exist.
type scriptFields struct {
	fields   scriptField // the list given (set), else the changes' sum on perfDefaultFields
	explicit scriptField
	set      bool        // -F gave the list: the same for every event type
	removed  scriptField // -F -FIELD, taken from every type's default
}

// parseScriptFields reads -F as perf script does: "comm,tid,ip,sym" sets
// the fields; "+srcline" or "-cpu,-period" (every item signed) changes
// perf's default set. perf's per-type lists ("sw:comm,ip") and the fields
// perfcheck does not carry (trace, brstack, ...) are refused.
func parseScriptFields(spec string) (scriptFields, error) {
	if spec == "" {
		return scriptFields{fields: perfDefaultFields}, nil
	}
	items := strings.Split(spec, ",")
	change := strings.HasPrefix(items[0], "+") || strings.HasPrefix(items[0], "-")
	fs := scriptFields{set: !change}
	if change {
		fs.fields = perfDefaultFields
	}
	for _, it := range items {
		sign := byte(0)
		if it != "" && (it[0] == '+' || it[0] == '-') {
			sign, it = it[0], it[1:]
		}
		if change != (sign != 0) {
			return fs, fmt.Errorf("-F: %q: either every field has + or -, or none has", spec)
		}
		if i := strings.IndexByte(it, ':'); i >= 0 {
			return fs, fmt.Errorf("-F: event-type lists (%q) are not supported; the fields apply to every event", it[:i+1])
		}
		f, ok := lookupScriptField(it)
		if !ok {
			return fs, fmt.Errorf("-F: unknown or unsupported field %q (supported: %s)", it, scriptFieldList())
		}
		if sign == '-' {
			fs.fields &^= f
			fs.explicit &^= f
			fs.removed |= f
			continue
		}
		fs.fields |= f
		fs.explicit |= f
	}
	return fs, fs.check()
}

// fieldsBranch are the fields that print the branch stack.
const fieldsBranch = fieldBrstack | fieldBrstackSym | fieldBrstackOff

// locatesBranches reports whether the fields say where branches lead
// (brstacksym, brstackoff, or brstack with dso), which the check must
// then locate (check.Options.Branches).
func (fs scriptFields) locatesBranches() bool {
	f := fs.fields | fs.explicit
	return f&(fieldBrstackSym|fieldBrstackOff) != 0 || f&fieldBrstack != 0 && f&fieldDSO != 0
}

func lookupScriptField(name string) (scriptField, bool) {
	for _, n := range scriptFieldNames {
		if n.name == name {
			return n.field, true
		}
	}
	return 0, false
}

func scriptFieldList() string {
	var s []string
	for _, n := range scriptFieldNames {
		s = append(s, n.name)
	}
	return strings.Join(s, ", ")
}

// check refuses the combinations perf script refuses
// (evsel__check_attr): a symbol, its offset, a DSO or a source line need
// the address they describe (a sample's ip, or its addr for the events
// whose addresses perf names).
func (fs scriptFields) check() error {
	f := fs.fields
	switch {
	case f&fieldSym != 0 && f&(fieldIP|fieldAddr) == 0:
		return fmt.Errorf("-F: sym needs ip or addr: no address to convert to a symbol")
	case f&fieldSymOff != 0 && f&fieldSym == 0:
		return fmt.Errorf("-F: symoff needs sym")
	case f&fieldDSO != 0 && f&(fieldIP|fieldAddr|fieldsBranch) == 0:
		return fmt.Errorf("-F: dso needs ip, addr, brstack, brstacksym or brstackoff: no address to convert")
	case f&fieldSrcline != 0 && f&fieldIP == 0:
		return fmt.Errorf("-F: srcline needs ip: no address to look the line up")
	case f == 0:
		return fmt.Errorf("-F: no field")
	}
	return nil
}

// forEvent returns the fields to print for an event with attr a: a
// default field the event did not record is left out; one -F named is an
// error, as perf script says ("Samples for 'cpu-clock' event do not have
// CPU attribute set. Cannot print 'cpu' field."). The period is not such a
// field: an event recorded with a fixed period (perf record -c) has no
// PERF_SAMPLE_PERIOD, and perf script prints its attr's sample_period,
// which is what the check counts for each of its samples.
func (fs scriptFields) forEvent(name string, a *perfdata.Attr) (scriptField, error) {
	f := fs.fields
	if a == nil {
		return f, nil
	}
	if !fs.set && a.Type == typeTracepoint {
		base := scriptField(tracepointDefaultFields)
		if a.SampleType&perfdata.SampleCallchain != 0 {
			base |= fieldIP | fieldSym | fieldSymOff | fieldDSO
		}
		f = (base | fs.explicit) &^ fs.removed
	}
	need := []struct {
		field scriptField
		bit   perfdata.SampleType
		what  string
	}{
		{fieldTID | fieldPID, perfdata.SampleTID, "TID"},
		{fieldTime, perfdata.SampleTime, "TIME"},
		{fieldCPU, perfdata.SampleCPU, "CPU"},
		{fieldIP, perfdata.SampleIP, "IP"},
		{fieldAddr, perfdata.SampleAddr, "ADDR"},
		{fieldWeight, perfdata.SampleWeight | perfdata.SampleWeightStruct, "WEIGHT"},
		{fieldDataSrc, perfdata.SampleDataSrc, "DATA_SRC"},
		{fieldPhysAddr, perfdata.SamplePhysAddr, "PHYS_ADDR"},
		{fieldIRegs, perfdata.SampleRegsIntr, "IREGS"},
		{fieldURegs, perfdata.SampleRegsUser, "UREGS"},
	}
	for _, n := range need {
		if f&n.field == 0 || a.SampleType&n.bit != 0 {
			continue
		}
		if fs.explicit&n.field != 0 {
			return 0, fmt.Errorf("samples for %q do not have the %s attribute set: cannot print %s", name, n.what, fieldName(fs.explicit&n.field))
		}
		f &^= n.field
	}
	if a.Type != typeTracepoint || a.SampleType&perfdata.SampleRaw == 0 {
		// perf ignores trace for other events ("'trace' not valid
		// for software events. Ignoring.").
		f &^= fieldTrace
	}
	if f&(fieldIP|fieldAddr) == 0 {
		f &^= fieldSym | fieldSymOff
	}
	if f&(fieldIP|fieldAddr|fieldsBranch) == 0 {
		f &^= fieldDSO
	}
	if f&fieldIP == 0 {
		f &^= fieldSrcline
	}
	return f, nil
}

func fieldName(f scriptField) string {
	for _, n := range scriptFieldNames {
		if f&n.field != 0 {
			return n.name
		}
	}
	return "?"
}
