package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/perfcheck/perfcheck/check"
)

// filterFlags are perf report's sample filters, with perf's spellings,
// on every command that reads samples; the check applies them
// (check.Filter) before anything is counted.
type filterFlags struct {
	comms, dsos, events listFlag
	pids, tids, cpus    string
	time                string
}

// listFlag is a comma-separated list flag that may also be repeated.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

func (ff *filterFlags) register(fs *flag.FlagSet) {
	for _, n := range []string{"comm", "comms"} {
		fs.Var(&ff.comms, n, "only samples of threads with command name `COMM[,COMM...]` (perf --comms)")
	}
	for _, n := range []string{"dso", "dsos"} {
		fs.Var(&ff.dsos, n, "only samples whose IP is in `DSO[,DSO...]`, a recorded path or its base name (perf --dsos)")
	}
	for _, n := range []string{"e", "event"} {
		fs.Var(&ff.events, n, "only samples of event `NAME[,NAME...]` (\"cycles\" also matches \"cycles:u\")")
	}
	fs.StringVar(&ff.pids, "pid", "", "only samples of process `PID[,PID...]` (perf --pid)")
	fs.StringVar(&ff.tids, "tid", "", "only samples of thread `TID[,TID...]` (perf --tid)")
	for _, n := range []string{"cpu", "C"} {
		fs.StringVar(&ff.cpus, n, "", "only samples taken on `CPUS`, as 0-3,5 (perf --cpu)")
	}
	fs.StringVar(&ff.time, "time", "", "only samples in `RANGE`, as perf --time: START,END in seconds (either may be left out; several separated by spaces), or 10%/2, 0%-10%,30%-40% of the sample time span")
}

// filter turns the flags into the check's filter.
func (ff *filterFlags) filter() (check.Filter, error) {
	f := check.Filter{Comms: ff.comms, DSOs: ff.dsos, Events: ff.events, Time: ff.time}
	var err error
	if f.PIDs, err = parseIDList("--pid", ff.pids, false); err != nil {
		return f, err
	}
	if f.TIDs, err = parseIDList("--tid", ff.tids, false); err != nil {
		return f, err
	}
	if f.CPUs, err = parseIDList("--cpu", ff.cpus, true); err != nil {
		return f, err
	}
	return f, nil
}

// parseIDList parses "1,2,5" and, when ranges is set, "0-3,5" (perf's
// CPU lists).
func parseIDList(name, s string, ranges bool) ([]uint32, error) {
	var out []uint32
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		if !ranges && isRange {
			return nil, fmt.Errorf("%s %s: %q is not a number", name, s, part)
		}
		a, err := strconv.ParseUint(lo, 10, 32)
		b := a
		if err == nil && isRange {
			b, err = strconv.ParseUint(hi, 10, 32)
		}
		if err != nil || b < a || b-a > 1<<16 {
			return nil, fmt.Errorf("%s %s: %q is not a number or a range N-M", name, s, part)
		}
		for v := a; v <= b; v++ {
			out = append(out, uint32(v))
		}
	}
	return out, nil
}
