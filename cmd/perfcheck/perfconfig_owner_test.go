package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPerfconfigOwnerWarning: commands that pick perf's cache from the
// configuration say on stderr that a ~/.perfconfig owned by another user
// (nobody) was ignored, and use $HOME/.debug.
func TestPerfconfigOwnerWarning(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give the file to another user")
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("PERF_BUILDID_DIR", "")
	theirs := t.TempDir()
	cfg := filepath.Join(home, ".perfconfig")
	require.NoError(t, os.WriteFile(cfg, []byte("[buildid]\n\tdir = "+theirs+"\n"), 0o644))
	require.NoError(t, os.Chown(cfg, 65534, 65534))
	var stdout, stderr bufWriter
	code := run([]string{"cache", "list", "--json"}, nil, &stdout, &stderr)
	require.Equal(t, exitOK, code, stderr.String())
	assert.Contains(t, stderr.String(), "perfcheck: warning: "+cfg+" is owned by uid 65534")
	assert.Contains(t, stdout.String(), filepath.Join(home, ".debug"))
	assert.NotContains(t, stdout.String(), theirs)
}
