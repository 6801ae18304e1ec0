package main

import (
	"bufio"
	"debug/elf"
	"encoding/json"
	"io"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// The proof of docs/verdicts.md's promise (§7, §9), command by command: each
// test records a small program with the real perf, changes the world as a
// deploy does (rebuild at the same path, delete, replace a library, exec a
// rebuilt child), and then reads the outputs a user reads — check (text
// and --json), script (text and --json), top (text and --json), pprof read
// back by `go tool pprof -top` and `-raw` (script --inline, top --sort
// total, pprof --trust-paths and -traces are read in realcmd_test.go's C
// rebuild) — and asserts:
//   - the verdict of each binary, the exit code (with and without
//     --strict), the advice the text check gives;
//   - the sample counts (all, trusted, untrusted leaf, untrusted anywhere),
//     each equal to what perf script shows for the same recording: the
//     samples with a frame (or the leaf) in a binary that is no longer
//     the one that ran — an oracle that is perf's, not perfcheck's;
//   - top's group of the untrusted binary holds perf script's samples, and
//     the profile keeps the binary's recorded build-id on its mapping;
//   - that no name existing only in the replacement binary appears in any
//     of those outputs, while `script --trust-paths` (which names frames
//     from the file at the path, marked untrusted) shows one: the recorded
//     offsets do carry replacement names, so their absence means something;
//   - before the change (every binary the program ran is the one on disk),
//     that go tool pprof's top functions and perfcheck top agree with
//     perf report --no-children on the same file.

// proofCase is what one state of the world must look like.
type proofCase struct {
	data      string
	flags     []string          // lookup flags after the hermetic ones (they win)
	verdicts  map[string]string // binary -> verdict
	sources   map[string]string // binary -> where it must be found
	untrusted []string          // binaries whose frames are untrusted
	forbidden []string          // names no output may show
	named     []string          // names top and go tool pprof -top must show
	sentinel  bool              // script --trust-paths must show a forbidden name
	advice    []string          // what the text check must tell the user to do
}

// perfCounts are the sample counts perf script gives for untrusted paths.
type perfCounts struct{ samples, leaf, any uint64 }

var (
	proofHead  = regexp.MustCompile(`^\s*(\d+)/\d+\s*$`)
	proofFrame = regexp.MustCompile(`^\s+[0-9a-f]+ (?:.* )?\(([^()]*)\)$`)
)

// pidCounts is perfCounts for one process.
type pidCounts struct {
	pid uint64
	perfCounts
}

// perfScriptCounts counts the samples of data as perf script prints them,
// and among them those with the leaf, or any frame, in one of the paths.
func (w *realWorld) perfScriptCounts(data string, paths []string) perfCounts {
	w.t.Helper()
	var c perfCounts
	for _, p := range w.perfScriptByPID(data, paths) {
		c.samples += p.samples
		c.leaf += p.leaf
		c.any += p.any
	}
	return c
}

// perfScriptByPID is perfScriptCounts per process, in the order the
// processes' first samples come (-F pid,tid,ip,dso: a pid/tid line, then
// the callchain leaf first, each frame with its DSO).
func (w *realWorld) perfScriptByPID(data string, paths []string) []*pidCounts {
	w.t.Helper()
	out := w.run("perf", "script", "-i", data, "-F", "pid,tid,ip,dso", "--no-inline")
	var procs []*pidCounts
	var cur *pidCounts
	leaf, any, first := false, false, false
	flush := func() {
		if cur != nil {
			cur.samples++
			if leaf {
				cur.leaf++
			}
			if any {
				cur.any++
			}
		}
		cur, leaf, any = nil, false, false
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if m := proofHead.FindStringSubmatch(l); m != nil {
			flush()
			pid, _ := strconv.ParseUint(m[1], 10, 64)
			for _, p := range procs {
				if p.pid == pid {
					cur = p
				}
			}
			if cur == nil {
				cur = &pidCounts{pid: pid}
				procs = append(procs, cur)
			}
			first = true
			continue
		}
		if m := proofFrame.FindStringSubmatch(l); m != nil && cur != nil {
			if slices.Contains(paths, m[1]) {
				any = true
				leaf = leaf || first
			}
			first = false
			continue
		}
		if strings.TrimSpace(l) != "" {
			w.t.Fatalf("perf script printed a line the test does not know: %q", l)
		}
	}
	flush()
	if len(procs) == 0 {
		w.t.Fatalf("perf script shows no sample in %s", data)
	}
	return procs
}

// pcOut runs perfcheck in-process with the hermetic lookup flags and the
// case's own after them, and returns stdout, stderr and the exit code.
func (w *realWorld) pcOut(c proofCase, args ...string) (string, string, int) {
	w.t.Helper()
	return w.pcOutIn(nil, c, args...)
}

// pcOutIn is pcOut with stdin as the standard input ("-").
func (w *realWorld) pcOutIn(stdin io.Reader, c proofCase, args ...string) (string, string, int) {
	w.t.Helper()
	full := append([]string{args[0]}, ckHermetic(w.t)...)
	full = append(append(full, c.flags...), args[1:]...)
	out, errb, code := ckRunIn(w.t, stdin, full...)
	if code == exitError {
		w.t.Fatalf("perfcheck %s: exit 2: %s", strings.Join(full, " "), errb)
	}
	return out, errb, code
}

// prove checks one state of the world against c (see the file comment)
// and returns the check's JSON report.
func (w *realWorld) prove(c proofCase) *ckReport {
	t := w.t
	t.Helper()
	out, _, code := w.pcOut(c, "check", "--json", c.data)
	r := ckParseReport(t, out)
	for path, want := range c.verdicts {
		if got := r.verdict(path); got != want {
			t.Errorf("%s: verdict %q, want %q", path, got, want)
		}
	}
	for path, want := range c.sources {
		for _, d := range r.DSOs {
			if d.Path == path && d.Source != want {
				t.Errorf("%s: found by %q, want %q", path, d.Source, want)
			}
		}
	}
	wantCode := exitOK
	if len(c.untrusted) > 0 {
		wantCode = exitProblems
	}
	if code != wantCode || r.Failed != (wantCode == exitProblems) {
		t.Errorf("check exit %d (failed %v), want %d", code, r.Failed, wantCode)
	}

	// problems and strict_problems count the DSOs by verdict, and
	// --strict fails exactly when the latter is not 0.
	problems, strict := 0, 0
	for _, d := range r.DSOs {
		switch d.Verdict {
		case "mismatch", "missing", "replaced":
			problems++
			strict++
		case "unverified":
			strict++
		}
	}
	if r.Problems != problems || r.StrictProblems != strict {
		t.Errorf("problems %d, strict problems %d; the DSOs' verdicts give %d and %d", r.Problems, r.StrictProblems, problems, strict)
	}
	if _, _, sc := w.pcOut(c, "check", "--strict", c.data); (sc == exitProblems) != (strict > 0) {
		t.Errorf("check --strict: exit %d with %d strict problems", sc, strict)
	}

	p := w.perfScriptCounts(c.data, c.untrusted)
	if r.Samples != p.samples || r.UntrustedLeafSamples != p.leaf || r.UntrustedAnySamples != p.any ||
		r.TrustedSamples != p.samples-p.any {
		t.Errorf("samples %d, trusted %d, untrusted leaf %d, untrusted anywhere %d; perf script: %d samples, %d with the leaf and %d with a frame in %v",
			r.Samples, r.TrustedSamples, r.UntrustedLeafSamples, r.UntrustedAnySamples, p.samples, p.leaf, p.any, c.untrusted)
	}
	if len(c.untrusted) > 0 && p.any == 0 {
		t.Errorf("no sample touches %v: the case proves nothing", c.untrusted)
	}

	// A clean state is read by top and pprof, and compared with perf
	// report; a changed one by every command.
	cmds := [][]string{{"top", "--json", "-n", "0"}}
	if len(c.forbidden) > 0 {
		cmds = [][]string{{"check"}, {"script"}, {"script", "--json"}, {"top", "--json", "-n", "0"}}
	}
	pb := filepath.Join(t.TempDir(), "out.pb.gz")
	outputs := map[string]string{"check --json": out}
	for _, args := range append(cmds, []string{"top", "-n", "0"}, []string{"pprof", "-o", pb}) {
		o, e, _ := w.pcOut(c, append(args, c.data)...)
		outputs[strings.Join(args, " ")] = o + e
	}
	outputs["go tool pprof -top"] = goToolPprof(t, "-top", pb)
	if len(c.forbidden) > 0 {
		outputs["go tool pprof -raw"] = goToolPprof(t, "-raw", pb)
	}
	for what, o := range outputs {
		for _, bad := range c.forbidden {
			if i := strings.Index(o, bad); i >= 0 {
				t.Errorf("%s shows %q, which no binary that ran has here: …%s…", what, bad, o[max(0, i-200):min(len(o), i+100)])
			}
		}
	}
	for _, a := range c.advice {
		if !strings.Contains(outputs["check"], a) {
			t.Errorf("the check does not advise %q:\n%s", a, outputs["check"])
		}
	}
	for _, name := range c.named {
		for _, what := range []string{"top -n 0", "go tool pprof -top"} {
			if !strings.Contains(outputs[what], name) {
				t.Errorf("%s does not name %s:\n%.3000s", what, name, outputs[what])
			}
		}
	}
	for _, path := range c.untrusted {
		if v := r.verdict(path); v != "" && !strings.Contains(outputs["top -n 0"], "["+v+"] "+path) {
			t.Errorf("top does not group %s as [%s]:\n%.3000s", path, v, outputs["top -n 0"])
		}
		// script shows its frames as offsets marked with the verdict.
		if v := r.verdict(path); !regexp.MustCompile(`\[` + v + `\] ` + regexp.QuoteMeta(filepath.Base(path)) + `\+0x[0-9a-f]+ \(`).MatchString(outputs["script"]) {
			t.Errorf("script shows no frame of %s as [%s] %s+0xOFFSET (dso):\n%.3000s", path, v, filepath.Base(path), outputs["script"])
		}
		// The recorded build-id stays on the unnamed mapping, so that
		// pprof can symbolize it later from the binary that ran.
		for _, d := range r.DSOs {
			if d.Path == path && d.BuildID != "" && !strings.Contains(outputs["go tool pprof -raw"], d.BuildID) {
				t.Errorf("the recorded build-id %s of %s is not on its pprof mapping:\n%.3000s", d.BuildID, path, outputs["go tool pprof -raw"])
			}
		}
	}
	// top's group of each untrusted binary holds exactly the samples perf
	// script puts there: self = leaf in it, total = anywhere in it (one
	// binary per case, so the group's counts are the case's).
	if len(c.untrusted) == 1 {
		var tj topJSON
		if err := json.Unmarshal([]byte(outputs["top --json -n 0"]), &tj); err != nil || len(tj.Events) != 1 {
			t.Fatalf("top --json: %v", err)
		}
		var self, total uint64
		for _, e := range tj.Events[0].Entries {
			if e.Group && e.DSO == c.untrusted[0] {
				self += e.SelfSamples
				total += e.TotalSamples
			}
		}
		if self != p.leaf || total != p.any {
			t.Errorf("top groups %s with %d samples self, %d total; perf script: %d with the leaf in it, %d with a frame in it",
				c.untrusted[0], self, total, p.leaf, p.any)
		}
	}
	if c.sentinel {
		trust, _, _ := w.pcOut(c, "script", "--trust-paths", c.data)
		found := false
		for _, bad := range c.forbidden {
			found = found || strings.Contains(trust, bad)
		}
		if !found {
			t.Errorf("script --trust-paths names no recorded frame with a replacement-only name %v: the test would prove nothing\n%.3000s", c.forbidden, trust)
		}
		// Each frame carries its DSO's mark once ("[mismatch] name",
		// never "[mismatch] [mismatch] name").
		for _, line := range strings.Split(trust, "\n") {
			if n := strings.Count(line, "[mismatch]") + strings.Count(line, "[replaced]"); n > 1 {
				t.Errorf("script --trust-paths marks a frame %d times: %q", n, line)
				break
			}
		}
	}
	if len(c.untrusted) == 0 {
		bins := map[string]string{}
		for path := range c.verdicts {
			bins[path] = path
			for _, d := range r.DSOs {
				if d.Path == path && d.FoundPath != "" {
					bins[path] = d.FoundPath // perf's cache in cache-kept
				}
			}
		}
		w.agreesWithPerfReport(c.data, pb, outputs["top --json -n 0"], bins)
	}
	return r
}

// agreesWithPerfReport checks a clean recording against perf report
// --no-children --sort dso,sym: every function of the case's own binaries
// (bins: recorded path -> the file that ran, to read its symbols) to which
// perf or perfcheck top --json gives at least 1% of the period has the
// same share in both, to the two decimals perf prints; and go tool pprof
// -top -noinlines gives each function top names at 1% or more the flat
// share top gives it as self (pb is the profile of the same file).
//
// Only the case's binaries are compared with perf: the test built them,
// and there the two name every sampled address alike. In the system's
// libraries and the vdso the tools name some addresses differently by
// design — perf picks clock_gettime@@GLIBC_2.17 where perfcheck gives the
// debug file's __GI___clock_gettime, perf 6.1 prints a libc PLT slot as
// "@plt", and perfcheck leaves the vdso unnamed when no build-id was
// recorded for it (pipe and -z recordings) — and they only reach 1% when
// a stray sample lands there in a recording short of samples: that was the
// flake of TestProofPipeAndCompressed/z.data/clean under load.
//
// A function is its start address in the symbol table of the binary that
// ran, so that aliases at one address (perf's choose_best_symbol and
// perfcheck may pick different ones in a static libc) are one function;
// a name that is not there (a PLT slot) stands for itself. Go assembly
// functions are compared without the ".abi0" suffix perf and the ELF
// symbol table give them (perfcheck names them from .gopclntab). Addresses
// perf could not name ("[.] 0x...") are left out. go tool pprof runs with
// -noinlines because its flat share otherwise goes to the innermost
// inlined function, where perf report and top count the function holding
// the code.
func (w *realWorld) agreesWithPerfReport(data, pb, topJS string, bins map[string]string) {
	t := w.t
	t.Helper()
	addrs := map[string]map[string]uint64{} // perf's short name of the binary -> function -> address
	paths := map[string]string{}            // recorded path -> perf's short name
	for path, file := range bins {
		addrs[filepath.Base(path)] = funcAddrs(t, file)
		paths[path] = filepath.Base(path)
	}
	key := func(dso, name string) string {
		name = strings.TrimSuffix(name, ".abi0")
		if a, ok := addrs[dso][name]; ok {
			return dso + " 0x" + strconv.FormatUint(a, 16)
		}
		return dso + " " + name
	}

	out := w.run("perf", "report", "-i", data, "--no-children", "--stdio", "-g", "none", "--sort", "dso,sym")
	perf := map[string]float64{}
	names := map[string][]string{} // key -> the names perf and perfcheck give it
	for _, l := range strings.Split(out, "\n") {
		m := perfReportDSOLine.FindStringSubmatch(l)
		if m == nil || m[3] != "." || addrs[m[2]] == nil || strings.HasPrefix(m[4], "0x") {
			continue
		}
		pct, _ := strconv.ParseFloat(m[1], 64)
		k := key(m[2], m[4])
		perf[k] += pct
		names[k] = append(names[k], "perf: "+m[4])
	}

	var tj topJSON
	if err := json.Unmarshal([]byte(topJS), &tj); err != nil || len(tj.Events) != 1 {
		t.Fatalf("top --json: %v (%d events)", err, len(tj.Events))
	}
	self := map[string]float64{}   // key -> top's self share, the case's binaries
	byName := map[string]float64{} // name -> top's self share, every binary
	for _, e := range tj.Events[0].Entries {
		if e.Group {
			continue
		}
		byName[e.Name] += e.SelfPct
		if dso, ok := paths[e.DSO]; ok {
			k := key(dso, e.Name)
			self[k] += e.SelfPct
			names[k] = append(names[k], "perfcheck: "+e.Name)
		}
	}
	compared := 0
	for k, p := range perf {
		if p >= 1 {
			compared++
			if math.Abs(self[k]-p) > 0.0051 {
				t.Errorf("%s %v: perfcheck top self %.4f%%, perf report %.2f%%", k, names[k], self[k], p)
			}
		}
	}
	for k, s := range self {
		if s >= 1 && perf[k] < 1 && math.Abs(perf[k]-s) > 0.0051 {
			t.Errorf("%s %v: perfcheck top self %.4f%%, perf report %.2f%%", k, names[k], s, perf[k])
		}
	}
	if compared == 0 {
		t.Fatalf("perf report shows no function of %v at 1%% or more:\n%s", slices.Sorted(maps.Keys(bins)), out)
	}

	top := goToolPprof(t, "-top", "-noinlines", pb)
	flat := map[string]float64{}
	lines := map[string]int{} // pprof lists one function per binary: each line rounds
	for _, l := range strings.Split(top, "\n") {
		if m := pprofTopLine.FindStringSubmatch(l); m != nil {
			v, _ := strconv.ParseFloat(m[1], 64)
			flat[m[2]] += v
			lines[m[2]]++
		}
	}
	for name, s := range byName {
		if (s >= 1 || flat[name] >= 1) && math.Abs(flat[name]-s) > 0.0051*float64(max(1, lines[name])) {
			t.Errorf("%s: go tool pprof -noinlines flat %.2f%%, perfcheck top self %.4f%%\n%s", name, flat[name], s, top)
		}
	}
}

// perfReportDSOLine is one line of `perf report --no-children --stdio -g
// none --sort dso,sym`: "    51.50%  hot   [.] orig_alpha_spin".
var perfReportDSOLine = regexp.MustCompile(`^\s+([0-9.]+)%\s+(\S+)\s+\[(.)\]\s+(\S.*?)\s*$`)

// funcAddrs maps the functions of an ELF file's symbol tables to their
// start addresses, without Go's ".abi0" suffix; a name at several
// addresses (two static functions of one name) is left out.
func funcAddrs(t *testing.T, file string) map[string]uint64 {
	t.Helper()
	f, err := elf.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, _ := f.Symbols()
	dyn, _ := f.DynamicSymbols()
	m := map[string]uint64{}
	dup := map[string]bool{}
	for _, s := range append(syms, dyn...) {
		// STT_GNU_IFUNC (10): a static libc's string functions.
		if typ := elf.ST_TYPE(s.Info); (typ != elf.STT_FUNC && typ != 10) || s.Value == 0 {
			continue
		}
		name := strings.TrimSuffix(s.Name, ".abi0")
		if a, ok := m[name]; ok && a != s.Value {
			dup[name] = true
		}
		m[name] = s.Value
	}
	for name := range dup {
		delete(m, name)
	}
	return m
}

// checkLive runs `perf record -o - bin | perfcheck check --json -`,
// keeping the bytes perfcheck read in saved, and returns perfcheck's
// output and exit code. When perf is killed by a signal
// (fixtures.PerfDied) it records again, as run does, and skips the test
// when perf dies every time.
func (w *realWorld) checkLive(bin, saved string) (string, int) {
	w.t.Helper()
	for attempt := 1; ; attempt++ {
		f, err := os.Create(saved)
		if err != nil {
			w.t.Fatal(err)
		}
		rec := exec.Command("perf", "record", "-q", "-e", "cpu-clock", "-F", "2000", "-g", "-o", "-", "--", bin)
		rec.Dir = w.dir
		rec.Env = append(fixtures.PerfEnv(w.dir), "LC_ALL=C")
		var recErr strings.Builder
		rec.Stderr = &recErr
		pipe, err := rec.StdoutPipe()
		if err != nil {
			w.t.Fatal(err)
		}
		if err := rec.Start(); err != nil {
			w.t.Fatal(err)
		}
		live, _, code := w.pcOutIn(io.TeeReader(pipe, f), proofCase{}, "check", "--json", "-")
		err = rec.Wait()
		f.Close()
		switch {
		case err == nil:
			return live, code
		case !fixtures.PerfDied(err):
			w.t.Fatalf("perf record: %v\n%s", err, recErr.String())
		case attempt == fixtures.PerfAttempts:
			w.t.Skipf("perf record: died %d times: %v\n%s", attempt, err, recErr.String())
		}
		w.t.Logf("perf record: died (%v), recording again\n%s", err, recErr.String())
	}
}

// record runs perf record (HOME is the world's: perf fills its own cache
// there) with -g on argv and returns the recording's path.
func (w *realWorld) record(name string, extra []string, argv ...string) string {
	w.t.Helper()
	data := filepath.Join(w.dir, name)
	args := append([]string{"record", "-q", "-e", "cpu-clock", "-F", "2000", "-g", "-o", data}, extra...)
	w.run("perf", append(append(args, "--"), argv...)...)
	// A rebuild must be visibly later than the recording.
	time.Sleep(20 * time.Millisecond)
	return data
}

func (w *realWorld) cache() string { return filepath.Join(w.dir, ".debug") }

var (
	origOnly = []string{"orig_alpha_spin", "orig_beta_spin", "orig_gamma_call"}
	// origHot are the original program's functions hot enough to be named
	// in every top list.
	origHot = []string{"orig_alpha_spin", "orig_beta_spin"}
)

// A C program rebuilt at the same path after recording: with perf's cache
// cleared it is a mismatch, unnamed; with the cache perf record filled it
// is verified and named from the cached copy.
func TestProofCRebuilt(t *testing.T) {
	t.Parallel()
	w := newRealWorld(t)
	bin := filepath.Join(w.dir, "hot")
	w.build(bin, origNames)
	data := w.record("perf.data", nil, bin)
	clean := proofCase{data: data, verdicts: map[string]string{bin: "verified"}, named: origHot}
	w.prove(clean)
	w.build(bin, replNames)
	t.Run("cache-cleared", func(t *testing.T) {
		w := &realWorld{t: t, dir: w.dir}
		w.prove(proofCase{data: data, verdicts: map[string]string{bin: "mismatch"}, untrusted: []string{bin},
			forbidden: append(slices.Clone(replOnly), origOnly...), sentinel: true,
			advice: []string{"perfcheck cache fill", "--debuginfod"}})
	})
	t.Run("cache-kept", func(t *testing.T) {
		w := &realWorld{t: t, dir: w.dir}
		w.prove(proofCase{data: data, flags: []string{"--buildid-dir", w.cache()},
			verdicts: map[string]string{bin: "verified"}, sources: map[string]string{bin: "perf-cache"},
			forbidden: replOnly, named: origHot})
	})
}

// A deleted binary: missing and unnamed without a copy anywhere; verified
// through a real debuginfod server that holds it, and named from the
// download.
func TestProofDeletedBinary(t *testing.T) {
	t.Parallel()
	w := newRealWorld(t)
	bin := filepath.Join(w.dir, "hot")
	w.build(bin, origNames)
	data := w.record("perf.data", nil, bin)
	served := filepath.Join(w.dir, "served")
	os.MkdirAll(served, 0o755)
	fixtures.CopyFile(t, bin, filepath.Join(served, "hot"))
	os.Remove(bin)
	t.Run("no-server", func(t *testing.T) {
		w := &realWorld{t: t, dir: w.dir}
		w.prove(proofCase{data: data, verdicts: map[string]string{bin: "missing"}, untrusted: []string{bin},
			forbidden: origOnly, advice: []string{"perfcheck cache fill perf.data", "--debuginfod"}})
	})
	t.Run("debuginfod", func(t *testing.T) {
		w := &realWorld{t: t, dir: w.dir}
		var id string
		out, _, _ := w.pcOut(proofCase{}, "check", "--json", data)
		for _, d := range ckParseReport(t, out).DSOs {
			if d.Path == bin {
				id = d.BuildID
			}
		}
		url := fixtures.Debuginfod(t, served, id)
		w.prove(proofCase{data: data, flags: []string{"--debuginfod", url},
			verdicts: map[string]string{bin: "verified"}, sources: map[string]string{bin: "debuginfod"}, named: origHot})
	})
}

// libHotC is hotC's work in a shared library, called through lib_entry
// (in both builds); the program itself only loops.
const libHotC = `
volatile unsigned long lsink;
__attribute__((noinline)) void HOT_A(void) { for (int i = 0; i < 20000; i++) lsink += i * 7; }
__attribute__((noinline)) void HOT_B(void) { for (int i = 0; i < 10000; i++) lsink ^= i * 13; }
__attribute__((noinline)) void HOT_C(void) { HOT_A(); HOT_B(); }
void lib_entry(void) { HOT_C(); }
`

// libAppC calls the library and spins in app_spin itself, so that samples
// have their leaf in the program too and perf records its build-id (perf
// 6.1 records build-ids only for DSOs a sample's leaf hits).
const libAppC = `
#include <time.h>
void lib_entry(void);
volatile unsigned long asink;
__attribute__((noinline)) void app_spin(void) { for (int i = 0; i < 15000; i++) asink += i; }
` + cpuSecondsC + `
int main(void) { double end = cpu_seconds() + 0.3; while (cpu_seconds() < end) for (int i = 0; i < 10; i++) { lib_entry(); app_spin(); } return 0; }
`

// buildSrc compiles src with gcc and flags into out, through a temporary
// file renamed into place.
func (w *realWorld) buildSrc(out, src string, flags ...string) {
	w.t.Helper()
	c := out + ".c"
	if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
		w.t.Fatal(err)
	}
	w.run("gcc", append([]string{"-O1", "-g", "-fno-omit-frame-pointer", "-Wl,--build-id=sha1", "-o", out + ".tmp", c}, flags...)...)
	if err := os.Rename(out+".tmp", out); err != nil {
		w.t.Fatal(err)
	}
}

// A shared library replaced after recording: the library is a mismatch and
// its samples untrusted; the program stays verified; every output that
// weighs samples gives the library the share perf script gives it
// (proveShares).
func TestProofSharedLibraryReplaced(t *testing.T) {
	t.Parallel()
	w := newRealWorld(t)
	lib, app := filepath.Join(w.dir, "libhot.so"), filepath.Join(w.dir, "app")
	w.buildSrc(lib, libHotC, append([]string{"-shared", "-fPIC"}, origNames...)...)
	w.buildSrc(app, libAppC, "-L"+w.dir, "-lhot", "-Wl,-rpath,"+w.dir)
	data := w.record("perf.data", []string{"-N"}, app)
	clean := proofCase{data: data, verdicts: map[string]string{lib: "verified", app: "verified"}, named: append([]string{"app_spin"}, origHot...)}
	w.prove(clean)
	w.buildSrc(lib, libHotC, append([]string{"-shared", "-fPIC"}, replNames...)...)
	replaced := proofCase{data: data, verdicts: map[string]string{lib: "mismatch", app: "verified"}, untrusted: []string{lib},
		forbidden: append(slices.Clone(replOnly), origOnly...), named: []string{"app_spin"}, sentinel: true}
	w.prove(replaced)
	w.proveShares(replaced, lib, "[mismatch] libhot.so")
}

// goHotSrc has two hot functions whose names the build picks; the two
// builds differ only in those names (same lengths), so the same offsets
// hold the other build's functions. It runs for 300 ms of the process's
// CPU time, not wall time, as hotC does and for the same reason.
const goHotSrc = `package main

import (
	"syscall"
	"time"
)

var sink int

//go:noinline
func NAME_A(n int) {
	for i := 0; i < n; i++ {
		sink += i * 7
	}
}

//go:noinline
func NAME_B(n int) {
	for i := 0; i < n; i++ {
		sink ^= i * 13
	}
}

// cpuTime is the CPU time the process has used (user and system, all
// threads).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func main() {
	end := cpuTime() + 300*time.Millisecond
	for cpuTime() < end {
		for i := 0; i < 10; i++ {
			NAME_A(20000)
			NAME_B(10000)
		}
	}
}
`

// buildGo builds goHotSrc with names a and b into out, with the test's own
// toolchain and the machine's build cache (HOME stays the user's for go).
func (w *realWorld) buildGo(out, a, b string, ldflags string) {
	w.t.Helper()
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		w.t.Skip("no go toolchain at GOROOT: cannot build the Go workload")
	}
	dir := filepath.Join(w.t.TempDir(), "src")
	os.MkdirAll(dir, 0o755)
	src := strings.NewReplacer("NAME_A", a, "NAME_B", b).Replace(goHotSrc)
	os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644)
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module hot\n\ngo 1.24\n"), 0o644)
	cmd := exec.Command(goBin, "build", "-o", out+".tmp", "-ldflags="+ldflags)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=", "GOWORK=off")
	if o, err := cmd.CombinedOutput(); err != nil {
		w.t.Fatalf("go build: %v\n%s", err, o)
	}
	if err := os.Rename(out+".tmp", out); err != nil {
		w.t.Fatal(err)
	}
}

// A Go program rebuilt after recording, with a GNU build-id (Go ≥ 1.24's
// default: mismatch) and without (-B none: no identity, the new inode is
// the evidence: replaced).
func TestProofGoRebuilt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, ldflags, before, after string
		advice                       []string
	}{
		{"gnu-build-id", "", "verified", "mismatch", []string{"perfcheck cache fill"}},
		{"no-build-id", "-B=none", "unverified", "replaced", []string{"-B=gobuildid"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newRealWorld(t)
			bin := filepath.Join(w.dir, "gohot")
			w.buildGo(bin, "origAlphaSpin", "origBetaSpin", tc.ldflags)
			data := w.record("perf.data", nil, bin)
			clean := proofCase{data: data, verdicts: map[string]string{bin: tc.before},
				named: []string{"main.origAlphaSpin", "main.origBetaSpin"}}
			w.prove(clean)
			w.buildGo(bin, "replOnlyAlpha", "replOnlyBeta", tc.ldflags)
			w.prove(proofCase{data: data, verdicts: map[string]string{bin: tc.after}, untrusted: []string{bin},
				forbidden: []string{"replOnly", "origAlphaSpin", "origBetaSpin"}, sentinel: true, advice: tc.advice})
		})
	}
}

// --buildid-mmap: every MMAP2 carries the build-id; after a rebuild the
// binary is a mismatch by the MMAP2's build-id.
func TestProofBuildIDMmap(t *testing.T) {
	t.Parallel()
	w := newRealWorld(t)
	bin := filepath.Join(w.dir, "hot")
	w.build(bin, origNames)
	data := w.record("perf.data", []string{"--buildid-mmap"}, bin)
	clean := proofCase{data: data, verdicts: map[string]string{bin: "verified"}, named: origHot}
	w.prove(clean)
	w.build(bin, replNames)
	w.prove(proofCase{data: data, verdicts: map[string]string{bin: "mismatch"}, untrusted: []string{bin},
		forbidden: append(slices.Clone(replOnly), origOnly...), sentinel: true})
}

// Pipe-mode and -z recordings: perf 6.1 writes no build-id table for them,
// so MMAP2's device and inode are the identity: unverified while the file
// is the one that ran, replaced after a rebuild.
func TestProofPipeAndCompressed(t *testing.T) {
	t.Parallel()
	w := newRealWorld(t)
	bin := filepath.Join(w.dir, "hot")
	w.build(bin, origNames)
	pipe := filepath.Join(w.dir, "pipe.data")
	w.run("sh", "-c", "perf record -q -e cpu-clock -F 2000 -g -o - -- "+bin+" > "+pipe)
	z := w.record("z.data", []string{"-z"}, bin)
	for _, data := range []string{pipe, z} {
		t.Run(filepath.Base(data)+"/clean", func(t *testing.T) {
			w := &realWorld{t: t, dir: w.dir}
			clean := proofCase{data: data, verdicts: map[string]string{bin: "unverified"}, named: origHot}
			w.prove(clean)
		})
	}
	w.build(bin, replNames)
	for _, data := range []string{pipe, z} {
		t.Run(filepath.Base(data)+"/rebuilt", func(t *testing.T) {
			w := &realWorld{t: t, dir: w.dir}
			w.prove(proofCase{data: data, verdicts: map[string]string{bin: "replaced"}, untrusted: []string{bin},
				forbidden: append(slices.Clone(replOnly), origOnly...), sentinel: true,
				advice: []string{"--buildid-mmap"}})
		})
	}
}

// forkExecC spins for 100 ms of CPU time, then forks and execs argv[1] and
// waits for it.
const forkExecC = `
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
volatile unsigned long sink;
` + cpuSecondsC + `
__attribute__((noinline)) void parent_spin(void) { double end = cpu_seconds() + 0.1; while (cpu_seconds() < end) for (int i = 0; i < 300000; i++) sink += i; }
int main(int argc, char **argv) {
	parent_spin();
	pid_t p = fork();
	if (p == 0) { execl(argv[1], argv[1], (char *)0); _exit(127); }
	waitpid(p, 0, 0);
	return 0;
}
`

// A process that forks and execs a child, which is rebuilt after the
// recording: only the child's samples become untrusted, the parent stays
// verified and named.
func TestProofForkExec(t *testing.T) {
	t.Parallel()
	w := newRealWorld(t)
	parent, child := filepath.Join(w.dir, "parent"), filepath.Join(w.dir, "hot")
	w.buildSrc(parent, forkExecC)
	w.build(child, origNames)
	data := w.record("perf.data", nil, parent, child)
	clean := proofCase{data: data, verdicts: map[string]string{parent: "verified", child: "verified"},
		named: append([]string{"parent_spin"}, origHot...)}
	w.prove(clean)
	w.build(child, replNames)
	w.prove(proofCase{data: data, verdicts: map[string]string{parent: "verified", child: "mismatch"}, untrusted: []string{child},
		forbidden: append(slices.Clone(replOnly), origOnly...), named: []string{"parent_spin"}, sentinel: true})
}

// When every binary the samples touch is verified (a static program,
// user-space samples only), go tool pprof's top functions are perf
// report --no-children's.
func TestProofAllVerifiedPprofTop(t *testing.T) {
	t.Parallel()
	w := newRealWorld(t)
	bin := filepath.Join(w.dir, "hot")
	w.build(bin, origNames, "-static", "-Wl,--build-id=sha1")
	data := filepath.Join(w.dir, "perf.data")
	w.run("perf", "record", "-q", "-e", "cpu-clock:u", "-F", "2000", "-g", "-o", data, "--", bin)
	c := proofCase{data: data, verdicts: map[string]string{bin: "verified"}, named: origHot}
	r := w.prove(c)
	for _, d := range r.DSOs {
		if d.Verdict != "verified" && d.Path != "[unknown]" {
			t.Errorf("%s is %s: not every binary is verified", d.Path, d.Verdict)
		}
	}
}

// A pipe-mode recording read live: `perf record -o - | perfcheck check -`,
// perfcheck reading while perf writes (reads end wherever the pipe has
// data). The report is the one for the same bytes read from a file —
// same DSOs, verdicts, hits and counts — and its counts are perf script's.
func TestProofLivePipe(t *testing.T) {
	t.Parallel()
	w := newRealWorld(t)
	bin := filepath.Join(w.dir, "hot")
	w.build(bin, origNames)
	saved := filepath.Join(w.dir, "saved.data")
	live, code := w.checkLive(bin, saved)
	if code != exitOK {
		t.Errorf("live check: exit %d\n%s", code, live)
	}
	lr := ckParseReport(t, live)
	if lr.File != "-" || lr.verdict(bin) != "unverified" {
		t.Errorf("live check of %q: %s is %q, want unverified", lr.File, bin, lr.verdict(bin))
	}
	p := w.perfScriptCounts(saved, nil)
	if lr.Samples != p.samples || lr.TrustedSamples != p.samples {
		t.Errorf("live: %d samples, %d trusted; perf script on the same bytes: %d samples", lr.Samples, lr.TrustedSamples, p.samples)
	}
	fromFile, _, _ := w.pcOut(proofCase{}, "check", "--json", saved)
	fr := ckParseReport(t, fromFile)
	if fr.Samples != lr.Samples || fr.TrustedSamples != lr.TrustedSamples || fr.UntrustedAnySamples != lr.UntrustedAnySamples ||
		len(fr.DSOs) != len(lr.DSOs) {
		t.Fatalf("live and from the file differ:\nlive: %s\nfile: %s", live, fromFile)
	}
	for i := range fr.DSOs {
		a, b := fr.DSOs[i], lr.DSOs[i]
		if a.Path != b.Path || a.Verdict != b.Verdict || a.BuildID != b.BuildID || a.HitsLeaf != b.HitsLeaf || a.HitsAny != b.HitsAny {
			t.Errorf("DSO %d: from the file %+v, live %+v", i, a, b)
		}
	}
}

// A binary replaced while perf records (a deploy between two runs): perf
// reads the header's build-ids at the end, from the file then on disk, so
// its table describes the replacement for both runs; MMAP2's inode tells
// the runs apart. The first run's binary is replaced and unnamed in every
// output — in the per-sample ones (script --json, go tool pprof focused on
// its pid) even though the second run, verified, legitimately shows the
// replacement's names; the original build's names appear nowhere.
func TestProofReplacedDuringRecording(t *testing.T) {
	t.Parallel()
	w := newRealWorld(t)
	bin, next := filepath.Join(w.dir, "hot"), filepath.Join(w.dir, "hot-next")
	w.build(bin, origNames)
	w.build(next, replNames)
	data := w.record("perf.data", nil, "sh", "-c", bin+"; cp "+next+" "+bin+".new && mv "+bin+".new "+bin+"; "+bin)

	// perf script: the pids whose samples touch the binary, in order.
	runs := w.perfScriptByPID(data, []string{bin})
	total := uint64(0)
	for _, r := range runs {
		total += r.samples
	}
	var hit []*pidCounts
	for _, r := range runs {
		if r.any > 0 {
			hit = append(hit, r)
		}
	}
	if len(hit) != 2 {
		t.Fatalf("perf script shows %d processes with samples in %s, want the two runs", len(hit), bin)
	}
	old, cur2 := hit[0], hit[1]

	js, _, code := w.pcOut(proofCase{}, "check", "--json", data)
	r := ckParseReport(t, js)
	var verdicts []string
	for _, d := range r.DSOs {
		if d.Path == bin {
			verdicts = append(verdicts, d.Verdict)
		}
	}
	slices.Sort(verdicts)
	if code != exitProblems || strings.Join(verdicts, " ") != "replaced verified" {
		t.Errorf("exit %d, verdicts of %s: %v; want exit 1, replaced and verified", code, bin, verdicts)
	}
	if r.Samples != total || r.UntrustedAnySamples != old.any || r.UntrustedLeafSamples != old.leaf || r.TrustedSamples != total-old.any {
		t.Errorf("samples %d, trusted %d, untrusted leaf %d, anywhere %d; perf script: %d samples, the first run's %d with the leaf and %d with a frame in %s",
			r.Samples, r.TrustedSamples, r.UntrustedLeafSamples, r.UntrustedAnySamples, total, old.leaf, old.any, bin)
	}

	// script --json, sample by sample.
	script, _, _ := w.pcOut(proofCase{}, "script", "--json", data)
	named, wrong := 0, 0
	for _, l := range strings.Split(strings.TrimSpace(script), "\n") {
		var s struct {
			PID uint64 `json:"pid"`
		}
		if err := json.Unmarshal([]byte(l), &s); err != nil {
			t.Fatalf("script --json: %v: %s", err, l)
		}
		if s.PID == old.pid && strings.Contains(l, "repl_only") {
			if wrong++; wrong == 1 {
				t.Errorf("a sample of the first run is named from the replacement: %.600s", l)
			}
		}
		if s.PID == cur2.pid && strings.Contains(l, "repl_only") {
			named++
		}
	}
	if wrong > 1 {
		t.Errorf("%d samples of the first run are named from the replacement", wrong)
	}
	if named == 0 {
		t.Errorf("no sample of the second run is named: the test would prove nothing")
	}

	pb := filepath.Join(t.TempDir(), "out.pb.gz")
	outputs := map[string]string{"check --json": js, "script --json": script}
	for _, args := range [][]string{{"check"}, {"script"}, {"top", "-n", "0"}, {"top", "--json", "-n", "0"}, {"pprof", "-o", pb}} {
		o, e, _ := w.pcOut(proofCase{}, append(args, data)...)
		outputs[strings.Join(args, " ")] = o + e
	}
	outputs["go tool pprof -raw"] = goToolPprof(t, "-raw", pb)
	outputs["go tool pprof -top"] = goToolPprof(t, "-top", pb)
	for what, o := range outputs {
		for _, bad := range origOnly {
			if i := strings.Index(o, bad); i >= 0 {
				t.Errorf("%s shows %q, a name of the first build, which exists nowhere now: …%s…", what, bad, o[max(0, i-200):min(len(o), i+100)])
			}
		}
	}
	if !strings.Contains(outputs["top -n 0"], "[replaced] "+bin) {
		t.Errorf("top does not group the first run's binary as replaced:\n%s", outputs["top -n 0"])
	}
	// go tool pprof, focused on each run's pid.
	focus := func(pid uint64) string {
		return goToolPprof(t, "-tagfocus=pid="+strconv.FormatUint(pid, 10), "-traces", pb)
	}
	if o := focus(old.pid); strings.Contains(o, "repl_only") || !strings.Contains(o, "[replaced]") {
		t.Errorf("go tool pprof on the first run's samples:\n%.3000s", o)
	}
	if o := focus(cur2.pid); !strings.Contains(o, "repl_only") {
		t.Errorf("go tool pprof names nothing of the second run:\n%.3000s", o)
	}
}
