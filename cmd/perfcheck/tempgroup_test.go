package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/check"
	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// spinTest is a test that spins 150 ms of wall time in its own code.
const spinTest = `package %s

import (
	"testing"
	"time"
)

var sink int

func TestSpin(t *testing.T) {
	end := time.Now().Add(150 * time.Millisecond)
	for time.Now().Before(end) {
		for i := 0; i < 1000; i++ {
			sink += i
		}
	}
}
`

// A real recording of go test on three packages touches three test
// binaries that the go command linked in its work directory and removed
// when done: check's text prints them as one line with their count and
// pattern (in the table, the details and the advice), never one by one;
// --json lists each.
func TestCheckGroupsDeletedTemporaryBinaries(t *testing.T) {
	t.Parallel()
	needPerf(t)
	goCmd := fixtures.NeedTool(t, "go")
	cache, err := exec.Command(goCmd, "env", "GOCACHE").Output()
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module gt\ngo 1.22\n"), 0o644))
	for _, p := range []string{"a", "b", "c"} {
		require.NoError(t, os.Mkdir(filepath.Join(dir, p), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, p, p+"_test.go"), []byte(fmt.Sprintf(spinTest, p)), 0o644))
	}
	data := filepath.Join(dir, "gotest.data")
	args := []string{"record", "-N", "-q", "-e", "cpu-clock:u", "-o", data, "--", goCmd, "test", "-count=1", "./a", "./b", "./c"}
	for attempt := 1; ; attempt++ {
		cmd := exec.Command("perf", args...)
		cmd.Dir = dir
		// The machine's build cache: the standard library is not
		// compiled again under the scratch HOME.
		cmd.Env = append(fixtures.PerfEnv(dir), "GOCACHE="+strings.TrimSpace(string(cache)), "GOTOOLCHAIN=local", "GOFLAGS=")
		out, err := cmd.CombinedOutput()
		if err == nil {
			break
		}
		if !fixtures.PerfDied(err) || attempt == fixtures.PerfAttempts {
			t.Fatalf("perf %v: %v\n%s", args, err, out)
		}
	}

	out, errs, code := ckRun(t, append(append([]string{"check", "--json"}, ckHermetic(t)...), data)...)
	require.Equal(t, exitProblems, code, errs)
	testBin := regexp.MustCompile(`/go-build[0-9]+/b[0-9]+/[abc]\.test$`)
	var paths []string
	var leaf, anyHits uint64
	for _, d := range ckParseReport(t, out).DSOs {
		if testBin.MatchString(d.Path) {
			assert.Equal(t, "missing", d.Verdict, d.Path)
			paths = append(paths, d.Path)
			leaf += d.HitsLeaf
			anyHits += d.HitsAny
		}
	}
	require.GreaterOrEqual(t, len(paths), 2, "test binaries with samples: %v", paths)
	pattern := paths[0][:strings.Index(paths[0], "/go-build")] + "/go-build*/**"
	label := fmt.Sprintf("%s (%d deleted temporary binaries; --json lists each)", pattern, len(paths))

	out, errs, code = ckRun(t, append(append([]string{"check"}, ckHermetic(t)...), data)...)
	require.Equal(t, exitProblems, code, errs)
	for _, p := range paths {
		assert.NotContains(t, out, p, "listed one by one")
	}
	assert.Regexp(t, `(?m)^missing !\s+`+fmt.Sprint(leaf)+`\s+`+fmt.Sprint(anyHits)+`\s+-\s+-\s+`+regexp.QuoteMeta(label)+`$`, out)
	assert.Contains(t, out, "\n"+pattern+fmt.Sprintf(": %d binaries, missing: temporary ones", len(paths)))
	assert.Contains(t, whatToDo(t, out), "\n      "+label+"\n")
	assert.Contains(t, out, fmt.Sprintf("FAIL: %d DSOs", len(paths)), "the verdict counts each")
}

// The patterns of deleted temporary binaries: a go command work
// directory, perf's mark of a file deleted while mapped, a temporary
// directory; only missing binaries are grouped.
func TestTempPattern(t *testing.T) {
	t.Parallel()
	tmp := []string{"/tmp", "/var/tmp"}
	for _, c := range []struct {
		path    string
		verdict check.Verdict
		want    string
	}{
		{"/tmp/go-build149213619/b126/b.test", check.Missing, "/tmp/go-build*/**"},
		{"/home/u/tmp/go-build1/b001/exe/main", check.Missing, "/home/u/tmp/go-build*/**"},
		{"/usr/bin/server (deleted)", check.Missing, "* (deleted)"},
		{"/var/tmp/cc1/prog", check.Missing, "/var/tmp/**"},
		{"/tmp/go-build149213619/b126/b.test", check.Mismatch, ""},
		{"/usr/bin/gone", check.Missing, ""},
		{"/tmpfoo/prog", check.Missing, ""},
	} {
		assert.Equal(t, c.want, tempPattern(&check.DSO{Path: c.path, Verdict: c.verdict}, tmp), c.path)
	}
}
