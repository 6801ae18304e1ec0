package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/check"
	"github.com/perfcheck/perfcheck/internal/fixtures"
	"github.com/perfcheck/perfcheck/symbolize"
)

// sampleLineRE is perf script's default sample line: comm, tid (or
// pid/tid), [cpu], time, period, event, and the frame when no callchain
// follows.
var sampleLineRE = regexp.MustCompile(`^(\S.*?|\s+\S.*?)\s+(\d+)(?:/(\d+))?\s+(?:\[(\d+)\]\s+)?(\d+\.\d+):\s+(\d+)\s+(\S+):(?:\s+(.*))?$`)

// parsedSample is a sample of perf script's default text, read with the
// grammar alone.
type parsedSample struct {
	comm, event string
	period      uint64
	frames      []perfFrame // leaf first
	chain       bool        // the frames are a callchain, not the sample line's
}

// parseDefaultScript reads perf script's default text (perf's or
// perfcheck's) into samples, failing on a line outside the grammar.
func parseDefaultScript(t *testing.T, out string) []parsedSample {
	t.Helper()
	var ps []parsedSample
	for i, s := range splitScript(out) {
		m := sampleLineRE.FindStringSubmatch(s.head)
		require.NotNil(t, m, "sample %d: %q is not a perf script sample line", i, s.head)
		p := parsedSample{comm: strings.TrimSpace(m[1]), event: m[7]}
		var err error
		p.period, err = strconv.ParseUint(m[6], 10, 64)
		require.NoError(t, err)
		frames := s.frames
		if p.chain = m[8] == ""; !p.chain {
			frames = []string{m[8]}
		}
		for _, f := range frames {
			pf, ok := parseScriptFrame(f)
			require.True(t, ok, "sample %d: frame %q is not in perf script's grammar", i, f)
			p.frames = append(p.frames, pf)
		}
		ps = append(ps, p)
	}
	return ps
}

// foldParsed folds samples of the first event met as stackcollapse-perf.pl
// documents its defaults: the comm (spaces as "_") as the root frame, each
// frame's symbol without +0xOFF, "[unknown]" as "[DSO base name]", ";" as
// ":", argument lists cut unless the name is a Go method, quotes dropped;
// only samples with a callchain (stackcollapse reads no frame off a sample
// line). Written here from that description, to check --folded without
// FlameGraph installed: it checks that every stack and weight is folded,
// not the rules themselves, which it shares with foldedFrame; those are
// checked against hand-folded names (TestFoldedFrameRules,
// TestFoldedGolden).
func foldParsed(ps []parsedSample, byCount bool) map[string]uint64 {
	out := map[string]uint64{}
	event := ""
	for _, p := range ps {
		if event == "" {
			event = p.event
		}
		if p.event != event || !p.chain {
			continue
		}
		parts := []string{strings.ReplaceAll(p.comm, " ", "_")}
		for i := len(p.frames) - 1; i >= 0; i-- {
			f := p.frames[i]
			name := f.sym
			if name == "[unknown]" {
				if f.dso != "[unknown]" {
					name = "[" + f.dso[strings.LastIndexByte(f.dso, '/')+1:] + "]"
				}
			} else {
				name = strings.ReplaceAll(name, ";", ":")
				if !regexp.MustCompile(`\.\(.*\)\.`).MatchString(name) {
					if j := strings.IndexByte(name, '('); j >= 0 && !strings.HasPrefix(name[j:], "(anonymous namespace)") {
						name = name[:j]
					}
				}
				name = strings.NewReplacer(`"`, "", `'`, "").Replace(name)
			}
			parts = append(parts, name)
		}
		w := p.period
		if byCount {
			w = 1
		}
		out[strings.Join(parts, ";")] += w
	}
	return out
}

// parseFolded reads "stack weight" lines.
func parseFolded(t *testing.T, out string) map[string]uint64 {
	t.Helper()
	m := map[string]uint64{}
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if l == "" {
			continue
		}
		i := strings.LastIndexByte(l, ' ')
		require.Positive(t, i, "folded line %q", l)
		w, err := strconv.ParseUint(l[i+1:], 10, 64)
		require.NoError(t, err, "folded line %q", l)
		m[l[:i]] += w
	}
	return m
}

// mismatchSymFS is a --symfs root in which the fixtures' libhot.so is
// another binary (cshared): libhot.so is mismatch, as a library replaced
// after the recording.
func mismatchSymFS(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	dst := filepath.Join(root, recordedBin)
	require.NoError(t, os.MkdirAll(dst, 0o755))
	bin := filepath.Join(fixtures.Dir(), "bin")
	ents, err := os.ReadDir(bin)
	require.NoError(t, err)
	for _, e := range ents {
		src := filepath.Join(bin, e.Name())
		if e.Name() == "libhot.so" {
			src = filepath.Join(bin, "cshared")
		}
		require.NoError(t, os.Symlink(src, filepath.Join(dst, e.Name())))
	}
	for _, d := range []string{"usr", "lib", "lib64"} {
		if _, err := os.Stat("/" + d); err == nil {
			require.NoError(t, os.Symlink("/"+d, filepath.Join(root, d)))
		}
	}
	return root
}

func sum(m map[string]uint64) (s uint64) {
	for _, v := range m {
		s += v
	}
	return s
}

// --folded is perfcheck script's own text folded: on every committed
// recording with callchains, with the fixtures' binaries in place and with
// libhot.so mismatched, the stacks and weights equal those folded from the
// default text by the rules of stackcollapse-perf.pl (foldParsed); the
// weights add up to the event's total period (--count: its samples), which
// is the total of perf script's own sample lines.
func TestFoldedIsTheScriptFolded(t *testing.T) {
	roots := map[string]string{"symfs": ckSymfs(t), "libhot mismatch": mismatchSymFS(t)}
	for _, data := range ckFixtures(t) {
		for what, root := range roots {
			t.Run(filepath.Base(data)+" "+what, func(t *testing.T) {
				args := append(append([]string{"--symfs", root}, ckHermetic(t)...), data)
				text, errs, code := ckRun(t, append([]string{"script"}, args...)...)
				require.Equal(t, exitOK, code, errs)
				ps := parseDefaultScript(t, text)
				require.NotEmpty(t, ps)
				// The event stackcollapse-perf.pl keeps: the first it
				// meets. --folded's default is the recording's first
				// event with samples, said on stderr when there are
				// others (twoevents.data).
				folded, errs, code := ckRun(t, append([]string{"script", "--folded", "--event", ps[0].event}, args...)...)
				require.Equal(t, exitOK, code, errs)
				counted, errs, code := ckRun(t, append([]string{"script", "--folded", "--count", "--event", ps[0].event}, args...)...)
				require.Equal(t, exitOK, code, errs)
				_, errs, _ = ckRun(t, append([]string{"script", "--folded"}, args...)...)
				if filepath.Base(data) == "twoevents.data" {
					assert.Contains(t, errs, "folded the samples of cpu-clock only; --event names one of page-faults")
				}

				var period, n uint64
				for _, p := range ps {
					if p.event == ps[0].event {
						period += p.period
						n++
					}
				}
				got, gotN := parseFolded(t, folded), parseFolded(t, counted)
				assert.Equal(t, period, sum(got), "folded weights, total period of %s", ps[0].event)
				assert.Equal(t, n, sum(gotN), "folded --count weights, samples of %s", ps[0].event)
				if ps[0].chain {
					assert.Equal(t, foldParsed(ps, false), got)
					assert.Equal(t, foldParsed(ps, true), gotN)
				}
				if needPerfOK() && filepath.Base(data) != "zstd-pipe.data" {
					var perfPeriod uint64
					for _, p := range parseDefaultScript(t, perfOut(t, "script", "--symfs", root, "-i", data)) {
						if p.event == ps[0].event {
							perfPeriod += p.period
						}
					}
					assert.Equal(t, perfPeriod, sum(got), "folded total, perf script's total period")
				}
			})
		}
	}
}

// needPerfOK reports whether perf is installed, for comparisons that are
// made when it is.
func needPerfOK() bool {
	_, err := exec.LookPath("perf")
	return err == nil
}

// The mismatched library keeps its weight where it was spent: the folded
// stacks whose leaf is "[mismatch] libhot.so" weigh exactly the period of
// the samples perf script puts in libhot.so.
func TestFoldedUntrustedWeight(t *testing.T) {
	needPerf(t)
	root := mismatchSymFS(t)
	data := ckFixture(t, "cshared-fp.data")
	folded, errs, code := ckRun(t, append(append([]string{"script", "--folded", "--symfs", root}, ckHermetic(t)...), data)...)
	require.Equal(t, exitOK, code, errs)
	var leaf, total uint64
	for k, v := range parseFolded(t, folded) {
		total += v
		if strings.HasSuffix(k, ";[mismatch] libhot.so") {
			leaf += v
		}
	}
	var perfLeaf, perfTotal uint64
	for _, p := range parseDefaultScript(t, perfOut(t, "script", "--symfs", root, "-i", data)) {
		perfTotal += p.period
		if len(p.frames) > 0 && p.frames[0].dso == recordedBin+"/libhot.so" {
			perfLeaf += p.period
		}
	}
	require.NotZero(t, perfLeaf)
	assert.Equal(t, perfTotal, total)
	assert.Equal(t, perfLeaf, leaf, "leaf period in the library: perf %d of %d", perfLeaf, perfTotal)
}

// FlameGraph's own stackcollapse-perf.pl on perfcheck script's default
// text gives exactly perfcheck script --folded. FlameGraph is not packaged
// for Debian 12 and no copy is kept here: the test runs where
// $PERFCHECK_FLAMEGRAPH names a checkout of github.com/brendangregg/FlameGraph
// (or stackcollapse-perf.pl is on $PATH), and skips elsewhere.
func TestFoldedMatchesStackcollapsePerf(t *testing.T) {
	sc := filepath.Join(os.Getenv("PERFCHECK_FLAMEGRAPH"), "stackcollapse-perf.pl")
	if _, err := os.Stat(sc); os.Getenv("PERFCHECK_FLAMEGRAPH") == "" || err != nil {
		p, err := exec.LookPath("stackcollapse-perf.pl")
		if err != nil {
			t.Skip("stackcollapse-perf.pl not found: set PERFCHECK_FLAMEGRAPH to a FlameGraph checkout")
		}
		sc = p
	}
	fixtures.NeedTool(t, "perl")
	roots := map[string]string{"symfs": ckSymfs(t), "libhot mismatch": mismatchSymFS(t)}
	compared := 0
	for _, data := range ckFixtures(t) {
		for what, root := range roots {
			args := append(append([]string{"--symfs", root}, ckHermetic(t)...), data)
			text, _, code := ckRun(t, append([]string{"script"}, args...)...)
			require.Equal(t, exitOK, code)
			folded, _, code := ckRun(t, append([]string{"script", "--folded"}, args...)...)
			require.Equal(t, exitOK, code)
			cmd := exec.Command("perl", sc)
			cmd.Stdin = strings.NewReader(text)
			out, err := cmd.Output()
			require.NoError(t, err)
			if len(out) == 0 {
				// No callchain: stackcollapse-perf.pl reads no frame.
				continue
			}
			compared++
			assert.Equal(t, string(out), folded, "%s with %s", filepath.Base(data), what)
		}
	}
	assert.NotZero(t, compared)
	t.Logf("%d recordings folded identically by stackcollapse-perf.pl and perfcheck", compared)
}

// foldedFrame's rules on names no fixture has, each folded by hand as
// stackcollapse-perf.pl folds the line perf script prints for it.
func TestFoldedFrameRules(t *testing.T) {
	t.Parallel()
	lib := &check.DSO{Path: "/usr/lib/libfoo.so.1", Verdict: check.Verified}
	for _, c := range []struct {
		dso  *check.DSO
		name string // "" for a frame without a name: perf's "[unknown]"
		want string
	}{
		{lib, "ns::Parser::parse(char const*, unsigned long) const", "ns::Parser::parse"},
		{lib, "(anonymous namespace)::helper(int)", "(anonymous namespace)::helper"},
		{lib, "main.(*server).handle", "main.(*server).handle"},
		{lib, "main.(*server).handle.func1", "main.(*server).handle.func1"},
		{lib, "f;g", "f:g"},
		{lib, `operator"" _km(unsigned long long)`, "operator _km"},
		{lib, "it's", "its"},
		{lib, "", "[libfoo.so.1]"},
		{&check.DSO{Path: "[kernel.kallsyms]", Verdict: check.Verified}, "", "[[kernel.kallsyms]]"},
		{&check.DSO{Path: "[unknown]", Verdict: check.NoFile}, "", "[unknown]"},
	} {
		l := &check.Location{DSO: c.dso}
		if c.name != "" {
			l.Frames = []symbolize.Frame{{Function: c.name}}
		}
		assert.Equal(t, c.want, foldedFrame(l, 0), "%q in %s", c.name, c.dso.Path)
	}
}

// foldedGolden are stacks of goprog.data as perf script prints them (leaf
// first, symbols without +0xOFF) and the folded lines they become,
// folded by hand: the comm, then the frames root first; a Go method keeps
// its parentheses. perf names the ABI wrappers with their suffix
// (runtime.goexit.abi0) where perfcheck names the function (whyAlias).
var foldedGolden = []struct {
	perf   []string
	folded string
}{
	{[]string{"main.(*matrix).multiply", "main.work", "main.main", "runtime.main", "runtime.goexit.abi0"},
		"goprog;runtime.goexit;runtime.main;main.main;main.work;main.(*matrix).multiply"},
	{[]string{"main.crunchPrimes", "main.work", "main.main", "runtime.main", "runtime.goexit.abi0"},
		"goprog;runtime.goexit;runtime.main;main.main;main.work;main.crunchPrimes"},
	{[]string{"runtime.(*fixalloc).init", "runtime.mallocinit", "runtime.schedinit", "runtime.rt0_go.abi0"},
		"goprog;runtime.rt0_go;runtime.schedinit;runtime.mallocinit;runtime.(*fixalloc).init"},
}

// Each hand-folded line of foldedGolden weighs, in --folded, the period
// of the samples perf script shows with its stack: read from perf's own
// output with the test grammar, not folded by code.
func TestFoldedGolden(t *testing.T) {
	t.Parallel()
	needPerf(t)
	root, data := ckSymfs(t), ckFixture(t, "goprog.data")
	folded, errs, code := ckRun(t, append(append([]string{"script", "--folded", "--symfs", root}, ckHermetic(t)...), data)...)
	require.Equal(t, exitOK, code, errs)
	got := parseFolded(t, folded)
	ps := parseDefaultScript(t, perfOut(t, "script", "--symfs", root, "-i", data))
	for _, g := range foldedGolden {
		var want uint64
		for _, p := range ps {
			syms := make([]string, len(p.frames))
			for i, f := range p.frames {
				syms[i] = f.sym
			}
			if p.comm == "goprog" && slices.Equal(syms, g.perf) {
				want += p.period
			}
		}
		require.NotZero(t, want, "perf script has no sample with the stack %v", g.perf)
		assert.Equal(t, want, got[g.folded], g.folded)
	}
}
