package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// check --brief lists the DSOs that fail and no other, then the summary
// and what to do, and says how many passed; the exit status is the full
// check's.
func TestCheckBrief(t *testing.T) {
	t.Parallel()
	fx := ckFixture(t, "cshared-fp.data")
	args := append([]string{"check", "--symfs", ckSymfs(t)}, ckHermetic(t)...)
	full, _, fcode := ckRun(t, append(args, fx)...)
	brief, errs, code := ckRun(t, append(args, "--brief", fx)...)
	assert.Equal(t, fcode, code, errs)
	require.Equal(t, exitProblems, code)
	// The table: from its VERDICT header to the first empty line.
	table := func(out string) []string {
		_, rest, ok := strings.Cut(out, "\nVERDICT ")
		require.True(t, ok, out)
		rows, _, _ := strings.Cut(rest, "\n\n")
		return strings.Split(rows, "\n")
	}
	fullRows, briefRows := table(full), table(brief)
	require.Greater(t, len(fullRows), 2)
	var failing []string
	for _, r := range fullRows[1:] {
		if strings.Contains(r, " !") {
			failing = append(failing, strings.Join(strings.Fields(r), " "))
		}
	}
	require.NotEmpty(t, failing)
	var got []string
	for _, r := range briefRows[1:] {
		got = append(got, strings.Join(strings.Fields(r), " "))
	}
	assert.Equal(t, failing, got)
	assert.Contains(t, brief, "FAIL: ")
	assert.Contains(t, brief, "What to do:")
	assert.Contains(t, brief, "other DSOs the samples touch passed; --brief lists only those that fail)\n")
	assert.NotContains(t, brief, "/usr/lib/x86_64-linux-gnu/libc.so.6: unverified")
}

// --max-untrusted sets the exit status by the share of samples with an
// untrusted frame: 0 at or under the limit, 1 over it, said on the last
// line and in JSON.
func TestCheckMaxUntrusted(t *testing.T) {
	t.Parallel()
	fx := ckFixture(t, "cshared-fp.data")
	args := append([]string{"check", "--symfs", ckSymfs(t)}, ckHermetic(t)...)
	var rep ckReport
	out, _, _ := ckRun(t, append(args, "--json", fx)...)
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.NotZero(t, rep.UntrustedAnySamples)
	pct := float64(rep.UntrustedAnySamples) * 100 / float64(rep.Samples)
	for _, tc := range []struct {
		limit string
		code  int
		word  string
	}{{"1", exitOK, "within"}, {"0.5", exitProblems, "over"}, {"0", exitProblems, "over"}, {"100", exitOK, "within"}} {
		out, errs, code := ckRun(t, append(args, "--max-untrusted", tc.limit, fx)...)
		assert.Equal(t, tc.code, code, "%s: %s", tc.limit, errs)
		assert.True(t, strings.HasSuffix(out, tc.word+" --max-untrusted "+tc.limit+"%: 0.7% of the samples have an untrusted frame.\n"), "%s: %q", tc.limit, out)
		out, _, code = ckRun(t, append(args, "--json", "--max-untrusted", tc.limit, fx)...)
		assert.Equal(t, tc.code, code)
		var j struct {
			Failed       bool     `json:"failed"`
			MaxUntrusted *float64 `json:"max_untrusted_percent"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &j))
		assert.Equal(t, tc.code == exitProblems, j.Failed)
		require.NotNil(t, j.MaxUntrusted)
	}
	assert.InDelta(t, 0.66, pct, 0.01)
	_, errs, code := ckRun(t, append(args, "--max-untrusted", "150", fx)...)
	assert.Equal(t, exitError, code)
	assert.True(t, strings.HasPrefix(errs, "perfcheck check: --max-untrusted 150: give a percentage from 0 to 100\nusage: "), errs)
}
