package pprofout

import (
	"bytes"
	"context"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/perfcheck/perfcheck/internal/fixtures"

	"github.com/google/pprof/profile"
	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/check"
)

const fixtureDir = "../testdata/perf"

// recordedBin is where the fixtures' programs were when perf recorded them.
const recordedBin = fixtures.RecordedBin

// symfs builds a root under which the fixtures' recorded paths resolve,
// wherever the repository is (fixtures.SymFS).
func symfs(t *testing.T) string { return fixtures.SymFS(t) }

func analyze(t *testing.T, name, root string) *check.Result {
	t.Helper()
	p := filepath.Join(fixtureDir, name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("fixture: %v", err)
	}
	res, err := check.Analyze(context.Background(), check.Path(p), check.Options{Lookup: localLookup(t.TempDir(), root)})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestConvertFixture(t *testing.T) {
	t.Parallel()
	root := symfs(t)
	res := analyze(t, "cshared-fp.data", root)
	p, err := Convert(res, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.CheckValid(); err != nil {
		t.Fatal(err)
	}
	if got := sampleTypes(p); got != "samples/count cpu-clock/nanoseconds" || p.DefaultSampleType != "cpu-clock" {
		t.Errorf("sample types %q default %q", got, p.DefaultSampleType)
	}
	// Dense 1-based IDs.
	for i, m := range p.Mapping {
		if m.ID != uint64(i+1) {
			t.Errorf("mapping %d has ID %d", i, m.ID)
		}
	}
	for i, l := range p.Location {
		if l.ID != uint64(i+1) {
			t.Errorf("location %d has ID %d", i, l.ID)
		}
		if l.Mapping == nil || l.Address < l.Mapping.Start || l.Address >= l.Mapping.Limit {
			t.Errorf("location %d at %#x outside its mapping %+v", l.ID, l.Address, l.Mapping)
		}
	}
	seen := map[profile.Function]bool{}
	for i, f := range p.Function {
		if f.ID != uint64(i+1) {
			t.Errorf("function %d has ID %d", i, f.ID)
		}
		k := *f
		k.ID = 0
		if seen[k] {
			t.Errorf("function %q twice", f.Name)
		}
		seen[k] = true
	}
	// Totals: 301 samples of 1001001 ns (the .stats file and perf script).
	var n, period int64
	for _, s := range p.Sample {
		n += s.Value[0]
		period += s.Value[1]
		if s.Label["comm"][0] != "cshared" || s.NumLabel["pid"][0] != 7486 || s.NumLabel["tid"][0] != 7486 {
			t.Errorf("labels %v %v", s.Label, s.NumLabel)
		}
		if len(s.Label["trusted"]) != 1 {
			t.Errorf("no trusted label: %v", s.Label)
		}
	}
	if n != 301 || period != 301*1001001 {
		t.Errorf("%d samples, period %d", n, period)
	}
	// The main binary first, with its build-id and all it has.
	m := p.Mapping[0]
	if m.File != recordedBin+"/cshared" || m.BuildID != "ad8b5c79a49d3fe78a633a20251339808292bf79" ||
		!m.HasFunctions || !m.HasFilenames || !m.HasLineNumbers {
		t.Errorf("main mapping %+v", m)
	}
	for _, m := range p.Mapping {
		d := dsoByPath(res, strings.TrimSuffix(strings.SplitN(m.File, " [", 2)[0], ""))
		if d == nil {
			t.Errorf("mapping %q names no DSO", m.File)
			continue
		}
		if len(d.BuildID) > 0 && m.BuildID != d.BuildID.String() {
			t.Errorf("%s: build-id %q, recorded %s", m.File, m.BuildID, d.BuildID)
		}
		if len(d.BuildID) == 0 && d.Verdict == check.Unverified && m.BuildID != d.FoundBuildID.String() {
			t.Errorf("%s (unverified): build-id %q, the file's %s", m.File, m.BuildID, d.FoundBuildID)
		}
		if d.Verdict == check.Replaced && m.BuildID != "" && m.BuildID == d.FoundBuildID.String() {
			t.Errorf("%s (replaced): carries the replacement's build-id", m.File)
		}
		if !d.Trusted() {
			if m.File != d.Path+" ["+d.Verdict.String()+"]" || m.HasFunctions || m.HasFilenames || m.HasLineNumbers || m.HasInlineFrames {
				t.Errorf("untrusted mapping %+v", m)
			}
		}
		if m.HasInlineFrames && !m.HasFunctions {
			t.Errorf("%s: inline frames without functions", m.File)
		}
	}
	for _, l := range p.Location {
		if strings.Contains(l.Mapping.File, " [") && !isLabel(l) {
			t.Errorf("location %d of untrusted %s is named %s", l.ID, l.Mapping.File, l.Line[0].Function.Name)
		}
		for _, ln := range l.Line {
			if ln.Function.Name == "" || ln.Function.SystemName == "" {
				t.Errorf("location %d: function %+v", l.ID, ln.Function)
			}
		}
	}
}

func dsoByPath(res *check.Result, path string) *check.DSO {
	for _, d := range res.DSOs {
		if d.Path == path {
			return d
		}
	}
	return nil
}

func sampleTypes(p *profile.Profile) string {
	var s []string
	for _, st := range p.SampleType {
		s = append(s, st.Type+"/"+st.Unit)
	}
	return strings.Join(s, " ")
}

// Two events: two pairs of sample types, each with its own unit, and each
// sample's values in its event's pair.
func TestConvertTwoEvents(t *testing.T) {
	t.Parallel()
	res := analyze(t, "twoevents.data", symfs(t))
	p, err := Convert(res, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := "cpu-clock_samples/count cpu-clock/nanoseconds page-faults_samples/count page-faults/count"
	if got := sampleTypes(p); got != want {
		t.Errorf("sample types %q, want %q", got, want)
	}
	var n [4]int64
	for _, s := range p.Sample {
		for i, v := range s.Value {
			n[i] += v
		}
	}
	// 202 cpu-clock and 7 page-faults samples (twoevents.data.stats).
	if n[0] != 202 || n[2] != 7 || n[1] != 202*1001001 {
		t.Errorf("totals %v", n)
	}
}

func goTool(t *testing.T) string {
	t.Helper()
	g := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(g); err != nil {
		t.Skip("no go command to run go tool pprof")
	}
	return g
}

// pprofTop runs `go tool pprof -top` on the profile file and returns the
// flat percentage per function.
func pprofTop(t *testing.T, file string) (map[string]float64, string) {
	t.Helper()
	cmd := exec.Command(goTool(t), "tool", "pprof", "-top", "-nodecount=1000", file)
	home := t.TempDir()
	// HOME stays: go tool pprof is built into $HOME/.cache/go-build.
	cmd.Env = append(os.Environ(), "PPROF_BINARY_PATH="+home, "PPROF_TMPDIR="+home)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("go tool pprof -top: %v\n%s", err, errb.String())
	}
	re := regexp.MustCompile(`^\s*\S+\s+([0-9.]+)%\s+[0-9.]+%\s+\S+\s+[0-9.]+%\s+(.+?)\s*$`)
	flat := map[string]float64{}
	for _, l := range strings.Split(out.String(), "\n") {
		if m := re.FindStringSubmatch(l); m != nil {
			v, _ := strconv.ParseFloat(m[1], 64)
			flat[m[2]] += v
		}
	}
	return flat, out.String() + errb.String()
}

// go tool pprof reads the written profile, and its top functions are
// perf report's: for the clean fixture, every user-space function perf
// report --no-children gives at least 1% has the same flat percentage, to
// the rounding of both (two decimals each).
func TestGoToolPprofReadsIt(t *testing.T) {
	t.Parallel()
	root := symfs(t)
	res := analyze(t, "cshared-fp.data", root)
	file := filepath.Join(t.TempDir(), "out.pb.gz")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Write(f, res, Options{}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	flat, raw := pprofTop(t, file)
	if len(flat) == 0 {
		t.Fatalf("no function in go tool pprof -top:\n%s", raw)
	}
	// perf report --no-children --sort sym on cshared-fp.data (perf 6.1,
	// also checked live in cmd/perfcheck's tests): lib_mix 51.50%,
	// main_spin 30.56%, main_sort_step 12.29%, lib_hash_block 4.32%.
	for name, pct := range map[string]float64{"lib_mix": 51.50, "main_spin": 30.56, "main_sort_step": 12.29, "lib_hash_block": 4.32} {
		if math.Abs(flat[name]-pct) > 0.011 {
			t.Errorf("%s: pprof flat %.2f%%, perf report %.2f%%\n%s", name, flat[name], pct, raw)
		}
	}
	if _, err := exec.LookPath("perf"); err == nil {
		cmd := exec.Command("perf", "report", "--no-children", "--stdio", "-g", "none", "--sort", "sym", "--symfs", root,
			"-i", filepath.Join(fixtureDir, "cshared-fp.data"))
		cmd.Env = append(os.Environ(), "LC_ALL=C", "HOME="+t.TempDir())
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("perf report: %v", err)
		}
		re := regexp.MustCompile(`^\s+([0-9.]+)%\s+\[\.\]\s+(\S+)`)
		n := 0
		for _, l := range strings.Split(string(out), "\n") {
			if m := re.FindStringSubmatch(l); m != nil {
				pct, _ := strconv.ParseFloat(m[1], 64)
				if pct < 1 {
					continue
				}
				n++
				if math.Abs(flat[m[2]]-pct) > 0.011 {
					t.Errorf("%s: pprof flat %.2f%%, perf report %.2f%%", m[2], flat[m[2]], pct)
				}
			}
		}
		if n == 0 {
			t.Errorf("perf report shows nothing to compare:\n%s", out)
		}
	}
}

func TestPeriodUnit(t *testing.T) {
	t.Parallel()
	res := analyze(t, "twoevents.data", symfs(t))
	if len(res.EventInfo) != 2 {
		t.Fatalf("%d events", len(res.EventInfo))
	}
	if u := PeriodUnit(&res.EventInfo[0].Attr); u != "nanoseconds" {
		t.Errorf("cpu-clock: %s", u)
	}
	if u := PeriodUnit(&res.EventInfo[1].Attr); u != "count" {
		t.Errorf("page-faults: %s", u)
	}
}

// The address layout is what pprof's symbolizers expect: with the names
// removed from the profile and the mappings pointed at the binaries,
// go tool pprof symbolizes the locations itself (cmd/pprof's objfile:
// address - Start + the text segment's address) and finds the names
// perfcheck gave.
func TestLayoutResymbolizes(t *testing.T) {
	t.Parallel()
	root := symfs(t)
	res := analyze(t, "cshared-fp.data", root)
	p, err := Convert(res, Options{})
	if err != nil {
		t.Fatal(err)
	}
	stripped := 0
	for _, m := range p.Mapping {
		if !strings.HasPrefix(m.File, recordedBin) {
			continue
		}
		m.File = filepath.Join(root, m.File)
		m.HasFunctions, m.HasFilenames, m.HasLineNumbers, m.HasInlineFrames = false, false, false, false
		for _, l := range p.Location {
			if l.Mapping == m {
				l.Line = nil
				stripped++
			}
		}
	}
	if stripped == 0 {
		t.Fatal("no location of the fixture's programs")
	}
	file := filepath.Join(t.TempDir(), "stripped.pb.gz")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Write(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	flat, raw := pprofTop(t, file)
	for name, pct := range map[string]float64{"lib_mix": 51.50, "main_spin": 30.56, "main_sort_step": 12.29, "lib_hash_block": 4.32} {
		if math.Abs(flat[name]-pct) > 0.011 {
			t.Errorf("%s: %.2f%% after pprof's own symbolization, want %.2f%%\n%s", name, flat[name], pct, raw)
		}
	}
}

func BenchmarkConvert(b *testing.B) {
	res, err := check.Analyze(context.Background(), check.Path(filepath.Join(fixtureDir, "cshared-fp.data")), check.Options{Lookup: localLookup(b.TempDir(), "")})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Convert(res, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// WriteProfile's output (gzip by klauspost/compress) is a gzipped profile
// that profile.Parse reads back to exactly the profile written: the same
// protobuf bytes once re-encoded.
func TestWriteProfileRoundTrip(t *testing.T) {
	t.Parallel()
	res := analyze(t, "cshared-fp.data", symfs(t))
	p, err := Convert(res, Options{Comments: []string{"round trip"}})
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	if err := WriteProfile(&gz, p); err != nil {
		t.Fatal(err)
	}
	if b := gz.Bytes(); len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Fatalf("output does not start with the gzip magic: % x", b[:min(len(b), 2)])
	}
	back, err := profile.Parse(&gz)
	if err != nil {
		t.Fatal(err)
	}
	var want, got bytes.Buffer
	if err := p.WriteUncompressed(&want); err != nil {
		t.Fatal(err)
	}
	if err := back.WriteUncompressed(&got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(want.Bytes(), got.Bytes()) {
		t.Errorf("profile read back differs: %d protobuf bytes written, %d after reading back", want.Len(), got.Len())
	}
	if len(back.Sample) != len(p.Sample) || len(back.Location) != len(p.Location) || len(back.Sample) == 0 {
		t.Errorf("read back %d samples, %d locations; wrote %d, %d", len(back.Sample), len(back.Location), len(p.Sample), len(p.Location))
	}
}

// BenchmarkWriteLarge writes (gzipped, to nowhere) the profile of
// bench/out/large.data (bench/record-large.sh; $PERFCHECK_BENCH_DATA
// names another recording): what `perfcheck pprof` does after the check.
// Its bytes per op are what Write holds and drops, since the Result's
// aggregates and stacks are built before the loop.
func BenchmarkWriteLarge(b *testing.B) {
	name := os.Getenv("PERFCHECK_BENCH_DATA")
	if name == "" {
		name = filepath.Join("..", "bench", "out", "large.data")
	}
	if _, err := os.Stat(name); err != nil {
		b.Skipf("no large recording (make it with bench/record-large.sh): %v", err)
	}
	res, err := check.Analyze(context.Background(), check.Path(name), check.Options{Lookup: localLookup("-", "")})
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range res.Stacks[:1] {
		s.Locations()
	}
	res.Aggregates()
	b.ReportAllocs()
	for b.Loop() {
		sum, err := Write(io.Discard, res, Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(sum.Samples), "pprof-samples")
	}
}

// localLookup looks binaries up in the perf cache dir (none for "-"), the
// default debug directory (under symfs, as perf looks there for the
// system libraries' debug files) and at the recorded path under symfs: no
// debuginfod, so that this machine's ~/.debug and servers cannot change a
// verdict.
func localLookup(dir, symfs string) buildidcache.Options {
	return buildidcache.Options{BuildIDDir: dir, SymFS: symfs, DebuginfodURLs: []string{}}
}
