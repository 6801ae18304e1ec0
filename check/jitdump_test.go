package check

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/perfcheck/perfcheck/buildid"
	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/perfdata"
	"github.com/stretchr/testify/require"
)

// perf's jitdump path, end to end with real tools: testdata/jit/jitprog.c
// is a tiny JIT (two x86-64 loops copied into anonymous executable memory)
// that writes jit-PID.dump as tools/perf/Documentation/
// jitdump-specification.txt describes and maps it once as perf's marker.
// `perf record -k mono` records it; `perf inject --jit` turns each
// JIT_CODE_LOAD into a jitted-PID-N.so ELF file beside the dump, adds it
// to the build-id cache (a hard link, as perf's build-id cache does) and
// injects an MMAP2 record for it with its build-id in the header table
// (jit_repipe_code_load in tools/perf/util/jitdump.c). From then on the
// jitted code is an ordinary DSO and must be judged like one.

// jitNames are the functions jitprog.c generates, by code_index: perf
// inject names the file of index N jitted-PID-N.so.
var jitNames = []string{"jit_alpha_loop", "jit_beta_loop"}

type jitWorld struct {
	*world
	dir  string // where jitprog writes its dump and perf inject its .so files
	pid  int
	raw  string // perf record's output
	sos  []string
	bids []buildid.ID // recorded build-id of sos[i], from the injected file's table
}

// newestJITDump returns the jit-PID.dump jitprog wrote in dir last, in a
// one-element slice, and removes the others: when perf died, the
// recording was made again, and each run of jitprog wrote its own.
func newestJITDump(t *testing.T, dir string) []string {
	t.Helper()
	dumps, _ := filepath.Glob(filepath.Join(dir, "jit-*.dump"))
	if len(dumps) == 0 {
		t.Fatalf("jitprog wrote no jit-PID.dump in %s", dir)
	}
	newest, when := "", time.Time{}
	for _, d := range dumps {
		st, err := os.Stat(d)
		require.NoError(t, err)
		if newest == "" || st.ModTime().After(when) {
			newest, when = d, st.ModTime()
		}
	}
	for _, d := range dumps {
		if d != newest {
			require.NoError(t, os.Remove(d))
		}
	}
	return []string{newest}
}

func newJITWorld(t *testing.T) *jitWorld {
	if runtime.GOARCH != "amd64" {
		t.Skip("jitprog generates x86-64 code")
	}
	src, err := os.ReadFile("../testdata/jit/jitprog.c")
	if err != nil {
		t.Skipf("testdata/jit/jitprog.c: %v", err)
	}
	w := newWorld(t) // skips without perf or gcc
	j := &jitWorld{world: w, dir: w.path("jit")}
	if err := os.Mkdir(j.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	prog := w.path("jitprog")
	w.gcc(prog, string(src))
	// -k mono: perf inject refuses a jitdump whose timestamps are not the
	// samples' clock ("jitted code must be sampled with perf record -k 1").
	j.raw = w.record("jit.data", []string{"-k", "mono"}, prog, j.dir, "0.3")
	dumps := newestJITDump(t, j.dir)
	j.pid, err = strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(dumps[0]), "jit-"), ".dump"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range jitNames {
		j.sos = append(j.sos, filepath.Join(j.dir, "jitted-"+strconv.Itoa(j.pid)+"-"+strconv.Itoa(i)+".so"))
	}
	return j
}

// inject runs perf inject --jit on the raw recording and returns the
// output's path; it records the jitted files' build-ids from its table.
func (j *jitWorld) inject(name string) string {
	j.t.Helper()
	out := j.path(name)
	j.run(nil, "perf", "inject", "--jit", "-i", j.raw, "-o", out)
	for _, so := range j.sos {
		if _, err := os.Stat(so); err != nil {
			j.t.Fatalf("perf inject --jit did not write %s: %v", so, err)
		}
	}
	f, err := perfdata.Open(out)
	if err != nil {
		j.t.Fatal(err)
	}
	defer f.Close()
	table, err := f.BuildIDs()
	if err != nil {
		j.t.Fatal(err)
	}
	j.bids = make([]buildid.ID, len(j.sos))
	for _, e := range table {
		for i, so := range j.sos {
			if e.Filename == so {
				j.bids[i] = e.BuildID
			}
		}
	}
	for i, b := range j.bids {
		if len(b) == 0 {
			j.t.Fatalf("%s: no build-id for %s in its table", out, j.sos[i])
		}
	}
	return out
}

// perfLeafCounts counts the samples of data by the symbol perf script
// names at their leaf (-G hides the callchain: one line per sample).
func (j *jitWorld) perfLeafCounts(data string) map[string]int {
	j.t.Helper()
	out := j.output("perf", "script", "-i", data, "-F", "ip,sym", "-G")
	counts := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) >= 2 {
			counts[f[1]]++
		}
	}
	return counts
}

// perfReportDSOs maps each symbol perf report lists (--sort dso,sym) to
// its DSO's short name.
func (j *jitWorld) perfReportDSOs(data string) map[string]string {
	j.t.Helper()
	out := j.output("perf", "report", "-i", data, "--no-children", "--stdio", "-q", "--sort", "dso,sym", "-g", "none")
	re := regexp.MustCompile(`^\s*[0-9.]+%\s+(\S+)\s+\[[.k]\]\s+(\S+)`)
	m := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if s := re.FindStringSubmatch(sc.Text()); s != nil {
			m[s[2]] = s[1]
		}
	}
	return m
}

// jitSelf returns the top entries of res for the JIT names, by name.
func jitSelf(t *testing.T, res *Result) map[string]TopEntry {
	t.Helper()
	tables := Top(res, TopOptions{})
	if len(tables) != 1 {
		t.Fatalf("%d top tables, want 1 (cpu-clock)", len(tables))
	}
	m := map[string]TopEntry{}
	for _, e := range tables[0].Entries {
		for _, n := range jitNames {
			if e.Name == n {
				m[n] = e
			}
		}
	}
	return m
}

// scriptLeaves counts samples by the leaf location as perfcheck script
// prints it (Location.String).
func scriptLeaves(t *testing.T, res *Result) map[string]int {
	t.Helper()
	m := map[string]int{}
	if err := res.EachSample(context.Background(), func(s *Sample) error {
		if len(s.Stack.Locations()) > 0 {
			m[s.Stack.Locations()[0].String()]++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestRealJitdump(t *testing.T) {
	t.Parallel()
	j := newJITWorld(t)
	emptyCache := t.TempDir()

	// Before perf inject the JIT code is anonymous memory: no file, no
	// identity, no name (jitprog writes no /tmp/perf-PID.map).
	t.Run("raw", func(t *testing.T) {
		res := analyzeT(t, j.raw, Options{Lookup: buildidcache.Options{BuildIDDir: j.cache()}, JITMapDir: t.TempDir()})
		anon := mustDSO(t, res, "//anon", NoFile)
		if anon.HitsLeaf == 0 {
			t.Errorf("no sample in the JIT's anonymous memory: %s", res.Report().Summary())
		}
		assertNoName(t, res, jitNames...)
	})

	data := j.inject("jit-injected.data")

	t.Run("injected", func(t *testing.T) {
		res := analyzeT(t, data, Options{Lookup: buildidcache.Options{BuildIDDir: j.cache()}})
		// script reads the samples again: a Result with Options.Replay
		// (which keeps no aggregates for top).
		replay := analyzeT(t, data, Options{Lookup: buildidcache.Options{BuildIDDir: j.cache()}, Replay: true})
		for i, so := range j.sos {
			d := mustDSO(t, res, so, Verified)
			if d.BuildIDSource != "header" || d.BuildID.String() != j.bids[i].String() {
				t.Errorf("%s: build-id %s from %q, want %s from the header", so, d.BuildID, d.BuildIDSource, j.bids[i])
			}
			// perf inject put them in perf's cache; that is where the
			// lookup order (docs/buildidcache.md) finds them first.
			if d.Source != "perf-cache" || !strings.HasPrefix(d.FoundPath, j.cache()+"/") {
				t.Errorf("%s: found at %s (%s), want perf's cache %s", so, d.FoundPath, d.Source, j.cache())
			}
		}
		if res.TrustedSamples != res.Samples {
			t.Errorf("every binary is verified, yet: %s", res.Report().Summary())
		}

		// top and script name the JIT functions, each in its own file,
		// exactly as often as perf script names them at the leaf.
		perfLeaves := j.perfLeafCounts(data)
		top := jitSelf(t, res)
		leaves := scriptLeaves(t, replay)
		for i, n := range jitNames {
			e, ok := top[n]
			if !ok {
				t.Errorf("top does not list %s", n)
				continue
			}
			if e.DSO.Path != j.sos[i] {
				t.Errorf("top: %s in %s, want %s", n, e.DSO.Path, j.sos[i])
			}
			if e.SelfSamples == 0 || int(e.SelfSamples) != perfLeaves[n] {
				t.Errorf("%s: %d samples in top, perf script names it at %d leaves", n, e.SelfSamples, perfLeaves[n])
			}
			if got := leaves[n+" ("+j.sos[i]+")"]; got != perfLeaves[n] {
				t.Errorf("script: %s at %d leaves, perf script %d", n, got, perfLeaves[n])
			}
		}
		// The two loops are the hottest functions, as perf report says,
		// each share to the hundredth of a percent.
		comparePerfReport(t, j.world, data, res)
		dsos := j.perfReportDSOs(data)
		for i, n := range jitNames {
			if dsos[n] != filepath.Base(j.sos[i]) {
				t.Errorf("perf report: %s in %q, want %s", n, dsos[n], filepath.Base(j.sos[i]))
			}
		}
	})

	t.Run("without-cache", func(t *testing.T) {
		// The files perf inject wrote beside the dump verify too.
		res := analyzeT(t, data, Options{Lookup: buildidcache.Options{BuildIDDir: emptyCache}})
		for _, so := range j.sos {
			if d := mustDSO(t, res, so, Verified); d.Source != "path" {
				t.Errorf("%s: source %q, want path", so, d.Source)
			}
		}
		for _, n := range jitNames {
			assertName(t, res, n)
		}
	})

	// Delete the jitted files beside the dump: perf's cache still holds
	// them (hard links), so nothing is lost; without the cache they are
	// missing and never named.
	for _, so := range j.sos {
		if err := os.Remove(so); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("files-deleted", func(t *testing.T) {
		res := analyzeT(t, data, Options{Lookup: buildidcache.Options{BuildIDDir: j.cache()}})
		for _, so := range j.sos {
			if d := mustDSO(t, res, so, Verified); d.Source != "perf-cache" {
				t.Errorf("%s: source %q, want perf-cache", so, d.Source)
			}
		}
		res = analyzeT(t, data, Options{Lookup: buildidcache.Options{BuildIDDir: emptyCache}})
		assertJITMissing(t, j, res)
	})

	// Then empty perf's cache of them too (the .build-id link and the
	// entry directory, as perf buildid-cache --remove does): missing with
	// the cache as well, and perf report has no name for them either.
	for i, so := range j.sos {
		hex := j.bids[i].String()
		for _, p := range []string{
			filepath.Join(j.cache(), ".build-id", hex[:2], hex[2:]),
			filepath.Join(j.cache(), so),
		} {
			if err := os.RemoveAll(p); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Run("cache-emptied", func(t *testing.T) {
		res := analyzeT(t, data, Options{Lookup: buildidcache.Options{BuildIDDir: j.cache()}})
		replay := analyzeT(t, data, Options{Lookup: buildidcache.Options{BuildIDDir: j.cache()}, Replay: true})
		assertJITMissing(t, j, res)
		perfLeaves := j.perfLeafCounts(data)
		for _, n := range jitNames {
			if perfLeaves[n] != 0 {
				t.Errorf("perf script still names %s (%d samples): the test did not remove every copy", n, perfLeaves[n])
			}
		}
		for k := range scriptLeaves(t, replay) {
			if strings.Contains(k, "jitted-") && !strings.HasSuffix(k, " [missing]") {
				t.Errorf("script leaf %q in a jitted file is not marked missing", k)
			}
		}
	})

	t.Run("reinjected", func(t *testing.T) { testReinjected(t, j) })
}

// testReinjected: perf inject --jit writes jitted-PID-N.so with
// open(O_TRUNC) over any earlier file of that name (jit_emit_elf), and the
// build-id cache entry it made for the earlier one is a hard link to the
// same inode. When perf builds the ELF with a random build-id (genelf.c
// without libcrypto: BUILD_ID_URANDOM; Debian's perf 6.1 does), injecting
// the same recording twice replaces the first output's binaries in both
// places: the first injected file must then be a mismatch, never named,
// and perf report must agree that its names are gone. With a deterministic
// build-id the rewrite changes nothing and both stay verified. Filling the
// cache after an injection (private copies) protects it from the next.
func testReinjected(t *testing.T, j *jitWorld) {
	first := j.inject("first.data")
	firstIDs := append([]buildid.ID(nil), j.bids...)
	res := analyzeT(t, first, Options{Lookup: buildidcache.Options{BuildIDDir: j.cache()}})
	for _, so := range j.sos {
		mustDSO(t, res, so, Verified)
	}
	second := j.inject("second.data")
	res2 := analyzeT(t, second, Options{Lookup: buildidcache.Options{BuildIDDir: j.cache()}})
	for _, so := range j.sos {
		mustDSO(t, res2, so, Verified)
	}
	for _, n := range jitNames {
		assertName(t, res2, n)
	}

	random := firstIDs[0].String() != j.bids[0].String()
	t.Logf("perf's jitted build-ids: first %v, second %v (random: %v)", firstIDs, j.bids, random)
	res = analyzeT(t, first, Options{Lookup: buildidcache.Options{BuildIDDir: j.cache()}})
	if !random {
		for _, so := range j.sos {
			mustDSO(t, res, so, Verified)
		}
		return
	}
	for i, so := range j.sos {
		d := mustDSO(t, res, so, Mismatch)
		if d.FoundBuildID.String() != j.bids[i].String() {
			t.Errorf("%s: found build-id %s, want the second injection's %s", so, d.FoundBuildID, j.bids[i])
		}
	}
	assertNoName(t, res, jitNames...)
	perfLeaves := j.perfLeafCounts(first)
	for _, n := range jitNames {
		if perfLeaves[n] != 0 {
			t.Errorf("perf script names %s in the first injection (%d samples) from a file with another build-id", n, perfLeaves[n])
		}
	}

	// The remedy: `perfcheck cache fill` (Cache.AddRecordedMapping, copying by
	// default) on the second injection turns perf's hard-linked entries
	// into private copies; a third injection rewrites the files beside
	// the dump again, and the second injection stays verified, named by
	// perfcheck and by perf report from the cache.
	secondIDs := append([]buildid.ID(nil), j.bids...)
	r := buildidcache.New(buildidcache.Options{BuildIDDir: j.cache(), DebugDirs: []string{}, DebuginfodURLs: []string{}})
	defer r.Close()
	c := &buildidcache.Cache{Dir: j.cache(), DebugDirs: []string{}}
	for i, so := range j.sos {
		e, err := c.AddRecordedMapping(r, so, []int{j.pid}, secondIDs[i], nil)
		if err != nil {
			t.Fatalf("fill %s: %v", so, err)
		}
		if !e.Unshared {
			t.Errorf("%s: perf inject's cache entry was not a hard link, or was not copied: %+v", so, e)
		}
	}
	j.inject("third.data")
	res2 = analyzeT(t, second, Options{Lookup: buildidcache.Options{BuildIDDir: j.cache()}})
	for _, so := range j.sos {
		if d := mustDSO(t, res2, so, Verified); d.Source != "perf-cache" {
			t.Errorf("%s: source %q, want perf-cache", so, d.Source)
		}
	}
	perfLeaves = j.perfLeafCounts(second)
	for _, n := range jitNames {
		assertName(t, res2, n)
		if perfLeaves[n] == 0 {
			t.Errorf("perf script does not name %s in the second injection from the filled cache", n)
		}
	}
}

// analyzeT is world.analyze failing t, the (sub)test that asks.
func analyzeT(t *testing.T, data string, opts Options) *Result {
	t.Helper()
	res, err := Analyze(context.Background(), Path(data), withSystemSymbols(opts))
	if err != nil {
		t.Fatalf("Analyze %s: %v", data, err)
	}
	return res
}

func assertJITMissing(t *testing.T, j *jitWorld, res *Result) {
	t.Helper()
	var inJIT uint64
	for _, so := range j.sos {
		d := mustDSO(t, res, so, Missing)
		if d.advice == "" {
			t.Errorf("%s: missing without advice", so)
		}
		inJIT += samplesIn(res, so, true)
	}
	if inJIT == 0 || res.UntrustedLeafSamples < inJIT {
		t.Errorf("%d samples with a jitted leaf, untrusted leaves %d", inJIT, res.UntrustedLeafSamples)
	}
	assertNoName(t, res, jitNames...)
}
