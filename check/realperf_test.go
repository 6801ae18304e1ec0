package check

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/dso"
	"github.com/perfcheck/perfcheck/internal/fixtures"
	"github.com/perfcheck/perfcheck/perfdata"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests record real workloads with real perf, then change the world
// (rebuild, delete, replace a library) and check what the engine says.
// Each recording is a fraction of a second of a busy loop.

func requirePerf(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("records with perf: skipped in -short mode")
	}
	if _, err := exec.LookPath("perf"); err != nil {
		t.Skip("perf not installed (Debian: linux-perf): cannot record")
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed: cannot build workloads")
	}
}

// world is a scratch directory with its own HOME, so that perf record's
// build-id cache ($HOME/.debug) is private to the test.
type world struct {
	t    *testing.T
	dir  string
	home string
}

func newWorld(t *testing.T) *world {
	requirePerf(t)
	dir := t.TempDir()
	w := &world{t: t, dir: dir, home: filepath.Join(dir, "home")}
	os.MkdirAll(w.home, 0o755)
	return w
}

func (w *world) cache() string { return filepath.Join(w.home, ".debug") }

func (w *world) path(name string) string { return filepath.Join(w.dir, name) }

func (w *world) run(env []string, name string, args ...string) []byte {
	w.t.Helper()
	var out []byte
	err := w.again(name, func() (err error) {
		cmd := exec.Command(name, args...)
		cmd.Dir = w.dir
		cmd.Env = append(fixtures.PerfEnv(w.home), env...)
		out, err = cmd.CombinedOutput()
		return err
	})
	if err != nil {
		w.t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

// again runs a command with run, and again while it is perf and perf was
// killed (fixtures.PerfDied: perf 6.1 now and then aborts in its build-id
// code and leaves no recording or answer). When perf dies every time the
// test is skipped: there is nothing to check against. An error exit
// still fails the test.
func (w *world) again(name string, run func() error) error {
	w.t.Helper()
	for attempt := 1; ; attempt++ {
		err := run()
		if name != "perf" || err == nil || !fixtures.PerfDied(err) {
			return err
		}
		if attempt == fixtures.PerfAttempts {
			w.t.Skipf("perf died %d times: %v", attempt, err)
		}
		w.t.Logf("perf died (%v): running it again", err)
	}
}

// output runs a command and returns its standard output alone; what it
// writes to stderr is logged. perf report and perf script print warnings
// on stderr (e.g. about samples they could not unwind); mixed into stdout
// they land in the middle of a line and corrupt what the test parses.
func (w *world) output(name string, args ...string) []byte {
	w.t.Helper()
	var out []byte
	var stderr bytes.Buffer
	err := w.again(name, func() (err error) {
		cmd := exec.Command(name, args...)
		cmd.Dir = w.dir
		cmd.Env = fixtures.PerfEnv(w.home)
		stderr.Reset()
		cmd.Stderr = &stderr
		out, err = cmd.Output()
		return err
	})
	if err != nil {
		w.t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.Bytes())
	}
	if stderr.Len() != 0 {
		w.t.Logf("%s %s: stderr:\n%s", name, strings.Join(args, " "), stderr.Bytes())
	}
	return out
}

// gcc builds src (C) into out.
func (w *world) gcc(out, src string, flags ...string) {
	w.t.Helper()
	c := w.path(filepath.Base(out) + ".c")
	if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
		w.t.Fatal(err)
	}
	// Link to a temporary name and rename, as a build system does: the
	// old inode stays intact for a process still running it.
	tmp := out + ".tmp"
	w.run(nil, "gcc", append([]string{"-O1", "-g", "-fno-omit-frame-pointer", "-o", tmp, c}, flags...)...)
	if err := os.Rename(tmp, out); err != nil {
		w.t.Fatal(err)
	}
}

// record runs perf record on argv and returns the perf.data path. extra
// goes before "--".
func (w *world) record(name string, extra []string, argv ...string) string {
	w.t.Helper()
	out := w.path(name)
	args := append([]string{"record", "-q", "-e", "cpu-clock", "-F", "2000", "-g", "-o", out}, extra...)
	args = append(append(args, "--"), argv...)
	w.run(nil, "perf", args...)
	// A file rebuilt in the same clock tick as the recording ended would
	// not be newer: make sure the world changes later.
	time.Sleep(20 * time.Millisecond)
	return out
}

// dwarfApp builds a program and its library without frame pointers, so
// only their CFI unwinds them, and records it with --call-graph dwarf.
func (w *world) dwarfApp() (lib, bin, data string) {
	lib, bin = w.path("libwork.so"), w.path("app")
	w.gcc(lib, libV1, "-shared", "-fPIC", "-fomit-frame-pointer")
	w.gcc(bin, libMain, "-L"+w.dir, "-lwork", "-Wl,-rpath,"+w.dir, "-fomit-frame-pointer")
	return lib, bin, w.record("dwarf.data", []string{"--call-graph", "dwarf"}, bin)
}

// analyze analyzes data with opts, sharing the system's symbols with the
// other tests (withSystemSymbols).
func (w *world) analyze(data string, opts Options) *Result {
	w.t.Helper()
	res, err := Analyze(context.Background(), Path(data), withSystemSymbols(opts))
	if err != nil {
		w.t.Fatalf("Analyze %s: %v", data, err)
	}
	return res
}

// output is everything a user could read from a result: the report as
// JSON and every location as script and top print them.
func output(t *testing.T, res *Result) string {
	t.Helper()
	b, err := json.Marshal(res.Report())
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	sb.Write(b)
	for _, l := range res.Locations {
		sb.WriteString("\n" + l.String())
		for _, f := range l.Frames {
			sb.WriteString(" " + f.Function + " " + f.RawName + " " + f.File)
		}
	}
	return sb.String()
}

func assertNoName(t *testing.T, res *Result, names ...string) {
	t.Helper()
	out := output(t, res)
	for _, n := range names {
		if strings.Contains(out, n) {
			t.Errorf("%q, which exists only in the replacement binary, appears in the output", n)
		}
	}
}

func assertName(t *testing.T, res *Result, name string) {
	t.Helper()
	for _, l := range res.Locations {
		for _, f := range l.Frames {
			if f.Function == name {
				return
			}
		}
	}
	t.Errorf("%s is never named", name)
}

func mustDSO(t *testing.T, res *Result, path string, want Verdict) *DSO {
	t.Helper()
	for _, d := range res.DSOs {
		if d.Path == path {
			if d.Verdict != want {
				t.Errorf("%s: verdict %v (%s), want %v", path, d.Verdict, d.Reason, want)
			}
			return d
		}
	}
	var got []string
	for _, d := range res.DSOs {
		got = append(got, d.Path)
	}
	t.Fatalf("no DSO %s among %v", path, got)
	return nil
}

// samplesIn counts the samples with a frame anywhere in DSO path, from the
// stacks (not from the DSO's own counter, to check that too).
func samplesIn(res *Result, path string, leafOnly bool) uint64 {
	var n uint64
	if res.replay != nil {
		// Options.Replay counts by DSO signature and keeps no
		// aggregates: count the samples as EachSample reads them.
		err := res.EachSample(context.Background(), func(s *Sample) error {
			for i, l := range s.Stack.Locations() {
				if leafOnly && i > 0 {
					break
				}
				if l.DSO.Path == path {
					n++
					break
				}
			}
			return nil
		})
		if err != nil {
			panic(err)
		}
		return n
	}
	for _, a := range res.Aggregates() {
		for i, l := range a.Stack.Locations() {
			if leafOnly && i > 0 {
				break
			}
			if l.DSO.Path == path {
				n += a.Samples
				break
			}
		}
	}
	return n
}

const busyV1 = `
#include <stdlib.h>
volatile unsigned long sink;
__attribute__((noinline)) void first_hot(long n) { for (long i = 0; i < n; i++) sink += i * i; }
__attribute__((noinline)) void second_hot(long n) { for (long i = 0; i < n; i++) sink ^= i + (sink >> 3); }
int main(int argc, char **argv) {
	long n = argc > 1 ? atol(argv[1]) : 60000000;
	first_hot(n * 2);
	second_hot(n);
	return 0;
}
`

// busyV2 has other functions at other offsets: if any of its names shows
// up for the old recording, the engine named a frame from the wrong file.
const busyV2 = `
#include <stdlib.h>
volatile unsigned long sink;
__attribute__((noinline)) void replacement_pad_a(void) { for (int i = 0; i < 11; i++) sink += i; }
__attribute__((noinline)) void replacement_only(long n) { for (long i = 0; i < n; i++) sink -= i * 5; replacement_pad_a(); }
int main(int argc, char **argv) { replacement_only(argc > 1 ? atol(argv[1]) : 1000); return 0; }
`

var v2Names = []string{"replacement_only", "replacement_pad_a"}

func TestRealCleanMatchesPerfReport(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	bin := w.path("busy")
	w.gcc(bin, busyV1)
	data := w.record("clean.data", nil, bin)
	res := w.analyze(data, Options{Lookup: buildidcache.Options{BuildIDDir: w.cache()}})
	d := mustDSO(t, res, bin, Verified)
	if d.BuildIDSource != "header" {
		t.Errorf("build-id source %q, want header", d.BuildIDSource)
	}
	if res.Samples == 0 || res.TrustedSamples != res.Samples {
		t.Errorf("clean recording: %d of %d samples trusted: %s", res.TrustedSamples, res.Samples, res.Report().Summary())
	}
	assertName(t, res, "first_hot")
	assertName(t, res, "second_hot")
	comparePerfReport(t, w, data, res)
}

// comparePerfReport checks that the functions perf report --no-children
// lists at 5% or more of the self samples are exactly those perfcheck
// puts there, each with the percentage perf report prints. perf report
// weighs each sample by its period (hists__inc_stats adds sample->period;
// the percentage is period over the total period, ui/hist.c), so the
// shares are computed from periods the same way and rounded as perf
// prints them ("%.2f"). Functions are compared as a name->percentage map:
// two functions at the same share may come in either order.
func comparePerfReport(t *testing.T, w *world, data string, res *Result) {
	t.Helper()
	const limit = 5.0
	out := w.output("perf", "report", "-i", data, "--no-children", "--stdio", "-q", "--sort", "sym", "-g", "none", "--percent-limit", "5")
	re := regexp.MustCompile(`^\s*([0-9.]+)%\s+\[[.k]\]\s+(\S+)`)
	want := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			if _, dup := want[m[2]]; dup {
				t.Fatalf("perf report lists %s twice:\n%s", m[2], out)
			}
			want[m[2]] = m[1]
		}
	}
	if len(want) == 0 {
		t.Fatalf("perf report printed no function above 5%%:\n%s", out)
	}
	self := map[string]uint64{}
	var total uint64
	for _, a := range res.Aggregates() {
		total += a.Period
		leaf := a.Stack.Locations()[0]
		name := leaf.raw()
		if len(leaf.Frames) > 0 {
			// The outermost frame of the leaf location is the function
			// that holds the code, as perf report names it.
			name = leaf.Frames[len(leaf.Frames)-1].Function
		}
		self[name] += a.Period
	}
	got := map[string]string{}
	for n, p := range self {
		// perf computes the share as a double, 100.0 * period / total,
		// and hides entries below --percent-limit (hists__filter_entries).
		if pct := 100.0 * float64(p) / float64(total); pct >= limit {
			got[n] = strconv.FormatFloat(pct, 'f', 2, 64)
		}
	}
	for n, wp := range want {
		if gp, ok := got[n]; !ok {
			t.Errorf("perf report: %s at %s%%; perfcheck has it below %.0f%% (%.2f%%); perfcheck's list: %v",
				n, wp, limit, 100.0*float64(self[n])/float64(total), got)
		} else if gp != wp {
			t.Errorf("%s: perf report %s%%, perfcheck %s%%", n, wp, gp)
		}
	}
	for n, gp := range got {
		if _, ok := want[n]; !ok {
			t.Errorf("perfcheck: %s at %s%%, which perf report does not list at %.0f%% or more: %v", n, gp, limit, want)
		}
	}
}

func TestRealRebuiltSamePath(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	bin := w.path("busy")
	w.gcc(bin, busyV1)
	data := w.record("rebuilt.data", nil, bin)
	before := w.analyze(data, Options{})
	mustDSO(t, before, bin, Verified)
	hits := samplesIn(before, bin, false)
	if hits == 0 {
		t.Fatal("no sample in the workload")
	}
	w.gcc(bin, busyV2)

	// The two lookups read the same rebuilt world.
	t.Run("cache-cleared", func(t *testing.T) {
		t.Parallel()
		res := analyzeT(t, data, Options{})
		d := mustDSO(t, res, bin, Mismatch)
		if len(d.FoundBuildID) == 0 || d.FoundBuildID.String() == d.BuildID.String() {
			t.Errorf("found build-id %s, recorded %s", d.FoundBuildID, d.BuildID)
		}
		if got := res.UntrustedAnySamples; got != hits {
			t.Errorf("untrusted samples %d, want every sample through %s (%d)", got, bin, hits)
		}
		if res.TrustedSamples+res.UntrustedAnySamples != res.Samples {
			t.Errorf("counts do not add up: %s", res.Report().Summary())
		}
		if !res.Report().Failed(false) {
			t.Error("a mismatch must fail the check")
		}
		assertNoName(t, res, append(v2Names, "first_hot", "second_hot")...)

		// --trust-paths: named from the file at the path, loudly.
		res = analyzeT(t, data, Options{TrustPaths: true})
		named := 0
		for _, l := range res.Locations {
			if l.DSO.Path == bin && len(l.Frames) > 0 {
				named++
				if s := l.String(); !strings.HasSuffix(s, "[mismatch]") {
					t.Errorf("trust-paths frame not marked: %q", s)
				}
			}
		}
		if named == 0 || res.UntrustedAnySamples != hits {
			t.Errorf("trust-paths: %d named locations, %s", named, res.Report().Summary())
		}
	})
	t.Run("cache-kept", func(t *testing.T) {
		t.Parallel()
		resolver := &resolverLocator{r: buildidcache.New(isolated(w.cache()))}
		for _, opts := range []Options{{Lookup: buildidcache.Options{BuildIDDir: w.cache()}}, {locator: resolver}} {
			res := analyzeT(t, data, opts)
			d := mustDSO(t, res, bin, Verified)
			if d.Source != "perf-cache" {
				t.Errorf("source %q, want perf-cache", d.Source)
			}
			if res.TrustedSamples != res.Samples {
				t.Errorf("with the cache every sample is trusted: %s", res.Report().Summary())
			}
			assertName(t, res, "first_hot")
			assertNoName(t, res, v2Names...)
		}
	})
}

func TestRealDeletedBinary(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	bin := w.path("busy")
	w.gcc(bin, busyV1)
	data := w.record("deleted.data", nil, bin)
	os.Remove(bin)
	res := w.analyze(data, Options{})
	d := mustDSO(t, res, bin, Missing)
	if d.advice == "" {
		t.Error("a missing binary needs advice")
	}
	if res.UntrustedLeafSamples == 0 || res.UntrustedLeafSamples != samplesIn(res, bin, true) {
		t.Errorf("untrusted leaf samples %d, samples with a leaf in %s %d", res.UntrustedLeafSamples, bin, samplesIn(res, bin, true))
	}
	assertNoName(t, res, "first_hot", "second_hot")
	// perf's cache still has it.
	res = w.analyze(data, Options{Lookup: buildidcache.Options{BuildIDDir: w.cache()}})
	mustDSO(t, res, bin, Verified)
	assertName(t, res, "first_hot")
}

const libV1 = `
volatile unsigned long lsink;
__attribute__((noinline)) void lib_old_work(long n) { for (long i = 0; i < n; i++) lsink += i * 3; }
`
const libV2 = `
volatile unsigned long lsink;
__attribute__((noinline)) void lib_new_pad(void) { for (int i = 0; i < 5; i++) lsink ^= i; }
__attribute__((noinline)) void lib_new_work(long n) { for (long i = 0; i < n; i++) lsink -= i; lib_new_pad(); }
void lib_old_work(long n) { lib_new_work(n); }
`
const libMain = `
#include <stdlib.h>
void lib_old_work(long n);
volatile unsigned long sink;
__attribute__((noinline)) void main_loop(long n) { for (long i = 0; i < n; i++) sink += i; }
int main(int argc, char **argv) { lib_old_work(100000000); main_loop(60000000); return 0; }
`

func TestRealSharedLibraryReplaced(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	lib := w.path("libwork.so")
	bin := w.path("app")
	w.gcc(lib, libV1, "-shared", "-fPIC")
	w.gcc(bin, libMain, "-L"+w.dir, "-lwork", "-Wl,-rpath,"+w.dir)
	data := w.record("lib.data", nil, bin)
	comparePerfReport(t, w, data, w.analyze(data, Options{}))
	w.gcc(lib, libV2, "-shared", "-fPIC")
	res := w.analyze(data, Options{})
	mustDSO(t, res, lib, Mismatch)
	mustDSO(t, res, bin, Verified)
	inLib := samplesIn(res, lib, false)
	if inLib == 0 {
		t.Fatal("no sample in the library")
	}
	if res.UntrustedAnySamples != inLib {
		t.Errorf("untrusted samples %d, samples through the library %d", res.UntrustedAnySamples, inLib)
	}
	assertName(t, res, "main_loop")
	assertNoName(t, res, "lib_new_work", "lib_new_pad")
}

func TestRealBuildIDMmap(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	bin := w.path("busy")
	w.gcc(bin, busyV1)
	data := w.record("bidmmap.data", []string{"--buildid-mmap"}, bin)
	// perf record --buildid-mmap does not fill the cache (the build-ids are
	// in the records); do what a careful user does before a deploy.
	w.run(nil, "perf", "buildid-cache", "-a", bin)
	w.gcc(bin, busyV2)
	res := w.analyze(data, Options{})
	d := mustDSO(t, res, bin, Mismatch)
	if d.BuildIDSource != "mmap2" {
		t.Errorf("build-id source %q, want mmap2", d.BuildIDSource)
	}
	assertNoName(t, res, v2Names...)
	res = w.analyze(data, Options{Lookup: buildidcache.Options{BuildIDDir: w.cache()}})
	mustDSO(t, res, bin, Verified)
	assertName(t, res, "first_hot")
}

// Pipe and -z recordings. perf 6.1 writes no build-id table for them (its
// header lists BUILD_ID among the missing features and perf buildid-list
// prints blanks), so identity falls back to MMAP2's device and inode:
// unverified while the file is the same, replaced after a rebuild.
func TestRealPipeAndCompressed(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	bin := w.path("busy")
	w.gcc(bin, busyV1)
	pipeData := w.path("pipe.data")
	w.run(nil, "sh", "-c", "perf record -q -e cpu-clock -F 2000 -g -o - -- "+bin+" > "+pipeData)
	z := w.record("z.data", []string{"-z"}, bin)
	time.Sleep(20 * time.Millisecond)
	for _, data := range []string{pipeData, z} {
		res := w.analyze(data, Options{})
		d := mustDSO(t, res, bin, Unverified)
		if d.BuildID != nil || d.Dev == nil || !strings.Contains(d.Reason, "no build-id table") {
			t.Errorf("%s: %+v", data, d)
		}
		assertName(t, res, "first_hot")
		if res.TrustedSamples != res.Samples || res.Samples == 0 {
			t.Errorf("%s: %s", data, res.Report().Summary())
		}
	}
	w.gcc(bin, busyV2)
	for _, data := range []string{pipeData, z} {
		res := w.analyze(data, Options{})
		mustDSO(t, res, bin, Replaced)
		assertNoName(t, res, append(v2Names, "first_hot")...)
		if res.TrustedSamples == res.Samples {
			t.Errorf("%s after the rebuild: %s", data, res.Report().Summary())
		}
	}
	// The stream itself, through a reader.
	f, err := os.Open(pipeData)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := Analyze(context.Background(), Stream(f, "stdin"), withSystemSymbols(Options{}))
	if err != nil {
		t.Fatal(err)
	}
	mustDSO(t, res, bin, Replaced)
}

const parentSrc = `
#include <stdlib.h>
#include <unistd.h>
#include <sys/wait.h>
volatile unsigned long sink;
__attribute__((noinline)) void parent_spin(long n) { for (long i = 0; i < n; i++) sink += i; }
int main(int argc, char **argv) {
	parent_spin(60000000);
	pid_t p = fork();
	if (p == 0) { execl(argv[1], argv[1], (char *)0); _exit(127); }
	waitpid(p, 0, 0);
	parent_spin(30000000);
	return 0;
}
`
const childSrc = `
volatile unsigned long sink;
__attribute__((noinline)) void child_spin(long n) { for (long i = 0; i < n; i++) sink ^= i * 7; }
int main(void) { child_spin(100000000); return 0; }
`

func TestRealForkExec(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	parent, child := w.path("parent"), w.path("child")
	w.gcc(parent, parentSrc)
	w.gcc(child, childSrc)
	data := w.record("forkexec.data", nil, parent, child)
	res := w.analyze(data, Options{})
	mustDSO(t, res, parent, Verified)
	mustDSO(t, res, child, Verified)
	// Every sample in child_spin belongs to the child's binary, and none of
	// the child's samples resolves through the parent's (exec dropped it).
	for _, a := range res.Aggregates() {
		leaf := a.Stack.Locations()[0]
		for _, f := range leaf.Frames {
			if f.Function == "child_spin" && leaf.DSO.Path != child {
				t.Errorf("child_spin in %s", leaf.DSO.Path)
			}
			if f.Function == "parent_spin" && a.Comm != "parent" {
				t.Errorf("parent_spin sampled in comm %q", a.Comm)
			}
		}
	}
	assertName(t, res, "child_spin")
	assertName(t, res, "parent_spin")
	if res.TrustedSamples != res.Samples {
		t.Errorf("clean fork+exec: %s", res.Report().Summary())
	}
	// Rebuild the child only: only the child's samples become untrusted.
	w.gcc(child, busyV2)
	res = w.analyze(data, Options{})
	mustDSO(t, res, child, Mismatch)
	mustDSO(t, res, parent, Verified)
	if got, want := res.UntrustedAnySamples, samplesIn(res, child, false); got != want || got == 0 {
		t.Errorf("untrusted %d, samples in the child %d", got, want)
	}
	assertNoName(t, res, v2Names...)
}

const goV1 = `package main

import "os"

var sink int

//go:noinline
func goOldHot(n int) {
	for i := 0; i < n; i++ {
		sink += i * i
	}
}

func main() {
	goOldHot(300000000)
	os.Exit(0)
}
`

const goV2 = `package main

var sink int

//go:noinline
func goReplacementOnly(n int) {
	for i := 0; i < n; i++ {
		sink ^= i * 3
	}
}

func main() { goReplacementOnly(1000) }
`

// goBuild builds a one-file Go program with the test's own toolchain and
// build cache (HOME is the world's, so the cache must be named).
func (w *world) goBuild(out, src string, ldflags string) {
	w.t.Helper()
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		w.t.Skip("no go toolchain at GOROOT: cannot build Go workloads")
	}
	cache, err := exec.Command(goBin, "env", "GOCACHE").Output()
	if err != nil {
		w.t.Fatal(err)
	}
	d := w.path("gosrc-" + filepath.Base(out))
	os.MkdirAll(d, 0o755)
	if err := os.WriteFile(filepath.Join(d, "main.go"), []byte(src), 0o644); err != nil {
		w.t.Fatal(err)
	}
	args := []string{"build", "-o", out + ".tmp"}
	if ldflags != "" {
		args = append(args, "-ldflags="+ldflags)
	}
	args = append(args, filepath.Join(d, "main.go"))
	w.run([]string{"GOCACHE=" + strings.TrimSpace(string(cache)), "GOFLAGS=", "GO111MODULE=off", "CGO_ENABLED=0"}, goBin, args...)
	if err := os.Rename(out+".tmp", out); err != nil {
		w.t.Fatal(err)
	}
}

func TestRealGoProgram(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		ldflags  string
		before   Verdict
		after    Verdict
		goAdvice bool
	}{
		// Go ≥ 1.24 writes a GNU build-id derived from the Go build-id.
		{"gnu-build-id", "", Verified, Mismatch, false},
		// -B none: no GNU build-id, perf has nothing to record; MMAP2's
		// inode is the only evidence, and the advice names the fix.
		{"no-build-id", "-B=none", Unverified, Replaced, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			bin := w.path("goprog")
			w.goBuild(bin, goV1, tc.ldflags)
			data := w.record("go.data", nil, bin)
			res := w.analyze(data, Options{})
			d := mustDSO(t, res, bin, tc.before)
			assertName(t, res, "main.goOldHot")
			if tc.goAdvice && (d.GoBuildID == "" || !strings.Contains(d.advice, "gobuildid")) {
				t.Errorf("a Go binary without a GNU build-id must say so and name the fix: %+v", d)
			}
			if res.TrustedSamples != res.Samples {
				t.Errorf("before the rebuild: %s", res.Report().Summary())
			}
			comparePerfReport(t, w, data, res)
			w.goBuild(bin, goV2, tc.ldflags)
			res = w.analyze(data, Options{})
			d = mustDSO(t, res, bin, tc.after)
			if tc.goAdvice && !strings.Contains(d.advice, "gobuildid") {
				t.Errorf("advice after the rebuild: %q", d.advice)
			}
			if got, want := res.UntrustedAnySamples, samplesIn(res, bin, false); got != want || got == 0 {
				t.Errorf("untrusted samples %d, samples through the Go binary %d", got, want)
			}
			assertNoName(t, res, "goReplacementOnly", "goOldHot")
		})
	}
}

// A binary replaced while perf records: perf reads the header's build-ids
// at the end, from the files then on disk, so the table describes the
// replacement for both runs. MMAP2's inode tells the runs apart: the first
// run's binary must be replaced (unnamed), the second's verified.
func TestRealReplacedDuringRecording(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	bin, next := w.path("busy"), w.path("busy-next")
	w.gcc(bin, busyV1)
	w.gcc(next, busyV2)
	script := bin + " 40000000; cp " + next + " " + bin + ".new && mv " + bin + ".new " + bin + "; " + bin + " 150000000"
	data := w.record("during.data", nil, "sh", "-c", script)
	res := w.analyze(data, Options{})
	var old, cur *DSO
	for _, d := range res.DSOs {
		if d.Path != bin {
			continue
		}
		if d.Verdict == Replaced {
			old = d
		} else {
			cur = d
		}
	}
	if old == nil || cur == nil {
		t.Fatalf("want two DSOs for %s, one replaced: %+v", bin, res.Report().DSOs)
	}
	if cur.Verdict != Verified {
		t.Errorf("the running replacement: %v (%s)", cur.Verdict, cur.Reason)
	}
	// perf wrote one build-id (the replacement's) for both: the trap, not
	// the ambiguity of two build-ids.
	if len(old.Candidates) != 0 || !strings.Contains(old.Reason, "different inodes") {
		t.Errorf("reason: %s", old.Reason)
	}
	// No frame of the first run is named from the replacement.
	for _, l := range res.Locations {
		if l.DSO == old && len(l.Frames) > 0 {
			t.Errorf("a frame of the replaced run is named %s", l.Frames[0].Function)
		}
	}
	assertName(t, res, "replacement_only")
}

// jitSrc copies a tiny loop into anonymous executable memory, describes it
// in /tmp/perf-PID.map as a JIT would, and runs it.
const jitSrc = `
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/mman.h>
int main(int argc, char **argv) {
	/* mov rcx,rdi; 1: dec rcx; jnz 1b; ret */
	static const unsigned char code[] = {0x48,0x89,0xf9,0x48,0xff,0xc9,0x75,0xfb,0xc3};
	unsigned char *p = mmap(0, 4096, PROT_READ|PROT_WRITE|PROT_EXEC, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) return 1;
	memcpy(p, code, sizeof code);
	char name[64];
	snprintf(name, sizeof name, "/tmp/perf-%d.map", getpid());
	FILE *f = fopen(name, "w");
	fprintf(f, "%lx %zx jit_hot_fn\n", (unsigned long)p, sizeof code);
	fclose(f);
	printf("%d\n", getpid());
	fflush(stdout);
	((void (*)(long))p)(atol(argv[1]));
	return 0;
}
`

// recordJIT builds src (jitSrc or a variant: it prints its pid and writes
// /tmp/perf-PID.map) as name, records it, and returns the recording, the
// map file (removed when the test ends) and the program's output.
func (w *world) recordJIT(name, src string) (data, mapFile string, out []byte) {
	w.t.Helper()
	bin := w.path(name)
	w.gcc(bin, src)
	data = w.path("jit.data")
	out = w.run(nil, "perf", "record", "-q", "-e", "cpu-clock", "-F", "2000", "-g", "-o", data, "--", bin, "400000000")
	mapFile = "/tmp/perf-" + strings.TrimSpace(string(out)) + ".map"
	w.t.Cleanup(func() { os.Remove(mapFile) })
	return data, mapFile, out
}

func TestRealJITPerfMap(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	data, mapFile, out := w.recordJIT("jit", jitSrc)
	if _, err := os.Stat(mapFile); err != nil {
		t.Fatalf("the workload wrote no perf map: %v (output %q)", err, out)
	}
	res := w.analyze(data, Options{Replay: true})
	d := mustDSO(t, res, mapFile, Unverified)
	if d.Kind != dso.JIT || d.HitsLeaf == 0 {
		t.Errorf("JIT DSO: %+v", d)
	}
	assertName(t, res, "jit_hot_fn")

	// EachSample replays every sample, in time order, with its stack.
	var n uint64
	var last uint64
	err := res.EachSample(context.Background(), func(s *Sample) error {
		n++
		if s.Time < last {
			t.Errorf("sample at %d after one at %d", s.Time, last)
		}
		last = s.Time
		if s.Stack == nil || len(s.Stack.Locations()) == 0 {
			t.Error("sample without a stack")
		}
		return nil
	})
	if err != nil || n != res.Samples {
		t.Errorf("EachSample: %d samples, want %d (%v)", n, res.Samples, err)
	}

	// A map another user owns (chowned to nobody, as root can) is
	// ignored as perf ignores it: no name, and the frames untrusted.
	if os.Geteuid() == 0 {
		require.NoError(t, os.Chown(mapFile, 65534, 65534))
		res = w.analyze(data, Options{})
		d := mustDSO(t, res, mapFile, Missing)
		assert.Contains(t, d.Reason, "owned by uid 65534, not by the current user or root")
		assertNoName(t, res, "jit_hot_fn")
		assert.Positive(t, res.Report().UntrustedAnySamples)
		require.NoError(t, os.Chown(mapFile, 0, 0))
	}

	// Without its map the code is anonymous memory: no name, no verdict
	// to fail on, and the address shown raw.
	os.Remove(mapFile)
	res = w.analyze(data, Options{})
	mustDSO(t, res, "//anon", NoFile)
	assertNoName(t, res, "jit_hot_fn")
}

const vdsoSrc = `
#include <time.h>
int main(void) {
	struct timespec ts;
	long sum = 0;
	for (long i = 0; i < 4000000; i++) { clock_gettime(CLOCK_MONOTONIC, &ts); sum += ts.tv_nsec; }
	return sum == 42;
}
`

// [vdso] frames: perf records the vdso's build-id and caches the image;
// either the cache or the running vdso (same kernel) verifies it, and its
// functions are named.
func TestRealVDSO(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	bin := w.path("clock")
	w.gcc(bin, vdsoSrc)
	data := w.record("vdso.data", nil, bin)
	for i, opts := range []Options{{Lookup: buildidcache.Options{BuildIDDir: w.cache()}}, {}} {
		res := w.analyze(data, opts)
		d := mustDSO(t, res, "[vdso]", Verified)
		if want := []string{"perf-cache", "running-vdso"}[i]; d.Source != want {
			t.Errorf("vdso verified by %s, want %s", d.Source, want)
		}
		if d.HitsAny == 0 {
			t.Fatal("no sample in the vdso")
		}
		named := false
		for _, l := range res.Locations {
			if l.DSO == d && len(l.Frames) > 0 && strings.Contains(l.Frames[len(l.Frames)-1].Function, "clock_gettime") {
				named = true
			}
		}
		if !named {
			t.Errorf("source %s: no vdso frame named *clock_gettime*", d.Source)
		}
	}
}

// A deleted binary that a debuginfod server holds is verified through it,
// and named from the download.
func TestRealDeletedBinaryDebuginfod(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	bin := w.path("busy")
	w.gcc(bin, busyV1)
	data := w.record("deleted.data", nil, bin)
	srv := w.path("served")
	os.MkdirAll(srv, 0o755)
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(srv, "busy"), b, 0o755)
	os.Remove(bin)

	before := w.analyze(data, Options{})
	d := mustDSO(t, before, bin, Missing)
	url := fixtures.Debuginfod(t, srv, d.BuildID.String())
	resolver := &resolverLocator{r: buildidcache.New(buildidcache.Options{
		BuildIDDir: "-", DebugDirs: []string{}, DebuginfodURLs: []string{url},
		DebuginfodCache: filepath.Join(w.dir, "dcache")})}
	res := w.analyze(data, Options{locator: resolver})
	d = mustDSO(t, res, bin, Verified)
	if d.Source != "debuginfod" {
		t.Errorf("source %q, want debuginfod", d.Source)
	}
	if res.TrustedSamples != res.Samples {
		t.Errorf("%s", res.Report().Summary())
	}
	assertName(t, res, "first_hot")
}

// scriptSample is one sample as perf script prints it: who, when (ns),
// and the user frames "dso-basename+0xaddr", leaf first (inlined lines
// dropped: they repeat an address).
type scriptSample struct {
	tid    int32
	time   uint64
	frames []string
}

// sampleKey identifies a sample across perf script and perfcheck: the
// thread and the nanosecond it was taken.
type sampleKey struct {
	tid  int32
	time uint64
}

// perfScriptStacks returns every sample perf script prints, in its order.
// Each sample is a header line "tid sec.nsec:" followed by its callchain
// lines; a sample whose callchain is empty is a header alone, so samples
// are counted by headers, not by blank-line separated blocks.
func perfScriptStacks(t *testing.T, w *world, data string) []scriptSample {
	t.Helper()
	out := w.output("perf", "script", "-i", data, "-F", "tid,time,ip,dso", "--ns", "--no-inline")
	var samples []scriptSample
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	head := regexp.MustCompile(`^\s*(\d+)\s+(\d+)\.(\d{9}):\s*$`)
	// A pipe-format recording's callchain lines carry the symbol too:
	// perf script prints sym with a callchain whatever -F says there.
	frame := regexp.MustCompile(`^\s*([0-9a-f]+)\s+(?:.*\s)?\(([^()]*)\)\s*$`)
	for sc.Scan() {
		l := sc.Text()
		if m := head.FindStringSubmatch(l); m != nil {
			tid, _ := strconv.ParseInt(m[1], 10, 32)
			sec, _ := strconv.ParseUint(m[2], 10, 64)
			ns, _ := strconv.ParseUint(m[3], 10, 64)
			samples = append(samples, scriptSample{tid: int32(tid), time: sec*1e9 + ns})
			continue
		}
		m := frame.FindStringSubmatch(l)
		if m == nil {
			if strings.TrimSpace(l) != "" {
				t.Fatalf("perf script printed a line neither a sample header nor a frame: %q", l)
			}
			continue
		}
		if len(samples) == 0 {
			t.Fatalf("perf script printed a frame before any sample header: %q", l)
		}
		if strings.HasPrefix(m[2], "[kernel") || m[2] == "[unknown]" {
			continue
		}
		cur := &samples[len(samples)-1]
		cur.frames = append(cur.frames, dso.BaseName(m[2])+"+0x"+strings.TrimLeft(m[1], "0"))
	}
	return samples
}

// --call-graph dwarf: the user callers are recovered from the stack copies
// with the binaries' CFI, frame for frame as perf script shows them.
func TestRealDwarfUnwind(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	lib, bin, data := w.dwarfApp()
	res := w.analyze(data, Options{Replay: true})
	d := mustDSO(t, res, bin, Verified)
	// The program calls the library: its main is a caller in the
	// library's samples, which only unwinding can show.
	if d.HitsAny <= d.HitsLeaf || samplesIn(res, lib, true) == 0 {
		t.Errorf("%s seen only as a leaf: hits %d/%d", bin, d.HitsLeaf, d.HitsAny)
	}
	if rep := res.Report(); len(rep.Notes) != 0 {
		t.Errorf("notes: %v", rep.Notes)
	}
	want := perfScriptStacks(t, w, data)
	perfByKey := map[sampleKey][]string{}
	for _, s := range want {
		k := sampleKey{s.tid, s.time}
		if _, dup := perfByKey[k]; dup {
			t.Fatalf("perf script shows two samples of thread %d at %d ns", s.tid, s.time)
		}
		perfByKey[k] = s.frames
	}
	// The same samples, matched by thread and time: a count alone would
	// let one sample dropped and another invented pass.
	seen := map[sampleKey]bool{}
	var extra []string
	same, compared := 0, 0
	res.EachSample(context.Background(), func(s *Sample) error {
		var got []string
		var locs []string
		for _, l := range s.Stack.Locations() {
			locs = append(locs, l.String())
			if l.DSO.Kind == dso.Kernel || l.DSO.Kind == dso.Unknown {
				continue
			}
			got = append(got, dso.BaseName(l.DSO.Path)+"+0x"+strconv.FormatUint(l.Offset, 16))
		}
		k := sampleKey{int32(s.TID), s.Time}
		wnt, ok := perfByKey[k]
		if !ok {
			extra = append(extra, fmt.Sprintf("tid %d pid %d time %d: %v", s.TID, s.PID, s.Time, locs))
			return nil
		}
		if seen[k] {
			t.Errorf("perfcheck shows two samples of thread %d at %d ns", s.TID, s.Time)
		}
		seen[k] = true
		// perf unwinds to the end of the copy; perfcheck stops where a
		// binary is not proven (none here) or the CFI ends, so compare the
		// frames perfcheck gives.
		if len(wnt) == 0 {
			return nil // a kernel-only sample: nothing to unwind
		}
		compared++
		if len(got) >= min(len(wnt), 3) && len(wnt) >= len(got) && strings.Join(got, " ") == strings.Join(wnt[:len(got)], " ") {
			same++
		} else if compared-same <= 3 {
			t.Logf("sample tid %d time %d: perf %v\n\t\tperfcheck %v", s.TID, s.Time, wnt, got)
		}
		return nil
	})
	var missing []string
	for _, s := range want {
		if !seen[sampleKey{s.tid, s.time}] {
			missing = append(missing, fmt.Sprintf("tid %d time %d: %v", s.tid, s.time, s.frames))
		}
	}
	if len(extra) != 0 || len(missing) != 0 || uint64(len(want)) != res.Samples {
		t.Fatalf("perf script shows %d samples, perfcheck %d;\nonly perfcheck: %v\nonly perf script: %v", len(want), res.Samples, extra, missing)
	}
	t.Logf("%d of %d samples unwound as perf does", same, compared)
	if same < compared*95/100 {
		t.Errorf("%d of %d samples unwound as perf does", same, compared)
	}

	// Replace the library: its unwind tables are no longer the ones that
	// ran, so unwinding stops at it (the samples say so) rather than
	// inventing callers, and nothing of the new library is named.
	inLib := samplesIn(res, lib, true)
	w.gcc(lib, libV2, "-shared", "-fPIC", "-fomit-frame-pointer")
	res = w.analyze(data, Options{})
	mustDSO(t, res, lib, Mismatch)
	if res.UnprovenUnwinds < inLib || len(res.Report().Notes) == 0 {
		t.Errorf("after replacing the library: %d unwinds stopped at an unproven binary, %d samples have their leaf in it; notes %v",
			res.UnprovenUnwinds, inLib, res.Report().Notes)
	}
	assertNoName(t, res, "lib_new_work", "lib_new_pad")
}

// With CLOCK_DATA (perf record -k), perf time converts to wall time: a
// binary without a build-id that is modified after it was mapped is
// replaced, and the reason says when it was mapped.
func TestRealClockDataMtime(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	bin := w.path("nobid")
	w.gcc(bin, busyV1, "-Wl,--build-id=none")
	before := time.Now()
	data := w.record("clock.data", []string{"-k", "CLOCK_MONOTONIC"}, bin)
	res := w.analyze(data, Options{})
	d := mustDSO(t, res, bin, Unverified)
	if d.BuildID != nil || !strings.Contains(d.advice, "--build-id") {
		t.Errorf("a C binary without a build-id: %+v", d)
	}
	f, err := perfdata.Open(data)
	if err != nil {
		t.Fatal(err)
	}
	cd, err := f.Features().ClockData()
	f.Close()
	if err != nil {
		t.Skipf("perf wrote no CLOCK_DATA with -k: %v", err)
	}
	// The mapping's wall time lies within the test's run.
	o := recInfo{clock: &cd}
	mapped, ok := o.wallTime(d.firstTime)
	if !ok || mapped.Before(before.Add(-time.Second)) || mapped.After(time.Now()) {
		t.Errorf("mapped at %v (ok %v), the test started at %v", mapped, ok, before)
	}
	// Touch it: same inode, newer mtime.
	now := time.Now()
	if err := os.Chtimes(bin, now, now); err != nil {
		t.Fatal(err)
	}
	res = w.analyze(data, Options{})
	d = mustDSO(t, res, bin, Replaced)
	if !strings.Contains(d.Reason, "after it was mapped") {
		t.Errorf("reason: %s", d.Reason)
	}
	assertNoName(t, res, "first_hot")
}
