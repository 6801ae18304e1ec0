package buildidcache

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDefaultBuildIDDir(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("PERF_BUILDID_DIR", "")
	if got := DefaultBuildIDDir(); got != filepath.Join(home, ".debug") {
		t.Errorf("default = %s", got)
	}
	cfg := "# perf config\n[report]\n\tdir = /wrong\n[buildid]\n\tdir = ~/perfcache ; comment\n"
	if err := os.WriteFile(filepath.Join(home, ".perfconfig"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := DefaultBuildIDDir(); got != filepath.Join(home, "perfcache") {
		t.Errorf("with ~/.perfconfig = %s", got)
	}
	t.Setenv("PERF_BUILDID_DIR", "/from/env")
	if got := DefaultBuildIDDir(); got != "/from/env" {
		t.Errorf("with $PERF_BUILDID_DIR = %s", got)
	}
}

func TestDefaultDebuginfodCache(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("DEBUGINFOD_CACHE_PATH", "")
	t.Setenv("XDG_CACHE_HOME", "")
	if got := DefaultDebuginfodCache(); got != filepath.Join(home, ".cache", "debuginfod_client") {
		t.Errorf("default = %s", got)
	}
	os.Mkdir(filepath.Join(home, ".debuginfod_client_cache"), 0o755)
	if got := DefaultDebuginfodCache(); got != filepath.Join(home, ".debuginfod_client_cache") {
		t.Errorf("legacy = %s", got)
	}
	t.Setenv("XDG_CACHE_HOME", "/xdg")
	if got := DefaultDebuginfodCache(); got != "/xdg/debuginfod_client" {
		t.Errorf("xdg = %s", got)
	}
	t.Setenv("DEBUGINFOD_CACHE_PATH", "/explicit")
	if got := DefaultDebuginfodCache(); got != "/explicit" {
		t.Errorf("explicit = %s", got)
	}
	t.Setenv("DEBUGINFOD_URLS", "  http://a   https://b/ ")
	if got := DebuginfodURLsFromEnv(); len(got) != 2 || got[1] != "https://b/" {
		t.Errorf("urls = %q", got)
	}
}

// TestPerfconfigOwner: a ~/.perfconfig owned by another user (nobody,
// here) is ignored with a warning, as perf ignores it, so that its owner
// cannot point every lookup at a cache of theirs; one owned by the
// current user (or root) is read.
func TestPerfconfigOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give the file to another user")
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("PERF_BUILDID_DIR", "")
	cfg := filepath.Join(home, ".perfconfig")
	require.NoError(t, os.WriteFile(cfg, []byte("[buildid]\n\tdir = /tmp/theirs\n"), 0o644))

	require.NoError(t, os.Chown(cfg, 65534, 65534))
	dir, warnings := ConfiguredBuildIDDir()
	assert.Equal(t, filepath.Join(home, ".debug"), dir)
	require.Len(t, warnings, 1)
	assert.Contains(t, warnings[0], cfg)
	assert.Contains(t, warnings[0], "uid 65534")
	assert.Equal(t, dir, DefaultBuildIDDir())

	require.NoError(t, os.Chown(cfg, os.Geteuid(), os.Getegid()))
	dir, warnings = ConfiguredBuildIDDir()
	assert.Equal(t, "/tmp/theirs", dir)
	assert.Empty(t, warnings)
}
