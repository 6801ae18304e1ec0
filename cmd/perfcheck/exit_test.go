package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cutFixture is the first n bytes of a committed recording, as a crash of
// perf record leaves a file: what it holds is read, then an error.
func cutFixture(t *testing.T, name string, n int) string {
	t.Helper()
	data, err := os.ReadFile(ckFixture(t, name))
	require.NoError(t, err)
	cut := filepath.Join(t.TempDir(), "cut.data")
	require.NoError(t, os.WriteFile(cut, data[:n], 0o644))
	return cut
}

// A run that exits 2 never says OK: cut after its first samples, whose
// DSOs are all verified or unverified, the recording gives every command
// exit 2 and no "OK" anywhere, and check says the rest was not checked.
func TestExitTwoNeverSaysOK(t *testing.T) {
	t.Parallel()
	cut := cutFixture(t, "cshared-fp.data", 2000)
	dir := t.TempDir()
	args := append([]string{"--symfs", ckSymfs(t)}, ckHermetic(t)...)
	for _, cmd := range [][]string{{"check"}, {"check", "--strict"}, {"top"}, {"script"}, {"script", "--folded"},
		{"pprof", "-o", filepath.Join(dir, "p.pb.gz")}, {"flamegraph", "-o", filepath.Join(dir, "f.html")},
		{"report", "-o", filepath.Join(dir, "r.html")}} {
		out, errs, code := ckRun(t, append(append(cmd, args...), cut)...)
		assert.Equal(t, exitError, code, "%v: %s", cmd, errs)
		assert.NotRegexp(t, `\bOK\b`, out+errs, "%v", cmd)
		if len(cmd) == 1 && cmd[0] == "check" {
			// Without --strict, the unverified DSOs the samples read
			// touch are no problem: OK but for the cut.
			assert.Contains(t, out, "INCOMPLETE: ", "%v", cmd)
		}
	}
	for _, f := range []string{"f.html", "r.html"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err)
		assert.NotRegexp(t, `\bOK\b`, string(b), f)
		assert.Contains(t, string(b), "PARTIAL: ", f)
	}
}

// Every --json run that fails prints a JSON error object on stdout: usage
// errors, unreadable files, and (after its sample lines) script's JSON
// Lines cut short. The message is the one on stderr. (buildid --json on
// an unreadable file says so in its own JSON, per file.)
func TestJSONErrorObject(t *testing.T) {
	t.Parallel()
	cut := cutFixture(t, "cshared-fp.data", 2000)
	missing := filepath.Join(t.TempDir(), "absent.data")
	for _, args := range [][]string{
		{"check", "--json", missing}, {"top", "--json"}, {"top", "--json", "--sort", "sideways", cut},
		{"script", "--json", "--no-such-flag", cut}, {"pprof", "--json", cut}, {"info", "--json", missing},
		{"stats", "--json", missing}, {"buildids", "--json", missing}, {"buildid", "--json"},
		{"script", "--json", cut},
	} {
		out, errs, code := ckRun(t, args...)
		require.Equal(t, exitError, code, "%v", args)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		last := lines[len(lines)-1]
		if args[0] != "script" {
			last = out // one JSON document
		}
		var e jsonError
		require.NoError(t, json.Unmarshal([]byte(last), &e), "%v: stdout %q", args, out)
		assert.Equal(t, exitError, e.ExitCode, "%v", args)
		require.NotEmpty(t, e.Error, "%v", args)
		assert.Contains(t, errs, e.Error, "%v: the message is stderr's", args)
	}
	// Without --json, stdout stays empty.
	out, _, code := ckRun(t, "check", missing)
	assert.Equal(t, exitError, code)
	assert.Empty(t, out)
}

// pprof --json counts the samples read ("samples", as check's) apart from
// the profile's pprof samples, one per distinct stack of each thread
// ("distinct_stacks").
func TestPprofJSONCounts(t *testing.T) {
	t.Parallel()
	data := ckFixture(t, "cshared-fp.data")
	pb := filepath.Join(t.TempDir(), "p.pb.gz")
	args := append([]string{"--symfs", ckSymfs(t)}, ckHermetic(t)...)
	out, errs, code := ckRun(t, append(append([]string{"pprof", "--json", "-o", pb}, args...), data)...)
	require.Equal(t, exitOK, code, errs)
	var j struct {
		Samples        *uint64 `json:"samples"`
		DistinctStacks *int    `json:"distinct_stacks"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &j))
	require.NotNil(t, j.Samples)
	require.NotNil(t, j.DistinctStacks)
	checkOut, _, _ := ckRun(t, append(append([]string{"check", "--json"}, args...), data)...)
	assert.Equal(t, ckParseReport(t, checkOut).Samples, *j.Samples)
	f, err := os.Open(pb)
	require.NoError(t, err)
	defer f.Close()
	p, err := profile.Parse(f)
	require.NoError(t, err)
	assert.Equal(t, len(p.Sample), *j.DistinctStacks)
	assert.Less(t, *j.DistinctStacks, int(*j.Samples), "the fixture repeats stacks")
}
