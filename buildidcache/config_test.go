package buildidcache

import (
	"os"
	"path/filepath"
	"testing"
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
