package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scriptText is one sample of perf script's text: the sample line, and
// the frame lines of its callchain (each with the srcline line that
// follows it, if any).
type scriptText struct {
	head   string
	frames []string
}

// splitScript cuts perf script text into samples: a line that starts with
// a tab is a frame of the sample before it, a line that starts with two
// spaces and a non-space the srcline of the frame (or sample line) before
// it, "#" lines are comments, an empty line ends a sample
// with a callchain, any other line starts a sample.
func splitScript(out string) []scriptText {
	var ss []scriptText
	for _, l := range strings.Split(out, "\n") {
		switch {
		case l == "" || strings.HasPrefix(l, "#"):
		case strings.HasPrefix(l, "\t") && len(ss) > 0:
			s := &ss[len(ss)-1]
			s.frames = append(s.frames, l)
		case len(l) > 2 && l[:2] == "  " && l[2] != ' ' && len(ss) > 0:
			// A srcline: two spaces exactly. A sample line padded
			// to 16 columns begins with two only for a 14-character
			// comm, which no fixture has.
			s := &ss[len(ss)-1]
			if n := len(s.frames); n > 0 {
				s.frames[n-1] += "\n" + l
			} else {
				s.head += "\n" + l
			}
		default:
			ss = append(ss, scriptText{head: l})
		}
	}
	return ss
}

// scriptFrameRE is perf script's frame grammar, "ADDR SYM[+0xOFF] (DSO)"
// and an optional srcline line: as a callchain line ("\t%16x ...") or at
// the end of a sample line without callchain.
var scriptFrameRE = regexp.MustCompile(`^(?s)\s*([0-9a-f]+)(?: (.+?)(?:\+0x([0-9a-f]+))?)??(?: \(([^()]*)\))?(\n  .*)?$`)

// perfFrame is a frame parsed with scriptFrameRE.
type perfFrame struct{ addr, sym, off, dso, srcline string }

func parseScriptFrame(s string) (perfFrame, bool) {
	m := scriptFrameRE.FindStringSubmatch(s)
	if m == nil {
		return perfFrame{}, false
	}
	return perfFrame{m[1], m[2], m[3], m[4], strings.TrimPrefix(m[5], "\n  ")}, true
}

// splitHead cuts a sample line without callchain before its frame: the
// frame starts after the last "EVENT: " followed by spaces and the
// address.
var headFrameRE = regexp.MustCompile(`^(?s)(.*: )( *[0-9a-f]+ .+ \([^()]*\)(?:\n  .*)?)$`)

// Why a frame of perfcheck script may differ from perf script's on the
// same recording and lookup root. Any other difference fails the test.
const (
	whyUnverified = "unverified: perfcheck marks the name \"[unverified] NAME\" (no build-id recorded, named from the file at the path)"
	whyRefused    = "refused: the DSO is mismatch, missing or replaced, so perfcheck prints \"[VERDICT] DSO+0xOFFSET\" where perf shows [unknown] or a name read from a file that is not the one that ran"
	whyAlias      = "alias: both name the symbol that starts at the same place (perf its ELF symbol, perfcheck DWARF's or Go's name: access/__access, runtime.goexit/runtime.goexit.abi0)"
	whyExec       = "exec: perf names an address sampled after exec through the old image's maps; perfcheck's exec drops them (docs/verdicts.md), [unknown] at the recorded address"
	whyUnwind     = "unwind: --call-graph dwarf unwinding stops at a binary not proven to be the one that ran; perf goes on with it"
	whyNoLine     = "srcline: perf prints no line (\"go.go:0\", \":0\") where perfcheck's DWARF or pclntab reader gives file:line"
)

// realSrcline is a srcline with a line number: perf's for a Go binary is
// "go.go:0", for an address its reader cannot place ":0".
var realSrcline = regexp.MustCompile(`^[^:\s]+:[1-9][0-9]*$`)

// refusedMark begins the name perfcheck gives a frame of a DSO whose
// names it refuses.
var refusedMark = regexp.MustCompile(`^\[(mismatch|missing|replaced)\] `)

// compareFrame returns "" when perfcheck's frame is perf's, the reason
// when it differs for one of the reasons above, or an error.
func compareFrame(perf, pc perfFrame) (string, error) {
	if perf == pc {
		return "", nil
	}
	if pc.sym == "[unknown]" && pc.dso == "[unknown]" && perf.dso != "[unknown]" {
		return whyExec, nil
	}
	if perf.addr != pc.addr || perf.dso != pc.dso {
		return "", fmt.Errorf("address or DSO: perf %+v, perfcheck %+v", perf, pc)
	}
	if refusedMark.MatchString(pc.sym) {
		return whyRefused, nil
	}
	if strings.TrimPrefix(pc.sym, "[unverified] ") == perf.sym && pc.off == perf.off {
		if pc.sym != perf.sym {
			return whyUnverified, nil
		}
		return "", nil // srcline only: compared by the caller where it can be
	}
	if pc.off == perf.off && perf.sym != "[unknown]" && pc.sym != "[unknown]" {
		return whyAlias, nil
	}
	return "", fmt.Errorf("symbol: perf %q+0x%s, perfcheck %q+0x%s", perf.sym, perf.off, pc.sym, pc.off)
}

// compareScript compares perfcheck script's output with perf script's on
// the same recording, sample for sample: sample lines byte for byte,
// frames by compareFrame. It returns how many frames differ, per reason.
func compareScript(t *testing.T, name, perf, pc string) map[string]int {
	t.Helper()
	want, got := splitScript(perf), splitScript(pc)
	require.Equal(t, len(want), len(got), "samples")
	why := map[string]int{}
	note := func(reason string, err error, i int) {
		if err != nil {
			t.Errorf("sample %d (%q): %v", i, want[i].head, err)
		} else if reason != "" {
			why[reason]++
		}
	}
	for i := range want {
		w, g := want[i], got[i]
		if m := headFrameRE.FindStringSubmatch(w.head); m != nil && len(w.frames) == 0 {
			gm := headFrameRE.FindStringSubmatch(g.head)
			require.NotNil(t, gm, "sample %d: %q has no frame", i, g.head)
			require.Equal(t, m[1], gm[1], "sample %d", i)
			pf, ok1 := parseScriptFrame(m[2])
			gf, ok2 := parseScriptFrame(gm[2])
			require.True(t, ok1 && ok2, "sample %d: %q, %q", i, m[2], gm[2])
			reason, err := compareFrame(pf, gf)
			note(reason, err, i)
			continue
		}
		require.Equal(t, w.head, g.head, "sample %d", i)
		n := len(w.frames)
		if len(g.frames) < n {
			require.Equal(t, "cshared-dwarf.data", name, "sample %d: %d frames, perf %d", i, len(g.frames), n)
			why[whyUnwind]++
			n = len(g.frames)
		}
		require.Len(t, g.frames, n, "sample %d: perfcheck has more frames than perf", i)
		for j := 0; j < n; j++ {
			pf, ok1 := parseScriptFrame(w.frames[j])
			gf, ok2 := parseScriptFrame(g.frames[j])
			require.True(t, ok2, "sample %d frame %d: %q is not perf script's frame grammar", i, j, g.frames[j])
			require.True(t, ok1, "sample %d frame %d: perf printed %q", i, j, w.frames[j])
			reason, err := compareFrame(pf, gf)
			if err == nil && reason == "" && pf.srcline != gf.srcline {
				switch {
				case !realSrcline.MatchString(pf.srcline):
					reason = whyNoLine
				case strings.HasPrefix(pf.dso, recordedBin):
					err = fmt.Errorf("srcline: perf %q, perfcheck %q", pf.srcline, gf.srcline)
				}
			}
			if err != nil {
				err = fmt.Errorf("frame %d: %w", j, err)
			}
			note(reason, err, i)
		}
	}
	return why
}

func logReasons(t *testing.T, why map[string]int) {
	var rs []string
	for r := range why {
		rs = append(rs, r)
	}
	sort.Strings(rs)
	for _, r := range rs {
		t.Logf("%5d frames differ: %s", why[r], r)
	}
}

// perfcheck script prints by default exactly perf script's default text
// on every committed recording perf reads, run with the same --symfs so
// that both read the same files: every sample line byte for byte (comm,
// tid, cpu when recorded, time, period, event), every frame in the grammar
// "\t ADDR SYM+0xOFF (DSO)" at perf's address with perf's DSO, and the
// same name and offset wherever perfcheck may name the frame. Where the
// names differ, the reason is one of the why* above, counted in the log.
func TestScriptDefaultMatchesPerfScript(t *testing.T) {
	needPerf(t)
	symfs := ckSymfs(t)
	total := map[string]int{}
	for _, data := range ckFixtures(t) {
		name := filepath.Base(data)
		t.Run(name, func(t *testing.T) {
			perf := perfOut(t, "script", "--symfs", symfs, "-i", data)
			out, errs, code := ckRun(t, append(append([]string{"script", "--symfs", symfs}, ckLikePerf(t)...), data)...)
			require.Equal(t, exitOK, code, errs)
			why := compareScript(t, name, perf, out)
			logReasons(t, why)
			for r, n := range why {
				total[r] += n
			}
		})
	}
	assert.NotZero(t, total[whyRefused], "no fixture has an untrusted frame: the comparison proves less")
}

// -F selects the fields as perf script's -F does: the same field lists
// give the same lines, in perf's order whatever the order asked; "+FIELD"
// and "-FIELD" change the default set.
func TestScriptFieldsMatchPerfScript(t *testing.T) {
	needPerf(t)
	symfs := ckSymfs(t)
	for _, tc := range []struct{ data, fields string }{
		{"cshared-fp.data", "comm,pid,tid,time,period,event,ip,sym,dso"},
		{"cshared-fp.data", "tid,ip,sym,symoff"},
		{"cshared-fp.data", "period,event,time,comm,ip"},
		{"cshared-fp.data", "comm,tid,time,ip,sym,symoff,dso,srcline"},
		{"threads.data", "pid,tid,time,event,ip,sym,dso"},
		{"threads.data", "-period,+pid"},
		{"twoevents.data", "comm,pid,tid,period,event,ip,sym,symoff,dso"},
		{"twoevents.data", "+srcline"},
		{"goprog.data", "comm,tid,ip,sym,dso,srcline"},
	} {
		t.Run(tc.data+" "+tc.fields, func(t *testing.T) {
			data := ckFixture(t, tc.data)
			perf := perfOut(t, "script", "--symfs", symfs, "-F", tc.fields, "-i", data)
			out, errs, code := ckRun(t, append(append([]string{"script", "-F", tc.fields, "--symfs", symfs}, ckLikePerf(t)...), data)...)
			require.Equal(t, exitOK, code, errs)
			logReasons(t, compareScript(t, tc.data, perf, out))
		})
	}
}

// -F refuses what perf script refuses, and what perfcheck does not print.
func TestScriptFieldsErrors(t *testing.T) {
	data := ckFixture(t, "cshared-fp.data")
	for fields, want := range map[string]string{
		"cpu,ip":    "do not have the CPU attribute set",
		"comm,sym":  "sym needs ip",
		"ip,symoff": "symoff needs sym",
		"ip,addr":   `samples for "cpu-clock" do not have the ADDR attribute set: cannot print addr`,
		"ip,insn":   "unsupported field",
		"sw:comm":   "event-type lists",
		"+ip,comm":  "every field has + or -",
	} {
		out, errs, code := ckRun(t, append([]string{"script", "-F", fields}, append(ckHermetic(t), data)...)...)
		assert.Equal(t, exitError, code, fields)
		assert.Empty(t, out, fields)
		assert.Contains(t, errs, want, fields)
	}
	// trace is ignored for other events than tracepoints, as perf
	// ignores it ("'trace' not valid for software events. Ignoring.").
	withTrace, errs, code := ckRun(t, append([]string{"script", "-F", "ip,trace"}, append(ckHermetic(t), data)...)...)
	require.Equal(t, exitOK, code, errs)
	plain, errs, code := ckRun(t, append([]string{"script", "-F", "ip"}, append(ckHermetic(t), data)...)...)
	require.Equal(t, exitOK, code, errs)
	assert.Equal(t, plain, withTrace)
}
