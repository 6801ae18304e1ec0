package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/perfcheck/perfcheck/perfdata"
)

// parseFileArgs parses the flags of a command that takes one recording
// (info, stats, buildids): --json and -i, before or after the file name.
// It returns code -1 to go on, else the exit code to return.
// extra, if given, adds the command's own flags.
func parseFileArgs(name, usage, about string, args []string, stdin io.Reader, stderr io.Writer, extra ...func(*flag.FlagSet)) (file string, jsonOut bool, code int) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.BoolVar(&jsonOut, "json", false, "print JSON (fields in docs/commands.md)")
	var in inputFlag
	in.register(fs)
	for _, x := range extra {
		x(fs)
	}
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage:", usage)
		fmt.Fprintln(stderr, about)
		fs.PrintDefaults()
	}
	pos, code := interspersed(fs, args)
	if code >= 0 {
		return "", false, code
	}
	file, err := in.file(pos, stdin)
	if err != nil {
		return "", false, usageError(fs, stderr, "%v", err)
	}
	return file, jsonOut, -1
}

func init() {
	register(&command{
		name:    "info",
		usage:   "perfcheck info [--json] FILE",
		summary: "header: host, kernel, perf version, command line, events, time range",
		run:     runInfo,
	})
}

// infoJSON is the --json output of perfcheck info (docs/commands.md).
type infoJSON struct {
	File      string `json:"file"`
	Format    string `json:"format"` // "file", "pipe" or "directory"
	ByteOrder string `json:"byte_order"`
	// NotClosedCleanly is true when perf record did not finish the file
	// (data size 0 in the header, or data past the end of the file).
	NotClosedCleanly bool     `json:"not_closed_cleanly"`
	Hostname         string   `json:"hostname,omitempty"`
	OSRelease        string   `json:"os_release,omitempty"`
	PerfVersion      string   `json:"perf_version,omitempty"`
	Arch             string   `json:"arch,omitempty"`
	CPUsOnline       int      `json:"cpus_online,omitempty"`
	CPUsAvailable    int      `json:"cpus_available,omitempty"`
	CPUDesc          string   `json:"cpu_desc,omitempty"`
	CPUID            string   `json:"cpuid,omitempty"`
	TotalMemKB       uint64   `json:"total_mem_kb,omitempty"`
	CmdLine          []string `json:"cmdline,omitempty"`
	// Compressed is true when the data is zstd-compressed (perf record
	// -z): the COMPRESSED feature or compressed records.
	Compressed       bool            `json:"compressed"`
	CompressionLevel uint32          `json:"compression_level,omitempty"`
	Events           []infoEventJSON `json:"events"`
	Samples          uint64          `json:"samples"`
	// LostEvents is the sum of LOST records (events the kernel dropped
	// because perf did not read its buffers fast enough); LostSamples
	// the sum of LOST_SAMPLES records.
	LostEvents  uint64 `json:"lost_events"`
	LostSamples uint64 `json:"lost_samples"`
	Records     uint64 `json:"records"`
	// Uncounted is the number of records of types perf does not count
	// (not in Records): simpleperf's own records, newer types.
	Uncounted     uint64 `json:"uncounted_records,omitempty"`
	UncountedNote string `json:"-"`
	// Callchains says what simpleperf's CALLCHAIN records were used for.
	Callchains *callchainsJSON `json:"simpleperf_callchains,omitempty"`
	TimeRange  *infoTimeJSON   `json:"time_range,omitempty"`
	infoHeader
	Features      []string         `json:"features"`
	BuildIDs      int              `json:"build_ids"`
	Warnings      []string         `json:"warnings,omitempty"`
	Error         string           `json:"error,omitempty"`
	featureErrors map[string]error `json:"-"`
}

type infoEventJSON struct {
	Name       string   `json:"name"`
	Type       uint32   `json:"type"`
	Config     string   `json:"config"` // hex
	SampleType []string `json:"sample_type"`
	ReadFormat []string `json:"read_format"`
	// Exactly one of SamplePeriod and SampleFreq is set.
	SamplePeriod uint64   `json:"sample_period,omitempty"`
	SampleFreq   uint64   `json:"sample_freq,omitempty"`
	PreciseIP    int      `json:"precise_ip,omitempty"`
	Flags        []string `json:"flags"`
	AttrSize     uint32   `json:"attr_size"`
	IDs          int      `json:"ids"`
}

type infoTimeJSON struct {
	FirstNS uint64 `json:"first_ns"`
	LastNS  uint64 `json:"last_ns"`
	// Source is "SAMPLE_TIME" (the header feature perf writes) or
	// "samples" (the earliest and latest sample time read).
	Source string `json:"source"`
	// FirstWall and LastWall are the same instants in UTC (RFC 3339),
	// when the recording has CLOCK_DATA (perf record -k CLOCK) and its
	// events are timed with that clock; else absent.
	FirstWall string `json:"first_wall,omitempty"`
	LastWall  string `json:"last_wall,omitempty"`
}

var sampleTypeNames = [...]string{"IP", "TID", "TIME", "ADDR", "READ", "CALLCHAIN", "ID", "CPU", "PERIOD",
	"STREAM_ID", "RAW", "BRANCH_STACK", "REGS_USER", "STACK_USER", "WEIGHT", "DATA_SRC", "IDENTIFIER",
	"TRANSACTION", "REGS_INTR", "PHYS_ADDR", "AUX", "CGROUP", "DATA_PAGE_SIZE", "CODE_PAGE_SIZE", "WEIGHT_STRUCT"}

var readFormatNames = [...]string{"TOTAL_TIME_ENABLED", "TOTAL_TIME_RUNNING", "ID", "GROUP", "LOST"}

// flagNames are the attr flags perf prints by name (perf_event_attr__fprintf),
// in bit order; precise_ip is shown apart.
var flagNames = map[perfdata.AttrFlags]string{
	perfdata.FlagDisabled: "disabled", perfdata.FlagInherit: "inherit", perfdata.FlagPinned: "pinned",
	perfdata.FlagExclusive: "exclusive", perfdata.FlagExcludeUser: "exclude_user",
	perfdata.FlagExcludeKernel: "exclude_kernel", perfdata.FlagExcludeHV: "exclude_hv",
	perfdata.FlagExcludeIdle: "exclude_idle", perfdata.FlagMmap: "mmap", perfdata.FlagComm: "comm",
	perfdata.FlagFreq: "freq", perfdata.FlagInheritStat: "inherit_stat", perfdata.FlagEnableOnExec: "enable_on_exec",
	perfdata.FlagTask: "task", perfdata.FlagWatermark: "watermark", perfdata.FlagMmapData: "mmap_data",
	perfdata.FlagSampleIDAll: "sample_id_all", perfdata.FlagExcludeHost: "exclude_host",
	perfdata.FlagExcludeGuest: "exclude_guest", perfdata.FlagExcludeCallchainKernel: "exclude_callchain_kernel",
	perfdata.FlagExcludeCallchainUser: "exclude_callchain_user", perfdata.FlagMmap2: "mmap2",
	perfdata.FlagCommExec: "comm_exec", perfdata.FlagUseClockID: "use_clockid",
	perfdata.FlagContextSwitch: "context_switch", perfdata.FlagWriteBackward: "write_backward",
	perfdata.FlagNamespaces: "namespaces", perfdata.FlagKsymbol: "ksymbol", perfdata.FlagBPFEvent: "bpf_event",
	perfdata.FlagAuxOutput: "aux_output", perfdata.FlagCgroup: "cgroup", perfdata.FlagTextPoke: "text_poke",
	perfdata.FlagBuildID: "build_id", perfdata.FlagInheritThread: "inherit_thread",
	perfdata.FlagRemoveOnExec: "remove_on_exec", perfdata.FlagSigtrap: "sigtrap",
	perfdata.FlagDeferCallchain: "defer_callchain", perfdata.FlagDeferOutput: "defer_output",
}

func bitNames(v uint64, names []string) []string {
	out := []string{}
	for i, n := range names {
		if v&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	for i := len(names); i < 64; i++ {
		if v&(1<<i) != 0 {
			out = append(out, fmt.Sprintf("bit%d", i))
		}
	}
	return out
}

func attrFlagNames(f perfdata.AttrFlags) []string {
	out := []string{}
	for i := 0; i < 64; i++ {
		b := perfdata.AttrFlags(1) << i
		if f&b == 0 {
			continue
		}
		if n, ok := flagNames[b]; ok {
			out = append(out, n)
		}
	}
	return out
}

// gatherInfo reads the header, the features and every record of f. Feature
// errors are kept per feature and do not stop the rest.
func gatherInfo(f *recording, file string) (*infoJSON, error) {
	order := "little-endian"
	if f.ByteOrder() == binary.BigEndian {
		order = "big-endian"
	}
	in := &infoJSON{File: file, Format: "file", ByteOrder: order,
		NotClosedCleanly: f.Truncated(), Events: []infoEventJSON{}, Features: []string{},
		featureErrors: map[string]error{}}
	switch {
	case f.IsPipe():
		in.Format = "pipe"
	case f.IsDir():
		in.Format = "directory"
	}
	st, rerr := countRecords(f)
	fs := f.Features()
	for _, id := range fs.IDs() {
		in.Features = append(in.Features, id.String())
	}
	in.readFeatures(fs, st)
	in.readHeader(fs, f.Events())
	in.setTimeRange(fs, st, f.Events())
	for _, e := range f.Events() {
		in.Events = append(in.Events, infoEvent(e))
	}
	in.Samples, in.Records = st.allSamples, st.total
	in.setUncounted(st)
	in.LostEvents, in.LostSamples = st.lostEvents, st.lostSamples
	in.Warnings = f.Warnings()
	if len(in.featureErrors) > 0 {
		names := make([]string, 0, len(in.featureErrors))
		for n := range in.featureErrors {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			in.Warnings = append(in.Warnings, fmt.Sprintf("%s feature unreadable: %v", n, in.featureErrors[n]))
		}
	}
	if rerr != nil {
		in.Error = rerr.Error()
	}
	return in, rerr
}

// readFeatures fills in what the header's features say; a feature that is
// present but unreadable goes to in.featureErrors.
func (in *infoJSON) readFeatures(fs *perfdata.Features, st *recordStats) {
	keep := in.keep
	if v, err := fs.Hostname(); keep(perfdata.FeatureHostname, err) {
		in.Hostname = v
	}
	if v, err := fs.OSRelease(); keep(perfdata.FeatureOSRelease, err) {
		in.OSRelease = v
	}
	if v, err := fs.Version(); keep(perfdata.FeatureVersion, err) {
		in.PerfVersion = v
	}
	if v, err := fs.Arch(); keep(perfdata.FeatureArch, err) {
		in.Arch = v
	}
	if a, o, err := fs.NrCPUs(); keep(perfdata.FeatureNrCPUs, err) {
		in.CPUsAvailable, in.CPUsOnline = a, o
	}
	if v, err := fs.CPUDesc(); keep(perfdata.FeatureCPUDesc, err) {
		in.CPUDesc = v
	}
	if v, err := fs.CPUID(); keep(perfdata.FeatureCPUID, err) {
		in.CPUID = v
	}
	if v, err := fs.TotalMem(); keep(perfdata.FeatureTotalMem, err) {
		in.TotalMemKB = v
	}
	if v, err := fs.CmdLine(); keep(perfdata.FeatureCmdLine, err) {
		in.CmdLine = v
	}
	if c, err := fs.Compressed(); keep(perfdata.FeatureCompressed, err) {
		in.Compressed = true
		in.CompressionLevel = c.Level
	}
	in.Compressed = in.Compressed || st.compressed
	if ids, err := fs.BuildIDs(); keep(perfdata.FeatureBuildID, err) {
		in.BuildIDs = len(ids)
	}
}

// setTimeRange sets the recording's time range, from SAMPLE_TIME or else
// from the samples, in wall-clock time too when CLOCK_DATA gives the
// reference and the events use its clock.
func (in *infoJSON) setTimeRange(fs *perfdata.Features, st *recordStats, events []perfdata.Event) {
	if first, last, err := fs.SampleTime(); in.keep(perfdata.FeatureSampleTime, err) && (first != 0 || last != 0) {
		in.TimeRange = &infoTimeJSON{FirstNS: first, LastNS: last, Source: "SAMPLE_TIME"}
	} else if st.timed {
		// perf writes SAMPLE_TIME only in file mode and not with -z;
		// the samples themselves tell.
		in.TimeRange = &infoTimeJSON{FirstNS: st.firstTime, LastNS: st.lastTime, Source: "samples"}
	}
	if cd, err := fs.ClockData(); in.keep(perfdata.FeatureClockData, err) && in.TimeRange != nil && sameClock(events, cd.ClockID) {
		// perf converts with the reference pair the same way
		// (tod = wall_clock_ns + (t - clockid_ns), session.c's
		// timestamp conversion for --clock-data / perf script --tod).
		wall := func(t uint64) string {
			ns := int64(cd.WallClockNS) + (int64(t) - int64(cd.ClockIDNS))
			return time.Unix(0, ns).UTC().Format(time.RFC3339Nano)
		}
		in.TimeRange.FirstWall, in.TimeRange.LastWall = wall(in.TimeRange.FirstNS), wall(in.TimeRange.LastNS)
	}
}

// keep tells whether a feature accessor succeeded; an error other than
// the feature's absence is kept for the warnings.
func (in *infoJSON) keep(feat perfdata.Feature, err error) bool {
	if err == nil {
		return true
	}
	if !errors.Is(err, perfdata.ErrNoFeature) {
		in.featureErrors[feat.String()] = err
	}
	return false
}

// infoEvent describes one event.
func infoEvent(e perfdata.Event) infoEventJSON {
	a := e.Attr
	ev := infoEventJSON{Name: e.Name, Type: a.Type, Config: fmt.Sprintf("%#x", a.Config),
		SampleType: bitNames(uint64(a.SampleType), sampleTypeNames[:]),
		ReadFormat: bitNames(uint64(a.ReadFormat), readFormatNames[:]),
		PreciseIP:  a.PreciseIP(), Flags: attrFlagNames(a.Flags), AttrSize: a.Size, IDs: len(e.IDs)}
	if a.Freq() {
		ev.SampleFreq = a.SamplePeriod
	} else {
		ev.SamplePeriod = a.SamplePeriod
	}
	return ev
}

func runInfo(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	const name = "info"
	file, jsonOut, code := parseFileArgs(name, "perfcheck info [--json] FILE",
		"Prints the recording's header: host, kernel, perf version, command line, events, time range, counts.", args, stdin, stderr)
	if code >= 0 {
		return code
	}
	f, err := openRecording(file, stdin)
	if err != nil {
		return errorf(stderr, name, "%v", err)
	}
	defer f.Close()
	in, rerr := gatherInfo(f, file)
	if jsonOut {
		if in.Warnings == nil {
			in.Warnings = []string{}
		}
		if err := writeJSON(stdout, in); err != nil {
			return errorf(stderr, name, "%v", err)
		}
	} else {
		writeInfoText(stdout, in)
	}
	if rerr != nil {
		return errorf(stderr, name, "%v", rerr)
	}
	return exitOK
}

// sameClock reports whether every event is timed with clock id (attr
// use_clockid and clockid), so that CLOCK_DATA converts its times.
func sameClock(evs []perfdata.Event, id uint32) bool {
	for _, e := range evs {
		if e.Attr.Flags&perfdata.FlagUseClockID == 0 || uint32(e.Attr.ClockID) != id {
			return false
		}
	}
	return len(evs) > 0
}

// perfTime formats a perf clock time as perf prints it: seconds and
// microseconds (timestamp__scnprintf_usec).
func perfTime(ns uint64) string { return fmt.Sprintf("%d.%06d", ns/1e9, ns%1e9/1e3) }

func writeInfoText(w io.Writer, in *infoJSON) {
	line := func(k, format string, args ...any) {
		fmt.Fprintf(w, "%-12s %s\n", k+":", fmt.Sprintf(format, args...))
	}
	line("file", "%s (%s format, %s)", in.File, in.Format, in.ByteOrder)
	if in.NotClosedCleanly {
		line("warning", "perf record did not close the file cleanly; what it holds was read")
	}
	opt := func(k, v string) {
		if v != "" {
			line(k, "%s", v)
		}
	}
	opt("host", in.Hostname)
	opt("kernel", in.OSRelease)
	opt("perf", in.PerfVersion)
	opt("arch", in.Arch)
	if in.CPUsOnline > 0 || in.CPUsAvailable > 0 {
		line("cpus", "%d online, %d available", in.CPUsOnline, in.CPUsAvailable)
	}
	opt("cpu", in.CPUDesc)
	opt("cpuid", in.CPUID)
	if in.TotalMemKB > 0 {
		line("memory", "%d kB", in.TotalMemKB)
	}
	if len(in.CmdLine) > 0 {
		line("command", "%s", strings.Join(in.CmdLine, " "))
	}
	if in.Compressed {
		if in.CompressionLevel > 0 {
			line("compressed", "yes (zstd, level %d)", in.CompressionLevel)
		} else {
			line("compressed", "yes (zstd)")
		}
	} else {
		line("compressed", "no")
	}
	if t := in.TimeRange; t != nil {
		line("time range", "%s .. %s (%.3f ms, from %s)", perfTime(t.FirstNS), perfTime(t.LastNS),
			float64(t.LastNS-t.FirstNS)/1e6, t.Source)
		if t.FirstWall != "" {
			line("wall clock", "%s .. %s", t.FirstWall, t.LastWall)
		}
	} else {
		line("time range", "unknown (no SAMPLE_TIME feature and no timed samples)")
	}
	line("samples", "%d", in.Samples)
	if in.LostEvents > 0 || in.LostSamples > 0 {
		line("lost", "%d events, %d samples (dropped by the kernel; the profile undercounts)", in.LostEvents, in.LostSamples)
	}
	if in.Uncounted > 0 {
		line("records", "%d, and %d that perf does not read (%s)", in.Records, in.Uncounted, in.UncountedNote)
	} else {
		line("records", "%d", in.Records)
	}
	if in.Callchains != nil {
		line("callchains", "%s", in.Callchains)
	}
	line("build-ids", "%d in the header", in.BuildIDs)
	line("features", "%s", strings.Join(in.Features, " "))
	line("events", "%d", len(in.Events))
	for _, e := range in.Events {
		rate := fmt.Sprintf("period %d", e.SamplePeriod)
		if e.SampleFreq != 0 {
			rate = fmt.Sprintf("freq %d Hz", e.SampleFreq)
		}
		fmt.Fprintf(w, "  %s\n", e.Name)
		fmt.Fprintf(w, "    type %d, config %s, %s, ids %d, attr size %d\n", e.Type, e.Config, rate, e.IDs, e.AttrSize)
		fmt.Fprintf(w, "    sample_type %s\n", strings.Join(e.SampleType, "|"))
		if len(e.ReadFormat) > 0 {
			fmt.Fprintf(w, "    read_format %s\n", strings.Join(e.ReadFormat, "|"))
		}
		flags := strings.Join(e.Flags, " ")
		if e.PreciseIP > 0 {
			flags += fmt.Sprintf(" precise_ip=%d", e.PreciseIP)
		}
		fmt.Fprintf(w, "    flags %s\n", strings.TrimSpace(flags))
	}
	writeHeaderText(w, &in.infoHeader)
	for _, wmsg := range in.Warnings {
		line("warning", "%s", wmsg)
	}
}

// recording is what info, stats and buildids read: a perf.data opened by
// name, or a pipe-mode stream on stdin ("-"), which is read once, as it
// arrives (perf record -o - | perfcheck stats -).
type recording struct {
	src interface {
		Records(perfdata.RecordsOptions) *perfdata.Records
		Events() []perfdata.Event
		Features() *perfdata.Features
		ByteOrder() binary.ByteOrder
		Warnings() []string
	}
	file *perfdata.File // nil for stdin
}

func openRecording(name string, stdin io.Reader) (*recording, error) {
	if name == "-" {
		r, err := perfdata.NewReader(bufio.NewReaderSize(stdin, 1<<20))
		if err != nil {
			return nil, fmt.Errorf("standard input: %w", err)
		}
		return &recording{src: r}, nil
	}
	f, err := perfdata.Open(name)
	if err != nil {
		return nil, err
	}
	return &recording{src: f, file: f}, nil
}

func (r *recording) Records(o perfdata.RecordsOptions) *perfdata.Records { return r.src.Records(o) }
func (r *recording) Events() []perfdata.Event                            { return r.src.Events() }
func (r *recording) Features() *perfdata.Features                        { return r.src.Features() }
func (r *recording) ByteOrder() binary.ByteOrder                         { return r.src.ByteOrder() }
func (r *recording) Warnings() []string                                  { return r.src.Warnings() }

// IsPipe reports whether the recording is in pipe format: a file-format
// recording read as a stream (cat perf.data | perfcheck info -) is not.
func (r *recording) IsPipe() bool {
	if r.file != nil {
		return r.file.IsPipe()
	}
	rd, ok := r.src.(*perfdata.Reader)
	return !ok || rd.IsPipe()
}

func (r *recording) IsDir() bool { return r.file != nil && r.file.IsDir() }

// Truncated reports an unfinished file (see perfdata.File.Truncated); a
// stream has no header to tell.
func (r *recording) Truncated() bool { return r.file != nil && r.file.Truncated() }

func (r *recording) Close() error {
	if r.file != nil {
		return r.file.Close()
	}
	return nil
}

// setUncounted sums the records of types perf does not count and lists
// them ("simpleperf:CALLCHAIN 40").
func (in *infoJSON) setUncounted(st *recordStats) {
	var parts []string
	for _, t := range st.uncountedTypes() {
		in.Uncounted += st.uncounted[t]
		parts = append(parts, fmt.Sprintf("%v %d", t, st.uncounted[t]))
	}
	in.UncountedNote = strings.Join(parts, ", ")
	in.Callchains = newCallchainsJSON(st.chains)
}
