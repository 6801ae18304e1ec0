package main

import (
	"encoding/json"
	"html"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The report of the recording with libhot.so mismatched, opened in
// chromium with the network cut off: its sections come in the issue's
// order; the header says what info --json says; the verdict table, the
// advice and the trust figures what check --json says; the top functions
// what top --json says; the flame graph gives the library its share (as
// TestFlameGraphInChromium); a screenshot is kept.
func TestReportInChromium(t *testing.T) {
	t.Parallel()
	needChromium(t)
	args := append([]string{"--symfs", mismatchSymFS(t)}, ckHermetic(t)...)
	data := ckFixture(t, "cshared-fp.data")
	out := filepath.Join(t.TempDir(), "report.html")
	_, errs, code := ckRun(t, append(append([]string{"report", "-o", out}, args...), data)...)
	require.Equal(t, exitOK, code, errs)
	noNetworkRefs(t, out)

	dom := dumpDOM(t, out, "")
	last := -1
	for _, id := range []string{"recording", "verdicts", "advice", "trust", "top", "flamegraph"} {
		i := strings.Index(dom, `id="`+id+`"`)
		require.Greater(t, i, last, "section %s comes after the one before", id)
		last = i
	}
	assert.Contains(t, dom, `<p class="bad" id="status">FAIL: 2 DSOs`)

	infoOut, errs, code := ckRun(t, "info", "--json", data)
	require.Equal(t, exitOK, code, errs)
	var info infoJSON
	require.NoError(t, json.Unmarshal([]byte(infoOut), &info))
	require.NotNil(t, info.TimeRange)
	for id, want := range map[string]string{"host": info.Hostname, "kernel": info.OSRelease, "perf-version": info.PerfVersion,
		"command": "<code>" + strings.Join(info.CmdLine, " ") + "</code>"} {
		require.NotEqual(t, "", want, id)
		assert.Equal(t, want, html.UnescapeString(elementText(t, dom, id)), "header %s", id)
	}
	assert.True(t, strings.HasPrefix(elementText(t, dom, "time-range"), perfTime(info.TimeRange.FirstNS)+" .. "+perfTime(info.TimeRange.LastNS)))

	checkOut, _, code := ckRun(t, append(append([]string{"check", "--json"}, args...), data)...)
	require.Equal(t, exitProblems, code)
	rep := ckParseReport(t, checkOut)
	rows := regexp.MustCompile(`<tr class="(untrusted)?"><td[^>]*>([a-z-]+)</td><td>([^<]*)</td><td>[a-z]+</td><td class="num">(\d+)</td><td class="num">(\d+)</td>`).
		FindAllStringSubmatch(elementText(t, dom, "verdict-table"), -1)
	require.Len(t, rows, len(rep.DSOs), "one row per DSO")
	for i, d := range rep.DSOs {
		r := rows[i]
		assert.Equal(t, []string{d.Verdict, d.Path, strconv.FormatUint(d.HitsLeaf, 10), strconv.FormatUint(d.HitsAny, 10)},
			[]string{r[2], html.UnescapeString(r[3]), r[4], r[5]})
		assert.Equal(t, d.Verdict == "mismatch" || d.Verdict == "missing" || d.Verdict == "replaced", r[1] == "untrusted", d.Path)
		assert.Contains(t, html.UnescapeString(dom), d.Reason)
	}
	assert.Contains(t, elementText(t, dom, "advice"), "perfcheck cache fill")
	trust := elementText(t, dom, "trust-table")
	for _, n := range []uint64{rep.Samples, rep.TrustedSamples, rep.UntrustedLeafSamples, rep.UntrustedAnySamples} {
		assert.Contains(t, trust, `<td class="num">`+strconv.FormatUint(n, 10)+`</td>`)
	}

	topOut, _, code := ckRun(t, append(append([]string{"top", "--json"}, args...), data)...)
	require.Equal(t, exitOK, code)
	var top topJSON
	require.NoError(t, json.Unmarshal([]byte(topOut), &top))
	topRows := regexp.MustCompile(`<td class="num">[0-9.]+%</td><td class="num">[0-9.]+%</td><td class="num">(\d+)</td><td[^>]*>([^<]*)</td>`).
		FindAllStringSubmatch(dom[strings.Index(dom, `id="top"`):strings.Index(dom, `id="flamegraph"`)], -1)
	require.Len(t, topRows, len(top.Events[0].Entries))
	for i, e := range top.Events[0].Entries {
		assert.Equal(t, strconv.FormatUint(e.SelfSamples, 10), topRows[i][1])
		assert.Contains(t, html.UnescapeString(topRows[i][2]), e.DSO, "row %d", i)
		if e.Name != "" {
			assert.Contains(t, html.UnescapeString(topRows[i][2]), e.Name)
		}
	}

	folded, _, code := ckRun(t, append(append([]string{"script", "--folded"}, args...), data)...)
	require.Equal(t, exitOK, code)
	through, total := foldedThrough(t, folded, "[mismatch] libhot.so")
	checkFlameGraphDOM(t, out, "[mismatch] libhot.so", through, total)
	screenshot(t, out, "", filepath.Join(artifactDir(t), "report.png"), "--window-size=1280,2400")
}

// elementText is the inner markup of the element with id in dom (up to
// the first closing tag of its kind, so for elements that nest no
// element of their own kind).
func elementText(t *testing.T, dom, id string) string {
	t.Helper()
	m := regexp.MustCompile(`<(\w+)[^>]*\sid="` + regexp.QuoteMeta(id) + `"[^>]*>`).FindStringSubmatchIndex(dom)
	require.NotNil(t, m, "no element %s", id)
	rest := dom[m[1]:]
	end := strings.Index(rest, "</"+dom[m[2]:m[3]]+">")
	require.GreaterOrEqual(t, end, 0, "element %s is not closed", id)
	return rest[:end]
}
