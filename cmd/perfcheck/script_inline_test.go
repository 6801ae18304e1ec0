package main

import (
	"bufio"
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// inlineC spends its time in spin, which gcc inlines into each of its two
// callers: every sample in the program is at code of an inlined function.
// The callers differ (no identical-code folding) and take their argument
// from a volatile (no constant-propagated ".constprop" clone, whose ELF
// name is not its DWARF name). The work is counted, not timed: the samples
// are of CPU time, so their number does not depend on the machine's load.
const inlineC = `
static volatile unsigned long sink, rounds = 10000000;
static inline __attribute__((always_inline)) unsigned long spin(unsigned long n)
{
	unsigned long x = 1;
	for (unsigned long i = 0; i < n; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	return x;
}
__attribute__((noinline)) void outer_a(unsigned long n) { sink = spin(n); }
__attribute__((noinline)) void outer_b(unsigned long n) { sink = spin(n) ^ 1; }
int main(void)
{
	for (int i = 0; i < 10; i++) {
		outer_a(rounds);
		outer_b(rounds);
	}
	return 0;
}
`

// scriptInlineFields are the field lists that name a sample's frame.
var scriptInlineFields = [][]string{nil, {"-F", "ip,sym"}, {"-F", "ip,sym,symoff"}, {"-F", "+srcline"}}

// A sample without callchain (perf record without -g) whose IP is in
// inlined code: perf script 6.1 names it by the symbol that holds the
// code and the offset into it (sample__fprintf_sym without a callchain
// cursor prints al->sym), never by the inlined callee, with --inline or
// --no-inline; perfcheck script prints the same bytes. The program is
// built with gcc -O2 -g, its hot loop inlined into two callers; every
// binary the samples touch is verified. The other outputs name such a
// sample as docs/commands-check.md says: --json gives the holding
// function as the frame's symbol and the inlined callee in its source
// frames; --folded and top name the holding function (as perf report
// --no-children --sort sym does), --folded --inline splits the callee
// out; pprof keeps the callee as an inlined line of the location.
func TestScriptInlinedLeafWithoutCallchain(t *testing.T) {
	t.Parallel()
	w := newRealWorld(t)
	prog := filepath.Join(w.dir, "inlprog")
	// buildSrc's -O1 gives way to the last -O, -O2.
	w.buildSrc(prog, inlineC, "-O2")
	data := filepath.Join(w.dir, "nog.data")
	w.run("perf", "record", "-q", "-N", "-e", "cpu-clock", "-F", "2000", "-o", data, "--", prog)
	requireAllVerified(t, data, prog)

	for _, fields := range scriptInlineFields {
		for _, inl := range []struct{ perf, pc []string }{{nil, nil}, {[]string{"--no-inline"}, []string{"--no-inline"}}, {[]string{"--inline"}, []string{"--inline"}}} {
			perf := w.run("perf", append(append([]string{"script", "-i", data}, fields...), inl.perf...)...)
			out, errs, code := ckRun(t, append(append(append(append([]string{"script"}, fields...), inl.pc...), ckLikePerf(t)...), data)...)
			require.Equal(t, exitOK, code, errs)
			require.Equal(t, perf, out, "perf script %v %v", fields, inl.perf)
		}
	}

	// The comparison proves something only if the samples are in the
	// inlined loop, which perf names by its two callers.
	perf := w.run("perf", "script", "-F", "ip,sym", "-i", data)
	perfSyms := map[string]uint64{}
	for _, l := range strings.Split(strings.TrimSpace(perf), "\n") {
		f := strings.Fields(l)
		require.Len(t, f, 2, "perf script -F ip,sym line %q", l)
		perfSyms[f[1]]++
	}
	assert.NotContains(t, perfSyms, "spin")
	inSpin := checkInlinedJSON(t, data, prog)
	assert.Greater(t, inSpin["outer_a"]+inSpin["outer_b"], uint64(100), "samples in the inlined loop")
	for fn, n := range inSpin {
		assert.LessOrEqual(t, n, perfSyms[fn], "samples in spin inlined into %s, of those perf names %s", fn, fn)
	}

	folded := func(args ...string) map[string]uint64 {
		out, errs, code := ckRun(t, append(append(append([]string{"script", "--folded", "--count"}, args...), ckLikePerf(t)...), data)...)
		require.Equal(t, exitOK, code, errs)
		return parseFolded(t, out)
	}
	byName := folded()
	splitOut := folded("--inline")
	for _, fn := range []string{"outer_a", "outer_b"} {
		assert.Equal(t, perfSyms[fn], byName["inlprog;"+fn], "--folded: samples of %s", fn)
		assert.Equal(t, inSpin[fn], splitOut["inlprog;"+fn+";spin"], "--folded --inline: samples of %s;spin", fn)
	}
	for k := range byName {
		assert.False(t, strings.HasSuffix(k, ";spin"), "--folded names the inlined callee: %s", k)
	}

	pb := filepath.Join(w.dir, "nog.pb.gz")
	_, errs, code := ckRun(t, append(append([]string{"pprof", "-o", pb}, ckLikePerf(t)...), data)...)
	require.Equal(t, exitOK, code, errs)
	topJS, errs, code := ckRun(t, append(append([]string{"top", "--json", "-n", "0"}, ckLikePerf(t)...), data)...)
	require.Equal(t, exitOK, code, errs)
	// top's self shares are perf report --no-children's by symbol, and
	// go tool pprof -noinlines gives them too.
	w.agreesWithPerfReport(data, pb, topJS, map[string]string{prog: prog})
	// pprof's own view splits inlined functions out: the loop is spin's.
	assert.Contains(t, goToolPprof(t, "-top", pb), " spin")
}

// Recorded with -g, the same program's samples have a callchain: perf
// script 6.1 prints it as perfcheck does by default, byte for byte, with
// the holding function named on each line. perf 6.1 expands inlined
// frames only in callchains it unwinds from a DWARF stack copy
// (--call-graph dwarf), not in frame-pointer ones, --inline or not;
// perfcheck --inline prints them in every callchain, each
// "name+0xOFF (inlined)" line before the function that holds it: the
// rest of its text is perf's (but the srclines: an expanded location's
// holding function has its call site's line, as perf prints it in DWARF
// callchains, TestScriptInlinedFramesDwarfCallchain).
func TestScriptInlinedLeafWithCallchain(t *testing.T) {
	t.Parallel()
	w := newRealWorld(t)
	prog := filepath.Join(w.dir, "inlprog")
	w.buildSrc(prog, inlineC, "-O2")
	data := filepath.Join(w.dir, "g.data")
	// --buildid-all: perf 6.1 records the build-ids of the DSOs that
	// appear only in callchains (libc) only then.
	w.run("perf", "record", "-q", "-N", "-g", "--buildid-all", "-e", "cpu-clock", "-F", "2000", "-o", data, "--", prog)
	requireAllVerified(t, data, prog)
	inSpin := checkInlinedJSON(t, data, prog)
	require.Greater(t, inSpin["outer_a"]+inSpin["outer_b"], uint64(100), "samples in the inlined loop")

	for _, fields := range scriptInlineFields {
		for _, inl := range [][]string{nil, {"--no-inline"}} {
			perf := w.run("perf", append(append([]string{"script", "-i", data}, fields...), inl...)...)
			out, errs, code := ckRun(t, append(append(append(append([]string{"script"}, fields...), inl...), ckLikePerf(t)...), data)...)
			require.Equal(t, exitOK, code, errs)
			require.Equal(t, progSrclines(perf, prog), progSrclines(out, prog), "perf script %v %v", fields, inl)
		}
		if slices.Contains(fields, "+srcline") {
			continue
		}
		perf := w.run("perf", append(append([]string{"script", "-i", data}, fields...), "--inline")...)
		out, errs, code := ckRun(t, append(append(append([]string{"script", "--inline"}, fields...), ckLikePerf(t)...), data)...)
		require.Equal(t, exitOK, code, errs)
		rest, n := dropInlinedLines(out)
		assert.Greater(t, n, 100, "spin (inlined) lines, -F %v", fields)
		require.Equal(t, perf, rest, "perf script %v --inline", fields)
	}
}

// Recorded with --call-graph dwarf, perf 6.1 expands inlined frames by
// default, as perfcheck --inline does: "spin+0xOFF", its srcline, then
// " (inlined)", before the holding function, whose srcline is then the
// call site; perf script --no-inline is perfcheck's default. The frames
// and srclines in the program are compared byte for byte (dropLibcFrames
// says what is left out).
func TestScriptInlinedFramesDwarfCallchain(t *testing.T) {
	t.Parallel()
	w := newRealWorld(t)
	prog := filepath.Join(w.dir, "inlprog")
	w.buildSrc(prog, inlineC, "-O2")
	data := filepath.Join(w.dir, "dwarf.data")
	w.run("perf", "record", "-q", "-N", "--call-graph", "dwarf", "--buildid-all", "-e", "cpu-clock", "-F", "500", "-o", data, "--", prog)
	requireAllVerified(t, data, prog)

	for _, fields := range scriptInlineFields {
		for _, inl := range []struct{ perf, pc []string }{{nil, []string{"--inline"}}, {[]string{"--no-inline"}, []string{"--no-inline"}}} {
			perf := w.run("perf", append(append([]string{"script", "-i", data}, fields...), inl.perf...)...)
			out, errs, code := ckRun(t, append(append(append(append([]string{"script"}, fields...), inl.pc...), ckLikePerf(t)...), data)...)
			require.Equal(t, exitOK, code, errs)
			if inl.perf == nil {
				_, n := dropInlinedLines(out)
				assert.Greater(t, n, 20, "spin (inlined) lines, -F %v", fields)
			}
			require.Equal(t, progSrclines(dropLibcFrames(perf), prog), progSrclines(dropLibcFrames(out), prog), "perf script %v %v", fields, inl.perf)
		}
	}
}

// dropLibcFrames removes the frame lines of libc, and the srcline under
// each, from perf script text: perf 6.1 lists __libc_start_main@@GLIBC_2.34
// under its DWARF name as an inlined frame of itself
// ("__libc_start_main_impl+0x84 (inlined)"), a name perfcheck does not
// give it. Neither is the subject here.
func dropLibcFrames(out string) string {
	var b strings.Builder
	lines := strings.SplitAfter(out, "\n")
	for i := 0; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "\t") && strings.Contains(lines[i], "libc") {
			if i+1 < len(lines) && strings.HasPrefix(lines[i+1], "  ") && !strings.HasPrefix(lines[i+1], "   ") {
				i++
			}
			continue
		}
		b.WriteString(lines[i])
	}
	return b.String()
}

// progSrclines blanks in perf script text the srcline under each frame
// outside prog, and drops those without a line number. perf 6.1's are
// binutils addr2line's, which at the return address in libc's
// __libc_start_call_main names libc-start.c where the line table's row
// (and perfcheck) names libc_start_call_main.h, the same line. Where the
// binary has no line for an address (_start), perf prints addr2line's
// "??:0" or nothing, perfcheck perf's fallback "BASE[OFFSET]", as
// TestScriptDefaultMatchesPerfScript allows. The frames themselves stay
// compared, and the program's lines.
func progSrclines(out, prog string) string {
	lines := strings.SplitAfter(out, "\n")
	var b strings.Builder
	for i, l := range lines {
		if i == 0 || !strings.HasPrefix(l, "  ") || strings.HasPrefix(l, "   ") {
			b.WriteString(l)
			continue
		}
		switch {
		case !realSrcline.MatchString(strings.TrimSuffix(strings.TrimSpace(l), " (inlined)")):
		case strings.HasSuffix(lines[i-1], " ("+prog+")\n") || strings.HasPrefix(l, "  inlprog.c:"):
			b.WriteString(l)
		default:
			b.WriteString("  -\n")
		}
	}
	return b.String()
}

// dropInlinedLines removes from perfcheck script --inline's text the lines
// of spin's inlined frames ("\t ADDR spin+0xOFF (inlined)", or with a
// srcline "\t ADDR spin+0xOFF", then "  FILE:LINE (inlined)"), and counts
// them.
func dropInlinedLines(out string) (string, int) {
	var b strings.Builder
	n := 0
	lines := strings.SplitAfter(out, "\n")
	for i := 0; i < len(lines); i++ {
		if inlinedSpin.MatchString(lines[i]) {
			n++
			if i+1 < len(lines) && strings.HasSuffix(lines[i+1], " (inlined)\n") {
				i++
			}
			continue
		}
		b.WriteString(lines[i])
	}
	return b.String(), n
}

// inlinedSpin is the line of spin's inlined frame in the fields of
// scriptInlineFields.
var inlinedSpin = regexp.MustCompile(`^\t *[0-9a-f]+ spin(\+0x[0-9a-f]+)?( \(inlined\))?\n$`)

// requireAllVerified fails unless the check of data, looked up as perf
// looks binaries up (ckLikePerf), finds every DSO with a file verified,
// prog among them.
func requireAllVerified(t *testing.T, data, prog string) {
	t.Helper()
	out, errs, code := ckRun(t, append(append([]string{"check", "--json"}, ckLikePerf(t)...), data)...)
	require.Equal(t, exitOK, code, errs)
	r := ckParseReport(t, out)
	require.Equal(t, "verified", r.verdict(prog))
	for _, d := range r.DSOs {
		if d.Verdict != "no-file" {
			assert.Equal(t, "verified", d.Verdict, "%s: %s", d.Path, d.Reason)
		}
	}
}

// checkInlinedJSON reads perfcheck script --json of data and returns how
// many samples have their leaf in prog in spin, by the function spin is
// inlined into there, checking that each names that function as the
// frame's symbol.
func checkInlinedJSON(t *testing.T, data, prog string) map[string]uint64 {
	t.Helper()
	out, errs, code := ckRun(t, append(append([]string{"script", "--json"}, ckLikePerf(t)...), data)...)
	require.Equal(t, exitOK, code, errs)
	n := map[string]uint64{}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var s struct {
			Frames []struct {
				DSO    string `json:"dso"`
				Symbol string `json:"symbol"`
				Frames []struct {
					Function string `json:"function"`
					Inlined  bool   `json:"inlined"`
				} `json:"frames"`
			} `json:"frames"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &s))
		if len(s.Frames) == 0 || s.Frames[0].DSO != prog || len(s.Frames[0].Frames) != 2 {
			continue
		}
		f := s.Frames[0]
		if f.Frames[0].Function != "spin" {
			continue
		}
		n[f.Symbol]++
		assert.True(t, f.Frames[0].Inlined, "spin inlined")
		assert.Equal(t, f.Frames[1].Function, f.Symbol, "the symbol is the holding function")
		assert.Contains(t, []string{"outer_a", "outer_b"}, f.Symbol)
	}
	require.NoError(t, sc.Err())
	return n
}

// Flags of script that contradict each other are refused with the reason,
// and nothing is printed.
func TestScriptFlagUsageErrors(t *testing.T) {
	t.Parallel()
	data := ckFixture(t, "cshared-fp.data")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--inline", "--no-inline"}, "--inline and --no-inline: give one"},
		{[]string{"--count"}, "--count goes with --folded"},
		{[]string{"--folded", "--trust-lines"}, "--folded takes none of --json, -F, --trust-lines"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			t.Parallel()
			out, errs, code := ckRun(t, append(append([]string{"script"}, c.args...), data)...)
			assert.Equal(t, exitError, code)
			assert.Empty(t, out)
			assert.Equal(t, "perfcheck script: "+c.want+"\n", errs)
		})
	}
}
