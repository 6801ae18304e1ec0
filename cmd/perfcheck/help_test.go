package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// --version and "perfcheck version" name the revision the binary was
// built from: a real build, stamped by the Go toolchain, of this tree's
// Go sources committed to a scratch repository (the toolchain stamps
// nothing in a git worktree, whose .git is a file).
func TestVersionNamesRevision(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	files, err := exec.Command("git", "-C", root, "ls-files", "-co", "--exclude-standard", "*.go", "go.mod", "go.sum", "*.tmpl", "*.js", "*.css").Output()
	if err != nil {
		t.Skipf("no git checkout: %v", err)
	}
	repo := t.TempDir()
	for _, f := range strings.Fields(string(files)) {
		data, err := os.ReadFile(filepath.Join(root, f))
		if os.IsNotExist(err) {
			continue // deleted in the work tree
		}
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Join(repo, filepath.Dir(f)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(repo, f), data, 0o644))
	}
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@t.invalid"}, args...)...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-qm", "x")
	head := git("rev-parse", "HEAD")
	bin := filepath.Join(t.TempDir(), "perfcheck")
	build := exec.Command("go", "build", "-buildvcs=true", "-o", bin, "./cmd/perfcheck")
	build.Dir = repo
	build.Env = append(build.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, args := range [][]string{{"--version"}, {"version"}} {
		out, err := exec.Command(bin, args...).Output()
		require.NoError(t, err, "%v", args)
		assert.Regexp(t, `^perfcheck \S+ `+head+` \d{4}-\d\d-\d\dT\S+ go1\.\S+\n$`, string(out), "%v", args)
	}
	_, errs, code := ckRun(t, "version", "x")
	assert.Equal(t, exitError, code)
	assert.Regexp(t, `^perfcheck version: takes no arguments, got \["x"\]\nusage: perfcheck version\n$`, errs)
}

// "perfcheck help CMD" prints that command's usage and flags on stdout;
// an unknown one says so, with the nearest name, before the usage.
func TestHelpCommand(t *testing.T) {
	t.Parallel()
	for name, c := range commands {
		out, errs, code := ckRun(t, "help", name)
		assert.Equal(t, exitOK, code, "%s: %s", name, errs)
		assert.Empty(t, errs, name)
		assert.True(t, strings.HasPrefix(out, "usage: perfcheck "+strings.Fields(c.usage)[1]), "%s: %q", name, out)
	}
	out, _, _ := ckRun(t, "help", "top")
	assert.Contains(t, out, "-sort")
	assert.NotContains(t, out, "commands:")
	_, errs, code := ckRun(t, "help", "tpo")
	assert.Equal(t, exitError, code)
	assert.Regexp(t, `^perfcheck help: no command "tpo"; did you mean "top"\?\nusage: perfcheck`, errs)
}

// A mistyped command is named with the nearest one on one line before
// the usage, not read as a recording.
func TestMistypedCommand(t *testing.T) {
	t.Parallel()
	for typo, want := range map[string]string{"chek": "check", "scirpt": "script", "flamegrph": "flamegraph", "verison": "version"} {
		_, errs, code := ckRun(t, typo)
		assert.Equal(t, exitError, code, typo)
		assert.Regexp(t, `^perfcheck: unknown command "`+typo+`" \(and no such file\); did you mean "`+want+`"\?\nusage: perfcheck`, errs, typo)
	}
	// Far from every command: taken as a recording, whose error names it.
	_, errs, code := ckRun(t, "/nonexistent/recording.data")
	assert.Equal(t, exitError, code)
	assert.Contains(t, errs, "/nonexistent/recording.data")
}

// Every usage error says why on one line before any usage text.
func TestUsageErrorsSayWhy(t *testing.T) {
	t.Parallel()
	fx := ckFixture(t, "cshared-fp.data")
	for _, tc := range []struct {
		args []string
		why  string
	}{
		{[]string{"pprof", fx}, "perfcheck pprof: -o FILE is required (- for stdout)"},
		{[]string{"flamegraph", fx}, "perfcheck flamegraph: -o FILE is required (.svg for SVG, else HTML; - for stdout)"},
		{[]string{"report", fx}, "perfcheck report: -o FILE is required (- for stdout)"},
		{[]string{"top", "--sort", "foo", fx}, `perfcheck top: --sort foo: unknown sort key "foo" (the keys are comm, pid, dso, sym), or self or total`},
		{[]string{"top", "--sort", "dso,foo", fx}, `perfcheck top: --sort dso,foo: unknown sort key "foo" (the keys are comm, pid, dso, sym), or self or total`},
		{[]string{"top", "--percent-limit", "101", fx}, "perfcheck top: --percent-limit 101: give a percentage from 0 to 100"},
		{[]string{"top", "-n", "-1", fx}, "perfcheck top: -n -1: give 0 (all) or more"},
		{[]string{"report", "-o", "x.html", "-n", "-1", fx}, "perfcheck report: -n -1: give 0 (all) or more"},
		{[]string{"buildid"}, "perfcheck buildid: no FILE given: name the binaries to read"},
		{[]string{"cache"}, "perfcheck cache: a subcommand is required: add, fill, list or prune"},
		{[]string{"cache", "add"}, "perfcheck cache add: no FILE given: name the binaries to add"},
		{[]string{"cache", "list", "x"}, `perfcheck cache list: takes no arguments, got ["x"]`},
		{[]string{"cache", "prune"}, "perfcheck cache prune: --max-size is required"},
		{[]string{"top", "--no-such-flag", fx}, "flag provided but not defined: -no-such-flag"},
	} {
		_, errs, code := ckRun(t, tc.args...)
		assert.Equal(t, exitError, code, "%v", tc.args)
		first, rest, _ := strings.Cut(errs, "\n")
		assert.Equal(t, tc.why, first, "%v", tc.args)
		assert.True(t, strings.HasPrefix(rest, "usage: "), "%v: %q", tc.args, rest)
	}
}
