package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// The shared corpus (see its README) and the fixtures recorded here with
// real perf, with what perf 6.1 printed for each.
var (
	corpusDir = fixtures.CorpusDir()
	perf61Dir = corpusDir + "/perf-6.1"
)

const fixturesDir = "../../testdata/perf"

func init() {
	// Another test file of this package may define -update too.
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite the golden files under testdata/")
	}
}

func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// runCmd runs perfcheck in-process and returns its stdout, stderr and exit
// code.
func runCmd(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return ckRunIn(t, nil, args...)
}

// vdsoTempName matches the name perf gives the vDSO when it lists the DSOs
// that samples hit (recordings without a build-id table): a temporary copy
// of the vDSO of perf's own process, /tmp/perf-vdso.so-XXXXXX, made with
// mkstemp when the file is read (machine__findnew_vdso and get_file in
// tools/perf/util/vdso.c). The six characters are random on every run,
// so no reader can print the same line; perfcheck prints "[vdso]".
var vdsoTempName = regexp.MustCompile(`(?m)^( {40}) /tmp/perf-vdso\.so-[A-Za-z0-9]{6}$`)

// perfQuirks lists the files whose perf output cannot be reproduced as
// is, and how the expectation is adjusted. Each adjustment must change
// the expectation (so a stale entry fails), and everything else must
// still match byte for byte. docs/commands.md explains them.
var perfQuirks = map[string]struct {
	buildids func(string) string
	reason   string
}{
	"perf.data.piped.hw_and_sw-3.4": {vdsoLine, "vDSO named after perf's temporary copy"},
	"perf.data.piped.target-3.4":    {vdsoLine, "vDSO named after perf's temporary copy"},
	"perf.data.piped.target-3.8":    {vdsoLine, "vDSO named after perf's temporary copy"},
}

func vdsoLine(s string) string { return vdsoTempName.ReplaceAllString(s, "$1 [vdso]") }

// conformanceCase is one recording and where perf's outputs for it are.
type conformanceCase struct {
	name, data, stats, buildids string
}

func corpusCases(t *testing.T) []conformanceCase {
	fixtures.Corpus(t, "perf-6.1")
	m, err := filepath.Glob(filepath.Join(perf61Dir, "*.stats"))
	if err != nil || len(m) == 0 {
		t.Fatalf("no perf 6.1 outputs in %s (%v)", perf61Dir, err)
	}
	var cs []conformanceCase
	for _, s := range m {
		name := strings.TrimSuffix(filepath.Base(s), ".stats")
		cs = append(cs, conformanceCase{name: name, data: filepath.Join(corpusDir, name), stats: s,
			buildids: filepath.Join(perf61Dir, name+".buildid-list")})
	}
	return cs
}

func fixtureCases(t *testing.T) []conformanceCase {
	if _, err := os.Stat(fixturesDir); err != nil {
		t.Fatalf("%s is missing: %v", fixturesDir, err)
	}
	m, err := filepath.Glob(filepath.Join(fixturesDir, "*.data"))
	if err != nil {
		t.Fatal(err)
	}
	if len(m) == 0 {
		t.Fatalf("no recordings match %s/*.data: the fixtures are gone", fixturesDir)
	}
	var cs []conformanceCase
	for _, d := range m {
		cs = append(cs, conformanceCase{name: filepath.Base(d), data: d, stats: d + ".stats", buildids: d + ".buildid-list"})
	}
	return cs
}

// checkConformance compares perfcheck stats and buildids with what perf
// printed. Files perf could not read (an empty .stats: perf 6.1 fails on
// the corrupted corpus file and on compressed pipe streams, "Couldn't
// decompress data") are read by perfcheck instead and must either yield
// records or fail with an error that gives the byte offset.
func checkConformance(t *testing.T, c conformanceCase) {
	wantStats, err := os.ReadFile(c.stats)
	if err != nil {
		t.Fatal(err)
	}
	wantBIDs, err := os.ReadFile(c.buildids)
	if err != nil {
		t.Fatal(err)
	}
	out, errs, code := runCmd(t, "stats", c.data)
	if len(wantStats) == 0 {
		if code == exitOK {
			if !strings.Contains(out, "SAMPLE events:") {
				t.Errorf("perf could not read %s; perfcheck read it but found no samples:\n%s", c.name, out)
			}
		} else if !strings.Contains(errs, "offset ") {
			t.Errorf("perf could not read %s; perfcheck's error does not give the offset: %s", c.name, errs)
		}
		return
	}
	if code != exitOK {
		t.Fatalf("stats: exit %d: %s", code, errs)
	}
	if out != string(wantStats) {
		t.Errorf("stats differ from perf report --stats:\n--- perfcheck\n%s--- perf\n%s", out, wantStats)
	}

	out, errs, code = runCmd(t, "buildids", c.data)
	if code != exitOK {
		t.Fatalf("buildids: exit %d: %s", code, errs)
	}
	want := string(wantBIDs)
	if q, ok := perfQuirks[c.name]; ok && q.buildids != nil {
		adj := q.buildids(want)
		if adj == want {
			t.Errorf("quirk %q no longer applies to perf's output: remove it from perfQuirks", q.reason)
		}
		want = adj
	}
	if out != want {
		t.Errorf("buildids differ from perf buildid-list:\n--- perfcheck\n%s--- perf\n%s", out, want)
	}
}

// TestConformanceCorpus: for every corpus file perf 6.1 reads, perfcheck
// stats and buildids print exactly what perf 6.1 printed.
func TestConformanceCorpus(t *testing.T) {
	t.Parallel()
	for _, c := range corpusCases(t) {
		t.Run(c.name, func(t *testing.T) { checkConformance(t, c) })
	}
}

// TestConformanceFixtures: the same for the recordings under
// testdata/perf, made here with perf 6.1 (record.sh).
func TestConformanceFixtures(t *testing.T) {
	t.Parallel()
	for _, c := range fixtureCases(t) {
		t.Run(c.name, func(t *testing.T) { checkConformance(t, c) })
	}
}

// TestStatsJSON checks that --json carries the same figures as the text.
func TestStatsJSON(t *testing.T) {
	t.Parallel()
	out, errs, code := runCmd(t, "stats", "--json", filepath.Join(fixturesDir, "twoevents.data"))
	if code != exitOK {
		t.Fatal(errs)
	}
	var s statsJSON
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatal(err)
	}
	var sum uint64
	for _, ty := range s.Types {
		sum += ty.Count
	}
	if s.Total == 0 || sum != s.Total || len(s.Events) != 2 {
		t.Errorf("total %d, sum of types %d, %d events", s.Total, sum, len(s.Events))
	}
	text, _, _ := runCmd(t, "stats", filepath.Join(fixturesDir, "twoevents.data"))
	for _, e := range s.Events {
		if !strings.Contains(text, e.Name+" stats:\n") {
			t.Errorf("event %q not in the text output", e.Name)
		}
	}
}

// TestBuildIDsJSON checks the JSON form against the text form, and the
// build-ids that perf record --buildid-mmap puts in MMAP2 records.
func TestBuildIDsJSON(t *testing.T) {
	t.Parallel()
	file := filepath.Join(fixturesDir, "buildid-mmap.data")
	out, errs, code := runCmd(t, "buildids", "--json", file)
	if code != exitOK {
		t.Fatal(errs)
	}
	var b buildIDsJSON
	if err := json.Unmarshal([]byte(out), &b); err != nil {
		t.Fatal(err)
	}
	if !b.FromSamples || len(b.DSOs) == 0 {
		t.Fatalf("%+v", b)
	}
	text, _, _ := runCmd(t, "buildids", file)
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) != len(b.DSOs) {
		t.Fatalf("%d text lines, %d JSON entries", len(lines), len(b.DSOs))
	}
	for i, d := range b.DSOs {
		if strings.Fields(lines[i])[0] != d.BuildID || d.Source != "mmap2" || d.Machine != "host" {
			t.Errorf("entry %d: %+v vs %q", i, d, lines[i])
		}
	}
}

// TestInfoGolden compares perfcheck info, text and JSON, with the golden
// files under testdata/info (go test -run InfoGolden -update rewrites
// them).
func TestInfoGolden(t *testing.T) {
	t.Parallel()
	cases := []string{
		filepath.Join(fixturesDir, "twoevents.data"),
		filepath.Join(fixturesDir, "pipe.data"),
		filepath.Join(fixturesDir, "zstd.data"),
		filepath.Join(fixturesDir, "threads.data"),
		filepath.Join(corpusDir, "perf.data.hybrid_topology"),
		filepath.Join(corpusDir, "perf.data.armv7.perf_3.14-3.8"),
		filepath.Join(corpusDir, "modern", "sleep.data"),
		filepath.Join(corpusDir, "modern", "fibo.compressed2.pipe.data"),
	}
	for _, file := range cases {
		t.Run(filepath.Base(file), func(t *testing.T) {
			if rel, ok := strings.CutPrefix(file, corpusDir+"/"); ok {
				fixtures.Corpus(t, rel)
			}
			for _, form := range []string{"txt", "json"} {
				args := []string{"info", file}
				if form == "json" {
					args = []string{"info", "--json", file}
				}
				out, errs, code := runCmd(t, args...)
				if code != exitOK {
					t.Fatalf("exit %d: %s", code, errs)
				}
				golden := filepath.Join("testdata", "info", filepath.Base(file)+"."+form)
				if updating() {
					if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run with -update to create it)", err)
				}
				if out != string(want) {
					t.Errorf("%s differs from %s:\n%s", form, golden, out)
				}
			}
		})
	}
}

// TestInfoNotClosedCleanly: a copy of a real recording cut after its
// records, with the header's data size set to 0, as perf leaves a file
// when it is killed before it writes the features and rewrites the
// header, is read to its end with a warning. (A finished file whose data
// size alone was zeroed reads as perfdata's TestZeroedDataSize shows.)
func TestInfoNotClosedCleanly(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(fixturesDir, "twoevents.data"))
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	b = b[:le.Uint64(b[40:])+le.Uint64(b[48:])] // the header, attrs and records
	// perf_file_header.data.size
	for i := 48; i < 56; i++ {
		b[i] = 0
	}
	file := filepath.Join(t.TempDir(), "killed.data")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code := runCmd(t, "info", "--json", file)
	var in infoJSON
	if err := json.Unmarshal([]byte(out), &in); err != nil {
		t.Fatalf("%v: %s %s", err, out, errs)
	}
	if !in.NotClosedCleanly {
		t.Errorf("not flagged as not closed cleanly (exit %d): %s", code, out)
	}
	text, _, _ := runCmd(t, "info", file)
	if !strings.Contains(text, "did not close the file cleanly") {
		t.Errorf("no warning in:\n%s", text)
	}
}

// TestCommandsUsage: no file, two files, a missing file and --json after
// the file name.
func TestCommandsUsage(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"info", "stats", "buildids"} {
		if _, _, code := runCmd(t, cmd); code != exitError {
			t.Errorf("%s without a file: exit %d", cmd, code)
		}
		if _, _, code := runCmd(t, cmd, "a", "b"); code != exitError {
			t.Errorf("%s with two files: exit %d", cmd, code)
		}
		_, errs, code := runCmd(t, cmd, filepath.Join(t.TempDir(), "missing.data"))
		if code != exitError || !strings.Contains(errs, "missing.data") {
			t.Errorf("%s on a missing file: exit %d, %q", cmd, code, errs)
		}
		out, errs, code := runCmd(t, cmd, filepath.Join(fixturesDir, "pipe.data"), "--json")
		if code != exitOK || !json.Valid([]byte(out)) {
			t.Errorf("%s FILE --json: exit %d, %s", cmd, code, errs)
		}
	}
}

// TestStdinPipe: "-" reads a pipe-mode stream from standard input, as in
// perf record -o - | perfcheck stats -, with the same output as the file.
func TestStdinPipe(t *testing.T) {
	t.Parallel()
	file := filepath.Join(fixturesDir, "pipe.data")
	for _, c := range []struct{ cmd, want string }{{"stats", file + ".stats"}, {"buildids", file + ".buildid-list"}} {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		out, errs, code := ckRunIn(t, f, c.cmd, "-")
		f.Close()
		want, err := os.ReadFile(c.want)
		if err != nil {
			t.Fatal(err)
		}
		if code != exitOK || out != string(want) {
			t.Errorf("%s -: exit %d %s\n%s", c.cmd, code, errs, out)
		}
	}
	_, errs, code := ckRunIn(t, strings.NewReader("PERFILE2"), "info", "-")
	if code != exitError || !strings.Contains(errs, "standard input") {
		t.Errorf("short stream: exit %d %q", code, errs)
	}
}

// TestModernCorpus: perf 6.1 cannot read the perf 6.16 files, so there is
// no output to compare with; perfcheck must read them through, and
// `sleep 1` at perf's default frequency yields a handful of samples, as
// the corpus README says.
func TestModernCorpus(t *testing.T) {
	t.Parallel()
	m, _ := filepath.Glob(filepath.Join(fixtures.Corpus(t, "modern"), "*.data"))
	if len(m) == 0 {
		t.Skipf("no recordings in %s/modern", corpusDir)
	}
	for _, file := range m {
		t.Run(filepath.Base(file), func(t *testing.T) {
			out, errs, code := runCmd(t, "stats", "--json", file)
			if code != exitOK {
				t.Fatalf("stats: exit %d: %s", code, errs)
			}
			var s statsJSON
			if err := json.Unmarshal([]byte(out), &s); err != nil {
				t.Fatal(err)
			}
			var samples uint64
			for _, e := range s.Events {
				samples += e.Samples
			}
			if samples == 0 || strings.HasPrefix(filepath.Base(file), "sleep") && samples > 100 {
				t.Errorf("%d samples", samples)
			}
			if _, errs, code := runCmd(t, "buildids", file); code != exitOK {
				t.Errorf("buildids: exit %d: %s", code, errs)
			}
		})
	}
}

// TestBuildIDsWithHitsAgainstPerf runs perf buildid-list -H (perf 6.1) on
// every recording it reads and compares perfcheck buildids -H with it.
// perf's vDSO temporary name is replaced as in perfQuirks.
func TestBuildIDsWithHitsAgainstPerf(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs perf on every recording; skipped with -short")
	}
	perf, err := exec.LookPath("perf")
	if err != nil {
		t.Skip("perf is not installed (make test installs linux-perf)")
	}
	var cs []conformanceCase
	if _, err := os.Stat(perf61Dir); err == nil {
		cs = corpusCases(t)
	}
	cs = append(cs, fixtureCases(t)...)
	for _, c := range cs {
		if st, err := os.Stat(c.stats); err != nil || st.Size() == 0 {
			continue // perf cannot read it
		}
		t.Run(c.name, func(t *testing.T) {
			var stdout bytes.Buffer
			cmd := exec.Command(perf, "buildid-list", "-H", "-i", c.data)
			cmd.Stdout = &stdout // perf warns about missing kallsyms on stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("perf: %v", err)
			}
			want := vdsoLine(stdout.String())
			out, errs, code := runCmd(t, "buildids", "-H", c.data)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, errs)
			}
			if out != want {
				t.Errorf("buildids -H differs from perf buildid-list -H:\n--- perfcheck\n%s--- perf\n%s", out, want)
			}
		})
	}
}

// TestInfoHostileFeature: a copy of a real recording whose HOSTNAME
// section claims an offset far past the end of the file. info reports that
// feature as unreadable, with the offset, and shows everything else.
func TestInfoHostileFeature(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(fixturesDir, "twoevents.data"))
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	table := le.Uint64(b[40:]) + le.Uint64(b[48:]) // data.offset + data.size
	// The table has one {offset, size} per feature bit in order: BUILD_ID
	// (bit 2) first, then HOSTNAME (bit 3).
	if b[72]&(1<<2) == 0 || b[72]&(1<<3) == 0 {
		t.Fatal("fixture lacks BUILD_ID or HOSTNAME")
	}
	le.PutUint64(b[table+16:], 1<<40)
	file := filepath.Join(t.TempDir(), "hostile.data")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code := runCmd(t, "info", file)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "HOSTNAME feature unreadable") || !strings.Contains(out, "offset 1099511627776") {
		t.Errorf("no warning with the offset:\n%s", out)
	}
	if strings.Contains(out, "host:") || !strings.Contains(out, "kernel:") || !strings.Contains(out, "samples:     209") {
		t.Errorf("the other features and the records are not all shown:\n%s", out)
	}
}

// TestAgainstFreshRecordings records with the installed perf now (file and
// pipe mode, system-wide with --buildid-mmap, context switches and
// namespaces, per-thread counts, user-only events) and compares stats,
// buildids and buildids -H with what the same perf prints for them. A
// recording perf itself cannot read back is skipped.
func TestAgainstFreshRecordings(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("records with perf; skipped with -short")
	}
	perf, err := exec.LookPath("perf")
	if err != nil {
		t.Skip("perf is not installed (make test installs linux-perf)")
	}
	bin, err := filepath.Abs(filepath.Join(fixturesDir, "bin"))
	if err != nil {
		t.Fatal(err)
	}
	fork := filepath.Join(bin, "forkparent")
	if _, err := os.Stat(fork); err != nil {
		t.Fatalf("fixture program missing: %v", err)
	}
	cases := []struct {
		name string
		pipe bool
		args []string
	}{
		{"callgraph", false, []string{"-e", "cpu-clock", "-g", "--", fork}},
		{"callgraph-pipe", true, []string{"-e", "cpu-clock", "-g", "--", fork}},
		{"system-buildid-mmap", false, []string{"-e", "cpu-clock", "--buildid-mmap", "-a", "--", "sleep", "0.2"}},
		{"system-pipe", true, []string{"-e", "cpu-clock", "-a", "--", "sleep", "0.2"}},
		{"switch-namespaces", false, []string{"--switch-events", "--namespaces", "-e", "cpu-clock", "--", fork}},
		{"per-thread", false, []string{"-s", "-e", "cpu-clock", "--", fork}},
		{"user-events-pipe", true, []string{"-e", "cpu-clock:u", "-e", "task-clock", "--", fork}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// The recordings overlap; each has its own directory.
			t.Parallel()
			dir := t.TempDir()
			// perf record fills $HOME/.debug with every binary it saw:
			// point HOME at the test's directory so the user's build-id
			// cache is untouched.
			perfEnv := fixtures.PerfEnv(dir)
			file := filepath.Join(dir, c.name+".data")
			args := append([]string{"record", "-q", "-o", file}, c.args...)
			if c.pipe {
				args[3] = "-"
			}
			record := func() {
				t.Helper()
				rec := exec.Command(perf, args...)
				rec.Env = perfEnv
				var stderr bytes.Buffer
				rec.Stderr = &stderr
				if c.pipe {
					f, err := os.Create(file)
					if err != nil {
						t.Fatal(err)
					}
					defer f.Close()
					rec.Stdout = f
				}
				if err := rec.Run(); err != nil {
					// Not our failure: perf cannot record here
					// (permissions, no such event).
					t.Skipf("perf record %v: %v\n%s", c.args, err, stderr.String())
				}
			}
			// perfOut is perf's output; perf's verdict is its output,
			// whatever its exit status, unless perf was killed.
			perfOut := func(args ...string) (string, error) {
				var stdout, stderr bytes.Buffer
				cmd := exec.Command(perf, args...)
				cmd.Env = perfEnv
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				err := cmd.Run()
				if err != nil && fixtures.PerfDied(err) {
					return "", fmt.Errorf("perf %v: %w: %s", args, err, stderr.String())
				}
				return vdsoLine(stdout.String()), nil
			}
			// perf 6.1's buildid-list dies now and then on a recording
			// (an assertion in its build-id code, stack smashing) and
			// then has printed nothing, no answer to compare with: the
			// recording is made again until perf answers.
			var wantStats, buildids, hits string
			for attempt := 1; ; attempt++ {
				record()
				wantStats, _ = perfOut("report", "--stats", "-i", file)
				if wantStats == "" {
					t.Skip("perf cannot read its own recording back")
				}
				var err, herr error
				buildids, err = perfOut("buildid-list", "-i", file)
				hits, herr = perfOut("buildid-list", "-H", "-i", file)
				if err = errors.Join(err, herr); err == nil {
					break
				}
				if attempt == fixtures.PerfAttempts {
					t.Skipf("perf died on %d recordings: %v", attempt, err)
				}
				t.Logf("recording again: %v", err)
			}
			for _, cmp := range []struct {
				ours []string
				want string
			}{
				{[]string{"stats", file}, wantStats},
				{[]string{"buildids", file}, buildids},
				{[]string{"buildids", "-H", file}, hits},
			} {
				out, errs, code := runCmd(t, cmp.ours...)
				if code != exitOK {
					t.Errorf("%v: exit %d: %s", cmp.ours, code, errs)
					continue
				}
				if out != cmp.want {
					t.Errorf("%v differs from perf:\n--- perfcheck\n%s--- perf\n%s", cmp.ours, out, cmp.want)
				}
			}
		})
	}
}
