package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// perfcheck man writes one page per command line, and man renders each
// without a warning at the usual terminal width and a narrow one.
func TestManPagesRender(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("man"); err != nil {
		t.Skip("man is not installed (scripts/test.sh installs man-db)")
	}
	dir := t.TempDir()
	out, errs, code := ckRun(t, "man", dir)
	require.Equal(t, exitOK, code, errs)
	want := []string{filepath.Join(dir, "perfcheck.1")}
	for _, s := range commandSpecs() {
		want = append(want, filepath.Join(dir, "perfcheck-"+strings.Join(s.path, "-")+".1"))
	}
	assert.Equal(t, strings.Join(want, "\n")+"\n", out)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var files []string
	for _, e := range entries {
		files = append(files, filepath.Join(dir, e.Name()))
	}
	sort.Strings(want)
	assert.Equal(t, want, files, "no temporary file is left")

	render := func(page, width string) string {
		cmd := exec.Command("man", "-l", "--warnings", page)
		cmd.Env = append(os.Environ(), "MANWIDTH="+width, "MAN_KEEP_FORMATTING=", "LANG=C.UTF-8")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		require.NoError(t, cmd.Run(), "%s: %s", page, stderr.String())
		assert.Empty(t, stderr.String(), "%s at width %s", page, width)
		return stdout.String()
	}
	for _, p := range want {
		for _, width := range []string{"80", "60"} {
			render(p, width)
		}
	}
	top := render(filepath.Join(dir, "perfcheck-top.1"), "80")
	assert.Contains(t, top, "perfcheck top [flags] perf.data|-")
	assert.Contains(t, top, "--percent-limit PCT")
	assert.Contains(t, top, "-e, --event NAME[,NAME...]")
	index := render(filepath.Join(dir, "perfcheck.1"), "80")
	for _, c := range []string{"check", "top", "cache", "man"} {
		assert.Regexp(t, `(?m)^ {7}`+c+`( |\n)`, index)
	}
	fill := render(filepath.Join(dir, "perfcheck-cache-fill.1"), "80")
	assert.Contains(t, fill, "--buildid-dir STRING")
	sym := render(filepath.Join(dir, "perfcheck-symbolize.1"), "80")
	assert.Contains(t, sym, "--demangle")
	assert.Contains(t, sym, "(default true)")
}

func TestManUsageError(t *testing.T) {
	t.Parallel()
	_, errs, code := ckRun(t, "man", "a", "b")
	assert.Equal(t, exitError, code)
	assert.True(t, strings.HasPrefix(errs, "perfcheck man: one directory expected, got [\"a\" \"b\"]\n"), errs)
	_, errs, code = ckRun(t, "man", filepath.Join(t.TempDir(), "missing"))
	assert.Equal(t, exitError, code)
	assert.Contains(t, errs, "perfcheck man: ")
	assert.Contains(t, errs, "missing")
}
