package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perfcheck/perfcheck/internal/fixtures"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Each lookup source the user named that cannot be used is said once on
// stderr, by every command that looks binaries up; the run goes on.
// (The debuginfod client's downloads go to a scratch directory, not the
// user's.)
func TestUnusableLookupSourceWarns(t *testing.T) {
	t.Setenv("DEBUGINFOD_CACHE_PATH", t.TempDir())
	fx := ckFixture(t, "cshared-fp.data")
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	missing := filepath.Join(t.TempDir(), "nonexistent")
	// A port nothing listens on: one the kernel just gave a listener
	// that is closed again.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := "http://" + l.Addr().String()
	require.NoError(t, l.Close())
	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--buildid-dir", missing}, "perfcheck: warning: --buildid-dir " + missing + ": no such file or directory; nothing is looked up there"},
		{[]string{"--buildid-dir", file}, "perfcheck: warning: --buildid-dir " + file + ": not a directory; nothing is looked up there"},
		{[]string{"--debug-dir", missing}, "perfcheck: warning: --debug-dir " + missing + ": no such file or directory; nothing is looked up there"},
		{[]string{"--debug-dir", file}, "perfcheck: warning: --debug-dir " + file + ": not a directory; nothing is looked up there"},
		{[]string{"--debuginfod", closed}, "perfcheck: warning: debuginfod " + closed + ": unreachable (dial tcp " + strings.TrimPrefix(closed, "http://") + ": connect: connection refused); nothing is downloaded from it"},
		{[]string{"--debuginfod", "ftp://example.invalid"}, "perfcheck: warning: debuginfod ftp://example.invalid: not an http or https URL; nothing is downloaded from it"},
	} {
		for _, cmd := range []string{"check", "top", "script"} {
			args := append([]string{cmd, "--symfs", ckSymfs(t)}, tc.flags...)
			if tc.flags[0] != "--buildid-dir" {
				args = append(args, "--buildid-dir", t.TempDir())
			}
			if tc.flags[0] != "--debuginfod" {
				args = append(args, "--debuginfod", "none")
			}
			_, errs, code := ckRun(t, append(args, fx)...)
			assert.NotEqual(t, exitError, code, "%v: %s", args, errs)
			assert.Equal(t, tc.want+"\n", errs, "%v", args)
		}
	}
	// perfcheck cache fill creates a missing cache; a file it cannot use.
	_, errs, _ := ckRun(t, "cache", "fill", "--buildid-dir", missing, "--debuginfod", "none", "--debug-dir", t.TempDir(), fx)
	assert.NotContains(t, errs, "warning")
	_, errs, _ = ckRun(t, "cache", "fill", "--buildid-dir", file, "--debuginfod", "none", "--debug-dir", t.TempDir(), fx)
	assert.Contains(t, errs, "perfcheck: warning: --buildid-dir "+file+": not a directory")
}

// Usable sources draw no warning: an existing cache and debug directory,
// and a running debuginfod server (whose downloads go to a scratch
// directory, not the user's).
func TestUsableLookupSourceQuiet(t *testing.T) {
	t.Setenv("DEBUGINFOD_CACHE_PATH", t.TempDir())
	fx := ckFixture(t, "cshared-fp.data")
	url := fixtures.Debuginfod(t, filepath.Join(fixtureDir, "bin"), "ad8b5c79a49d3fe78a633a20251339808292bf79")
	_, errs, code := ckRun(t, "top", "--symfs", ckSymfs(t), "--buildid-dir", t.TempDir(), "--debug-dir", t.TempDir(), "--debuginfod", url, fx)
	assert.Equal(t, exitOK, code, errs)
	assert.Empty(t, errs)
}
