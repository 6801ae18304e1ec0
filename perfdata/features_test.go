package perfdata

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/perfcheck/perfcheck/buildid"
	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// corpusRecordings lists the shared corpus's recordings (not the
// *.buildids expectation files).
func corpusRecordings(t testing.TB) []string {
	t.Helper()
	fixtures.Corpus(t, "")
	var out []string
	for _, pat := range []string{"*perf.data*", "modern/*.data"} {
		m, err := filepath.Glob(filepath.Join(corpusDir, pat))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m {
			if !strings.HasSuffix(f, ".buildids") {
				out = append(out, f)
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("no recordings in %s", corpusDir)
	}
	return out
}

// callAll calls the typed accessor of every feature fs has and returns the
// first error; it is also the fuzz body's contract ("error means no
// result").
func callAll(fs *Features) error {
	err, bad := callAllChecked(fs)
	return errors.Join(err, bad)
}

// callAllChecked is callAll that keeps apart the decoding errors (err) and
// the broken invariants (bad: a result returned together with an error).
func callAllChecked(fs *Features) (err, bad error) {
	var errs, bads []error
	check := func(ok bool, err error) {
		if err != nil {
			errs = append(errs, err)
			if ok {
				bads = append(bads, fmt.Errorf("a result came with the error %v", err))
			}
		}
	}
	for _, id := range fs.IDs() {
		switch id {
		case FeatureBuildID:
			v, err := fs.BuildIDs()
			check(v != nil, err)
		case FeatureHostname:
			v, err := fs.Hostname()
			check(v != "", err)
		case FeatureOSRelease:
			v, err := fs.OSRelease()
			check(v != "", err)
		case FeatureVersion:
			v, err := fs.Version()
			check(v != "", err)
		case FeatureArch:
			v, err := fs.Arch()
			check(v != "", err)
		case FeatureNrCPUs:
			a, o, err := fs.NrCPUs()
			check(a != 0 || o != 0, err)
		case FeatureCPUDesc:
			v, err := fs.CPUDesc()
			check(v != "", err)
		case FeatureCPUID:
			v, err := fs.CPUID()
			check(v != "", err)
		case FeatureTotalMem:
			v, err := fs.TotalMem()
			check(v != 0, err)
		case FeatureCmdLine:
			v, err := fs.CmdLine()
			check(v != nil, err)
		case FeatureEventDesc:
			v, err := fs.EventDesc()
			check(v != nil, err)
		case FeatureCPUTopology:
			v, err := fs.CPUTopology()
			check(v != nil, err)
		case FeatureNUMATopology:
			v, err := fs.NUMATopology()
			check(v != nil, err)
		case FeaturePMUMappings:
			v, err := fs.PMUMappings()
			check(v != nil, err)
		case FeatureGroupDesc:
			v, err := fs.GroupDesc()
			check(v != nil, err)
		case FeatureAuxtrace:
			v, err := fs.AuxtraceIndex()
			check(v != nil, err)
		case FeatureCache:
			v, err := fs.Cache()
			check(v != nil, err)
		case FeatureSampleTime:
			a, b, err := fs.SampleTime()
			check(a != 0 || b != 0, err)
		case FeatureMemTopology:
			v, err := fs.MemTopology()
			check(v != nil, err)
		case FeatureClockID:
			v, err := fs.ClockID()
			check(v != 0, err)
		case FeatureDirFormat:
			v, err := fs.DirFormat()
			check(v != 0, err)
		case FeatureCompressed:
			v, err := fs.Compressed()
			check(v != Compression{}, err)
		case FeatureCPUPMUCaps:
			v, err := fs.CPUPMUCaps()
			check(v != nil, err)
		case FeatureClockData:
			v, err := fs.ClockData()
			check(v != ClockData{}, err)
		case FeatureHybridTopology:
			v, err := fs.HybridTopology()
			check(v != nil, err)
		case FeaturePMUCaps:
			v, err := fs.PMUCaps()
			check(v != nil, err)
		case FeatureBranchStack, FeatureStat:
			// flags: nothing to decode
		default:
			v, err := fs.Raw(id)
			check(v != nil, err)
		}
	}
	return errors.Join(errs...), errors.Join(bads...)
}

// brokenSections lists the corpus files with a feature section that does
// not parse, and why. perf 6.1 fails on the same sections.
var brokenSections = map[string]struct {
	id     Feature
	reason string
}{
	// The perf 3.14 that wrote it recorded a 0-byte CPUDESC section (no
	// room even for the string's length); perf prints "cpudesc : (null)"
	// and, having stopped there, no total memory or command line.
	"perf.data.armv7.perf_3.14-3.8": {FeatureCPUDesc, "empty CPUDESC section"},
}

// TestFeaturesCorpusDecode decodes every feature of every corpus file.
func TestFeaturesCorpusDecode(t *testing.T) {
	t.Parallel()
	seen := map[Feature]int{}
	for _, f := range corpusRecordings(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			fs := testFeatures(t, f)
			err := callAll(fs)
			if b, ok := brokenSections[filepath.Base(f)]; ok {
				var fe *FormatError
				if !errors.As(err, &fe) || !strings.Contains(err.Error(), b.id.String()) {
					t.Fatalf("want a FormatError for %v (%s), got %v", b.id, b.reason, err)
				}
				// The features after it still decode.
				fs.secs = slices.DeleteFunc(fs.secs, func(s featureSection) bool { return s.ID == b.id })
				err = callAll(fs)
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range fs.IDs() {
				seen[id]++
			}
		})
	}
	// Every typed feature the issue lists is present somewhere in the
	// corpus except these, which no corpus file carries (tested on
	// built sections below).
	absent := []Feature{FeatureTracingData, FeatureStat, FeatureDirFormat, FeatureCPUDomainInfo}
	for id := FeatureBuildID; id < featureLast; id++ {
		if seen[id] == 0 && !slices.Contains(absent, id) {
			t.Errorf("no corpus file has %v: the corpus changed?", id)
		}
	}
}

// TestFeaturesValues pins decoded values that perf 6.1's
// `perf report --header-only -I` printed for these files.
func TestFeaturesValues(t *testing.T) {
	t.Parallel()
	fixtures.Corpus(t, "")
	p := func(name string) *Features { return testFeatures(t, filepath.Join(corpusDir, name)) }

	fs := p("perf.data.hybrid_topology")
	host, err := fs.Hostname()
	eq(t, "hostname", host, "localhost", err)
	rel, err := fs.OSRelease()
	eq(t, "osrelease", rel, "5.15.140-21013-ge5249718105d", err)
	ver, err := fs.Version()
	eq(t, "version", ver, "5.15.68", err)
	arch, err := fs.Arch()
	eq(t, "arch", arch, "x86_64", err)
	desc, err := fs.CPUDesc()
	eq(t, "cpudesc", desc, "13th Gen Intel(R) Core(TM) i7-1365U", err)
	cpuid, err := fs.CPUID()
	eq(t, "cpuid", cpuid, "GenuineIntel,6,186,3", err)
	mem, err := fs.TotalMem()
	eq(t, "total mem", mem, 7911756, err)
	cmd, err := fs.CmdLine()
	eq(t, "cmdline", strings.Join(cmd, " "), "/usr/bin/perf record -e cycles:ppp -- sleep 1", err)
	avail, online, err := fs.NrCPUs()
	eq(t, "nrcpus", [2]int{avail, online}, [2]int{12, 12}, err)
	first, last, err := fs.SampleTime()
	eq(t, "sample time", [2]uint64{first, last}, [2]uint64{101132490336, 101132592926}, err)
	hy, err := fs.HybridTopology()
	eq(t, "hybrid", fmt.Sprint(hy), "[{cpu_core 0-3} {cpu_atom 4-11}]", err)
	caps, err := fs.PMUCaps()
	eq(t, "pmu caps", fmt.Sprint(caps), "[{cpu_core [{branches 32} {max_precise 3} {pmu_name alderlake_hybrid}]} {cpu_atom [{branches 32} {max_precise 3} {pmu_name alderlake_hybrid}]}]", err)
	ev, err := fs.EventDesc()
	if err != nil || len(ev) != 3 {
		t.Fatalf("event desc: %d events, %v", len(ev), err)
	}
	eq(t, "event 0", fmt.Sprintln(ev[0].Name, ev[0].IDs, ev[0].Attr.Config, ev[0].Attr.PreciseIP()), "cpu_core/cycles:ppp/ [29 30 31 32] 17179869184 3\n", nil)
	eq(t, "event 2", fmt.Sprintln(ev[2].Name, len(ev[2].IDs), ev[2].Attr.Type), "dummy:HG 12 1\n", nil)
	topo, err := fs.CPUTopology()
	if err != nil || len(topo.CPUs) != 12 {
		t.Fatalf("cpu topology: %+v, %v", topo, err)
	}
	eq(t, "cpu 2", topo.CPUs[2], CPUTopologyEntry{CoreID: 4, SocketID: 0, DieID: 0}, nil)

	fs = p("perf.data.branch_stack_spec")
	numa, err := fs.NUMATopology()
	eq(t, "numa", fmt.Sprint(numa), "[{0 792546768 785125648 0-95,192-287} {1 792602420 789457648 96-191,288-383}]", err)
	cache, err := fs.Cache()
	if err != nil || len(cache) == 0 {
		t.Fatalf("cache: %v", err)
	}
	eq(t, "cache 0", cache[0], CacheLevel{Level: 1, LineSize: 64, Sets: 64, Ways: 8, Type: "Data", Size: "32K", Map: "0,192"}, nil)
	cpucaps, err := fs.CPUPMUCaps()
	eq(t, "cpu pmu caps", fmt.Sprint(cpucaps), "[{max_precise 0} {branches 16}]", err)
	if !fs.BranchStack() || fs.Stat() {
		t.Errorf("flags: branch stack %v, stat %v", fs.BranchStack(), fs.Stat())
	}

	fs = p("perf.data.intel_pt-4.14")
	aux, err := fs.AuxtraceIndex()
	eq(t, "auxtrace index", fmt.Sprint(aux), "[{10688 48} {30600 48}]", err)

	fs = p("perf.data.lost_samples-4.4")
	grp, err := fs.GroupDesc()
	eq(t, "group", fmt.Sprint(grp), "[{{anon_group} 0 3}]", err)

	fs = p("perf.data.piped.header_feautres_group_desc-6.8")
	mt, err := fs.MemTopology()
	eq(t, "mem topology", fmt.Sprintf("%+v", mt), "&{Version:1 BlockSize:2147483648 Nodes:[{Node:0 Size:33 Blocks:[8589934589]}]}", err)
	pm, err := fs.PMUMappings()
	if err != nil || len(pm) == 0 || pm[0] != (PMUMapping{Type: 4, Name: "cpu"}) {
		t.Errorf("pmu mappings: %v, %v", pm, err)
	}
	if fs.Has(FeatureCPUDomainInfo) {
		t.Errorf("the pipe stream's end-of-features marker was taken for CPU_DOMAIN_INFO")
	}

	fs = p("modern/fibo.compressed2.pipe.data")
	comp, err := fs.Compressed()
	eq(t, "compressed", comp, Compression{Version: 0, Type: 1, Level: 1, Ratio: 0, MmapLen: 528384}, err)
	cd, err := fs.ClockData()
	eq(t, "clock data", cd, ClockData{Version: 1, ClockID: 1, WallClockNS: 1762878703344339000, ClockIDNS: 1642884550397}, err)
	res, err := fs.ClockID()
	eq(t, "clockid res", res, 1, err)
}

func eq[T comparable](t *testing.T, what string, got, want T, err error) {
	t.Helper()
	if err != nil {
		t.Errorf("%s: %v", what, err)
		return
	}
	if got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// TestFeaturesAgainstPerf runs perf 6.1's `perf report --header-only -I` on
// every corpus file it reads and checks that each value it prints, for
// the features where perf's format is simple, is what we decoded.
func TestFeaturesAgainstPerf(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs perf on every recording; skipped with -short")
	}
	perf, err := exec.LookPath("perf")
	if err != nil {
		t.Skip("perf is not installed (make test installs linux-perf)")
	}
	for _, f := range corpusRecordings(t) {
		stats, err := os.ReadFile(filepath.Join(corpusDir, "perf-6.1", filepath.Base(f)+".stats"))
		if err != nil || len(stats) == 0 {
			continue // perf 6.1 does not read it
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			out, err := exec.Command(perf, "report", "--header-only", "-I", "-i", f).CombinedOutput()
			if err != nil {
				t.Fatalf("perf: %v\n%s", err, out)
			}
			fs := testFeatures(t, f)
			// perf stops processing features at the first one that
			// fails to parse (perf_header__process_sections), so it
			// prints defaults for the later ones; compare only the
			// features before it.
			if broken, ok := brokenSections[filepath.Base(f)]; ok {
				fs.secs = slices.DeleteFunc(fs.secs, func(s featureSection) bool { return s.ID >= broken.id })
			}
			var want []string
			add := func(format string, args ...any) { want = append(want, fmt.Sprintf(format, args...)) }
			if v, err := fs.Hostname(); err == nil {
				add("# hostname : %s", v)
			}
			if v, err := fs.OSRelease(); err == nil {
				add("# os release : %s", v)
			}
			if v, err := fs.Version(); err == nil {
				add("# perf version : %s", v)
			}
			if v, err := fs.Arch(); err == nil {
				add("# arch : %s", v)
			}
			if a, o, err := fs.NrCPUs(); err == nil {
				add("# nrcpus online : %d", o)
				add("# nrcpus avail : %d", a)
			}
			if v, err := fs.CPUDesc(); err == nil {
				add("# cpudesc : %s", v)
			}
			if v, err := fs.CPUID(); err == nil {
				add("# cpuid : %s", v)
			}
			if v, err := fs.TotalMem(); err == nil {
				add("# total memory : %d kB", v)
			}
			if v, err := fs.CmdLine(); err == nil {
				add("# cmdline : %s ", strings.Join(v, " "))
			}
			if v, err := fs.EventDesc(); err == nil {
				for _, e := range v {
					// perf goes on after the ids with the attr's
					// fields; the trailing comma ends the match.
					if len(e.IDs) == 0 {
						add("# event : name = %s, , ", e.Name)
						continue
					}
					ids := fmt.Sprint(e.IDs)
					add("# event : name = %s, , id = { %s },", e.Name, strings.ReplaceAll(ids[1:len(ids)-1], " ", ", "))
				}
			}
			if v, err := fs.NUMATopology(); err == nil {
				for _, n := range v {
					add("# node%d meminfo  : total = %d kB, free = %d kB", n.Node, n.MemTotal, n.MemFree)
					add("# node%d cpu list : %s", n.Node, n.CPUs)
				}
			}
			if v, err := fs.CPUTopology(); err == nil {
				for _, s := range v.ThreadSiblings {
					add("# sibling threads : %s", s)
				}
				// perf works out where the per-CPU part starts
				// from string_size(), which assumes each string's
				// length is padded to 64 (NAME_ALIGN); files that
				// perf_data_converter rewrote pad to 8, so perf
				// believes the part is missing and says so. We
				// follow the lengths actually recorded.
				cpus := v.CPUs
				if strings.Contains(string(out), "# Core ID and Socket ID information is not available\n") {
					cpus = nil
				}
				for i, c := range cpus {
					if v.DieSiblings != nil {
						add("# CPU %d: Core ID %d, Die ID %d, Socket ID %d", i, c.CoreID, c.DieID, c.SocketID)
					} else {
						add("# CPU %d: Core ID %d, Socket ID %d", i, c.CoreID, c.SocketID)
					}
				}
			}
			if v, err := fs.PMUMappings(); err == nil {
				var parts []string
				for _, m := range v {
					parts = append(parts, fmt.Sprintf("%s = %d", m.Name, m.Type))
				}
				add("# pmu mappings: %s", strings.Join(parts, ", "))
			}
			if v, err := fs.Cache(); err == nil {
				for _, c := range v {
					add("#  L%d %-15s %8s [%s]", c.Level, c.Type, c.Size, c.Map)
				}
			}
			if a, b, err := fs.SampleTime(); err == nil {
				add("# time of first sample : %d.%06d", a/1e9, a%1e9/1e3)
				add("# time of last sample : %d.%06d", b/1e9, b%1e9/1e3)
			}
			capLine := func(caps []PMUCap) string {
				var parts []string
				for _, c := range caps {
					parts = append(parts, c.Name+"="+c.Value)
				}
				return strings.Join(parts, ", ")
			}
			if v, err := fs.CPUPMUCaps(); err == nil {
				add("# cpu pmu capabilities: %s", capLine(v))
			}
			if v, err := fs.PMUCaps(); err == nil {
				for _, p := range v {
					add("# %s pmu capabilities: %s", p.PMU, capLine(p.Caps))
				}
			}
			if v, err := fs.AuxtraceIndex(); err == nil && len(v) > 0 {
				// perf prints nothing for it; the check is that it decoded.
				_ = v
			}
			text := string(out)
			for _, w := range want {
				if !strings.HasSuffix(w, ",") && !strings.HasSuffix(w, " ") {
					w += "\n"
				}
				if !strings.Contains(text, w) {
					t.Errorf("perf did not print %q", w)
				}
			}
			if len(fs.IDs()) > 0 && len(want) < 5 {
				t.Errorf("only %d values compared", len(want))
			}
		})
	}
}

// TestFeatureNames checks String against perf's names.
func TestFeatureNames(t *testing.T) {
	t.Parallel()
	for f, want := range map[Feature]string{FeatureBuildID: "BUILD_ID", FeatureNUMATopology: "NUMA_TOPOLOGY",
		FeatureCPUDomainInfo: "CPU_DOMAIN_INFO", 40: "feature(40)", -1: "feature(-1)"} {
		if got := f.String(); got != want {
			t.Errorf("%d: %q, want %q", int(f), got, want)
		}
	}
}

// TestBuildIDs16Byte: perf.data.weight_struct's build-ids are 16 bytes
// written without PERF_RECORD_MISC_BUILD_ID_SIZE, so perf (and we) read 20
// bytes: the four after the real id are zero.
func TestBuildIDs16Byte(t *testing.T) {
	t.Parallel()
	fixtures.Corpus(t, "")
	fs := testFeatures(t, filepath.Join(corpusDir, "perf.data.weight_struct"))
	ids, err := fs.BuildIDs()
	if err != nil {
		t.Fatal(err)
	}
	var bash *BuildIDEntry
	for i := range ids {
		if ids[i].Filename == "/bin/bash" {
			bash = &ids[i]
		}
	}
	if bash == nil {
		t.Fatalf("no /bin/bash in %v", ids)
	}
	if got := bash.BuildID.String(); got != "745c6a156aeccd1daa242eef630db66e00000000" {
		t.Errorf("/bin/bash build-id %s", got)
	}
	if bash.CPUMode != CPUModeUser || bash.PID != -1 || bash.Misc&miscBuildIDSize != 0 {
		t.Errorf("entry %+v", bash)
	}
}

// TestBuildIDSizeBit: with PERF_RECORD_MISC_BUILD_ID_SIZE the size byte
// says how long the build-id is (perf.data.hybrid_topology is written by
// perf 5.15, which sets it).
func TestBuildIDSizeBit(t *testing.T) {
	t.Parallel()
	fixtures.Corpus(t, "")
	fs := testFeatures(t, filepath.Join(corpusDir, "perf.data.hybrid_topology"))
	ids, err := fs.BuildIDs()
	if err != nil || len(ids) == 0 {
		t.Fatal(ids, err)
	}
	for _, e := range ids {
		if e.Misc&miscBuildIDSize == 0 || len(e.BuildID) != 20 {
			t.Errorf("%+v", e)
		}
	}

	// The same entry with size 16 keeps 16 bytes.
	ev := buildIDEvent(binary.LittleEndian, 2|miscBuildIDSize, -1, bytes.Repeat([]byte{0xab}, 20), 16, "/x")
	d := newDecoder(ev, 100, binary.LittleEndian, "test")
	e := decodeBuildIDEvent(&d)
	if d.err != nil || e.BuildID.String() != strings.Repeat("ab", 16) || e.Filename != "/x" || e.Offset != 100 || d.off != len(ev) {
		t.Errorf("%+v %v", e, d.err)
	}
	// A size byte above 20 is malformed.
	ev = buildIDEvent(binary.LittleEndian, 2|miscBuildIDSize, -1, make([]byte, 20), 21, "/x")
	d = newDecoder(ev, 100, binary.LittleEndian, "test")
	decodeBuildIDEvent(&d)
	wantFormatError(t, d.err, 132)
}

// buildIDEvent builds a build_id_event as perf's write_buildid does
// (filename NUL-terminated and padded to 64 bytes).
func buildIDEvent(order binary.ByteOrder, misc uint16, pid int32, id []byte, size byte, name string) []byte {
	nlen := (len(name) + 1 + 63) / 64 * 64
	b := make([]byte, 36+nlen)
	order.PutUint32(b[0:], 67)
	order.PutUint16(b[4:], misc)
	order.PutUint16(b[6:], uint16(len(b)))
	order.PutUint32(b[8:], uint32(pid))
	copy(b[12:32], id)
	b[32] = size
	copy(b[36:], name)
	return b
}

// TestBuildIDLegacyLayout: files from before 2.6.34 had no pid field.
// None is in the corpus, so the table is rebuilt from a real one
// (perf.data.busy.0-3.8's) by deleting each entry's pid, which is what the
// old writer produced; perf detects it by the kernel's name losing "[ker".
func TestBuildIDLegacyLayout(t *testing.T) {
	t.Parallel()
	fixtures.Corpus(t, "")
	fs := testFeatures(t, filepath.Join(corpusDir, "perf.data.busy.0-3.8"))
	want, err := fs.BuildIDs()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := fs.Raw(FeatureBuildID)
	if err != nil {
		t.Fatal(err)
	}
	var old []byte
	le := binary.LittleEndian
	for off := 0; off < len(raw); {
		size := int(le.Uint16(raw[off+6:]))
		ev := slices.Clone(raw[off : off+size])
		le.PutUint16(ev[6:], uint16(size-4))
		old = append(old, ev[:8]...)
		old = append(old, ev[12:]...)
		off += size
	}
	got, err := decodeBuildIDTable(old, 0, le)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d entries, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i].Filename != want[i].Filename || !bytes.Equal(got[i].BuildID, want[i].BuildID) || got[i].PID != -1 {
			t.Errorf("entry %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestFeaturesPipe checks the pipe-mode path: payloads are copied, build-id
// records accumulate, and a later record of a feature replaces the first.
func TestFeaturesPipe(t *testing.T) {
	t.Parallel()
	le := binary.LittleEndian
	fs := newPipeFeatures(le)
	p := []byte{4, 0, 0, 0, 'h', 'o', 's', 0}
	fs.addPipe(FeatureHostname, p, 40)
	p[4] = 'X' // the caller's buffer is reused
	if h, err := fs.Hostname(); err != nil || h != "hos" {
		t.Errorf("hostname %q %v", h, err)
	}
	fs.addPipe(FeatureHostname, []byte{4, 0, 0, 0, 'n', 'e', 'w', 0}, 80)
	if h, err := fs.Hostname(); err != nil || h != "new" {
		t.Errorf("replaced hostname %q %v", h, err)
	}
	if _, err := fs.BuildIDs(); !errors.Is(err, ErrNoFeature) {
		t.Errorf("BuildIDs without any: %v", err)
	}
	if _, err := fs.OSRelease(); !errors.Is(err, ErrNoFeature) {
		t.Errorf("OSRelease absent: %v", err)
	}
	ev := buildIDEvent(le, 1, -1, bytes.Repeat([]byte{1}, 20), 0, "[kernel.kallsyms]")
	d := newDecoder(ev, 1000, le, "HEADER_BUILD_ID record")
	e := decodeBuildIDEvent(&d)
	if d.err != nil {
		t.Fatal(d.err)
	}
	ev[12] = 9 // the record buffer is reused by the reader
	fs.addBuildID(e)
	ids, err := fs.BuildIDs()
	if err != nil || len(ids) != 1 || ids[0].BuildID[0] != 1 || ids[0].Offset != 1000 || ids[0].CPUMode != CPUModeKernel {
		t.Errorf("%+v %v", ids, err)
	}
	if !fs.Has(FeatureBuildID) || !slices.Equal(fs.IDs(), []Feature{FeatureBuildID, FeatureHostname}) {
		t.Errorf("IDs %v", fs.IDs())
	}
	fs.addPipe(featureLast, nil, 0)
	fs.addPipe(FeatureCPUDomainInfo, nil, 0)
	if len(fs.IDs()) != 2 {
		t.Errorf("end markers kept: %v", fs.IDs())
	}
}

// TestFeaturesConcurrent calls accessors from several goroutines (run with
// -race).
func TestFeaturesConcurrent(t *testing.T) {
	t.Parallel()
	fixtures.Corpus(t, "")
	fs := testFeatures(t, filepath.Join(corpusDir, "perf.data.hybrid_topology"))
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if err := callAll(fs); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}

func wantFormatError(t *testing.T, err error, off int64) *FormatError {
	t.Helper()
	var fe *FormatError
	if !errors.As(err, &fe) {
		t.Fatalf("error %v (%T) is not a *FormatError", err, err)
	}
	if off >= 0 && fe.Offset != off {
		t.Errorf("error at offset %d, want %d: %v", fe.Offset, off, err)
	}
	return fe
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// TestFeaturesHostileSections: absurd offsets and sizes in the section
// table, and counts larger than their section, fail with a FormatError
// that names the feature and the offset, without allocating what they
// claim.
func TestFeaturesHostileSections(t *testing.T) {
	le := binary.LittleEndian
	file := make([]byte, 4096)
	r := bytes.NewReader(file)
	const limit = 1 << 20 // no case may allocate a megabyte

	type hostile struct {
		name    string
		sec     featureSection
		payload []byte // written at sec.Offset when it fits
		call    func(fs *Features) error
		off     int64 // wanted error offset
	}
	u32s := func(v ...uint32) []byte {
		var b []byte
		for _, x := range v {
			b = le.AppendUint32(b, x)
		}
		return b
	}
	u64s := func(v ...uint64) []byte {
		var b []byte
		for _, x := range v {
			b = le.AppendUint64(b, x)
		}
		return b
	}
	str := func(n uint32) []byte { return u32s(n) }
	cases := []hostile{
		{"offset beyond file", featureSection{FeatureHostname, 1 << 40, 16}, nil,
			func(fs *Features) error { _, err := fs.Hostname(); return err }, 1 << 40},
		{"size beyond file", featureSection{FeatureCmdLine, 100, 1 << 40}, nil,
			func(fs *Features) error { _, err := fs.CmdLine(); return err }, 100},
		{"negative offset", featureSection{FeatureArch, -8, 16}, nil,
			func(fs *Features) error { _, err := fs.Arch(); return err }, -8},
		{"size overflows", featureSection{FeatureArch, 1000, 1<<63 - 1}, nil,
			func(fs *Features) error { _, err := fs.Arch(); return err }, 1000},
		{"string longer than section", featureSection{FeatureHostname, 200, 8}, str(0xffffffff),
			func(fs *Features) error { _, err := fs.Hostname(); return err }, 204},
		{"string list count", featureSection{FeatureCmdLine, 200, 8}, u32s(0xffffffff, 0),
			func(fs *Features) error { _, err := fs.CmdLine(); return err }, 204},
		{"event desc count", featureSection{FeatureEventDesc, 200, 16}, u32s(0xffffffff, 136),
			func(fs *Features) error { _, err := fs.EventDesc(); return err }, 200},
		{"event desc attr size", featureSection{FeatureEventDesc, 200, 16}, u32s(1, 8),
			func(fs *Features) error { _, err := fs.EventDesc(); return err }, 204},
		{"event desc id count", featureSection{FeatureEventDesc, 200, 80}, append(append(u32s(1, 64), make([]byte, 64)...), u32s(0xffffffff, 0)...),
			func(fs *Features) error { _, err := fs.EventDesc(); return err }, 280},
		{"numa count", featureSection{FeatureNUMATopology, 200, 8}, u32s(0x7fffffff),
			func(fs *Features) error { _, err := fs.NUMATopology(); return err }, 200},
		{"pmu mappings count", featureSection{FeaturePMUMappings, 200, 8}, u32s(0x7fffffff),
			func(fs *Features) error { _, err := fs.PMUMappings(); return err }, 200},
		{"group count", featureSection{FeatureGroupDesc, 200, 8}, u32s(0x7fffffff),
			func(fs *Features) error { _, err := fs.GroupDesc(); return err }, 200},
		{"auxtrace count", featureSection{FeatureAuxtrace, 200, 16}, u64s(1 << 60),
			func(fs *Features) error { _, err := fs.AuxtraceIndex(); return err }, 200},
		{"cache version", featureSection{FeatureCache, 200, 8}, u32s(2, 0),
			func(fs *Features) error { _, err := fs.Cache(); return err }, 200},
		{"cache count", featureSection{FeatureCache, 200, 8}, u32s(1, 0xffffffff),
			func(fs *Features) error { _, err := fs.Cache(); return err }, 204},
		{"mem topology count", featureSection{FeatureMemTopology, 200, 24}, u64s(1, 4096, 1<<62),
			func(fs *Features) error { _, err := fs.MemTopology(); return err }, 216},
		{"mem topology bitmap", featureSection{FeatureMemTopology, 200, 48}, u64s(1, 4096, 1, 0, 1, 1<<63),
			func(fs *Features) error { _, err := fs.MemTopology(); return err }, 240},
		{"caps count", featureSection{FeatureCPUPMUCaps, 200, 8}, u32s(0xffffffff),
			func(fs *Features) error { _, err := fs.CPUPMUCaps(); return err }, 200},
		{"pmu caps count", featureSection{FeaturePMUCaps, 200, 8}, u32s(0xffffffff),
			func(fs *Features) error { _, err := fs.PMUCaps(); return err }, 200},
		{"hybrid count", featureSection{FeatureHybridTopology, 200, 8}, u32s(0xffffffff),
			func(fs *Features) error { _, err := fs.HybridTopology(); return err }, 200},
		{"clock data version", featureSection{FeatureClockData, 200, 24}, u32s(7, 1),
			func(fs *Features) error { _, err := fs.ClockData(); return err }, 200},
		{"nrcpus short", featureSection{FeatureNrCPUs, 200, 6}, u32s(1, 1),
			func(fs *Features) error { _, _, err := fs.NrCPUs(); return err }, 204},
		{"cpu topology needs nrcpus", featureSection{FeatureCPUTopology, 200, 16}, u32s(0, 0, 1, 1),
			func(fs *Features) error { _, err := fs.CPUTopology(); return err }, 208},
		{"build-id event size", featureSection{FeatureBuildID, 200, 64}, buildIDEvent(le, 1, -1, nil, 0, "x")[:64],
			func(fs *Features) error { _, err := fs.BuildIDs(); return err }, 200},
		{"build-id event too small", featureSection{FeatureBuildID, 200, 64}, append(u32s(67, 8<<16), make([]byte, 56)...),
			func(fs *Features) error { _, err := fs.BuildIDs(); return err }, 200},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clear(file)
			if c.sec.Offset >= 0 && c.sec.Offset+int64(len(c.payload)) <= int64(len(file)) {
				copy(file[c.sec.Offset:], c.payload)
			}
			r.Reset(file)
			fs := newFileFeatures(r, int64(len(file)), le, []featureSection{c.sec})
			fs.setName("hostile.data")
			var err error
			n := allocated(func() { err = c.call(fs) })
			fe := wantFormatError(t, err, c.off)
			if fe.File != "hostile.data" || !strings.Contains(err.Error(), c.sec.ID.String()) {
				t.Errorf("error %q does not name the file and the feature", err)
			}
			if n > limit {
				t.Errorf("allocated %d bytes", n)
			}
			// The error is cached and returned again.
			if err2 := c.call(fs); err2 != err {
				t.Errorf("second call: %v", err2)
			}
		})
	}
}

// shortReader claims a size its content does not have, as a file
// truncated after it was stat'ed would.
type shortReader struct{ n int64 }

func (s shortReader) ReadAt(p []byte, off int64) (int, error) {
	if off >= s.n {
		return 0, io.EOF
	}
	n := min(int64(len(p)), s.n-off)
	clear(p[:n])
	if n < int64(len(p)) {
		return int(n), io.EOF
	}
	return int(n), nil
}

// TestFeaturesChunkedRead: a section inside the claimed file size but past
// what the reader holds fails after reading what is there, allocating in
// chunks rather than the whole claim.
func TestFeaturesChunkedRead(t *testing.T) {
	fs := newFileFeatures(shortReader{4096}, 1<<40, binary.LittleEndian,
		[]featureSection{{FeatureBPFBTF, 0, 1 << 39}})
	var err error
	n := allocated(func() { _, err = fs.Raw(FeatureBPFBTF) })
	wantFormatError(t, err, 4096)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("%v does not wrap io.ErrUnexpectedEOF", err)
	}
	if n > 16<<20 {
		t.Errorf("allocated %d bytes for a 4 kB reader", n)
	}
}

// TestFeaturesLazy: a broken section does not affect the others, and
// nothing is read until asked for.
func TestFeaturesLazy(t *testing.T) {
	t.Parallel()
	le := binary.LittleEndian
	file := make([]byte, 256)
	copy(file[16:], []byte{4, 0, 0, 0, 'a', 'b', 'c', 0})
	cr := &countingReader{r: bytes.NewReader(file)}
	fs := newFileFeatures(cr, int64(len(file)), le, []featureSection{
		{FeatureArch, 16, 8}, {FeatureHostname, 1 << 50, 8}, {FeatureBPFBTF, 0, 0}})
	if cr.n != 0 {
		t.Errorf("%d reads before any accessor", cr.n)
	}
	if _, err := fs.Hostname(); err == nil {
		t.Error("hostname: no error")
	}
	if a, err := fs.Arch(); err != nil || a != "abc" {
		t.Errorf("arch %q %v", a, err)
	}
	if b, err := fs.Raw(FeatureBPFBTF); err != nil || b == nil || len(b) != 0 {
		t.Errorf("empty section: %v %v", b, err)
	}
	if !slices.Equal(fs.IDs(), []Feature{FeatureHostname, FeatureArch, FeatureBPFBTF}) {
		t.Errorf("IDs %v", fs.IDs())
	}
}

type countingReader struct {
	r io.ReaderAt
	n int
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	c.n++
	return c.r.ReadAt(p, off)
}

// TestFeaturesFileBuildIDRecords: HEADER_BUILD_ID records in a file-mode
// recording (perf inject -b) add to the table, or stand in for it.
func TestFeaturesFileBuildIDRecords(t *testing.T) {
	t.Parallel()
	le := binary.LittleEndian
	table := buildIDEvent(le, 1, -1, bytes.Repeat([]byte{1}, 20), 0, "[kernel.kallsyms]")
	rec := BuildIDEntry{PID: -1, CPUMode: CPUModeUser, BuildID: buildid.ID{2, 2}, Filename: "/bin/x"}

	fs := newFileFeatures(bytes.NewReader(table), int64(len(table)), le, []featureSection{{FeatureBuildID, 0, int64(len(table))}})
	fs.addBuildID(rec)
	ids, err := fs.BuildIDs()
	if err != nil || len(ids) != 2 || ids[0].Filename != "[kernel.kallsyms]" || ids[1].Filename != "/bin/x" {
		t.Errorf("table and record: %+v %v", ids, err)
	}

	fs = newFileFeatures(bytes.NewReader(nil), 0, le, nil)
	if fs.Has(FeatureBuildID) {
		t.Error("Has(BUILD_ID) with neither")
	}
	fs.addBuildID(rec)
	ids, err = fs.BuildIDs()
	if err != nil || len(ids) != 1 || !fs.Has(FeatureBuildID) || !slices.Equal(fs.IDs(), []Feature{FeatureBuildID}) {
		t.Errorf("record only: %+v %v %v", ids, err, fs.IDs())
	}
}
