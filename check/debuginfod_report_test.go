package check

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// A debuginfod lookup that failed says how: a refused wrong file and a
// server that stalled do not both read "not found", the advice does not
// say to set --debuginfod when it was set, and found_path names no file
// that does not exist. One lookup asks a real debuginfod (which holds
// another binary) with that other binary planted in the client cache
// under the recorded build-id; the other asks a local server that never
// answers.
func TestRealDebuginfodFailuresReported(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	bin := w.path("busy")
	w.gcc(bin, busyV1)
	data := w.record("deleted.data", []string{"-N"}, bin)
	require.NoError(t, os.Remove(bin))
	other := w.path("served/other")
	require.NoError(t, os.MkdirAll(filepath.Dir(other), 0o755))
	w.gcc(other, busyV2)
	otherID, err := buildidcache.ReadFileIdentity(other)
	require.NoError(t, err)

	before := w.analyze(data, Options{})
	recorded := mustDSO(t, before, bin, Missing).BuildID
	url := fixtures.Debuginfod(t, filepath.Dir(other), otherID.BuildID.String())
	dcache := w.path("dcache")
	planted := filepath.Join(dcache, recorded.String(), "executable")
	require.NoError(t, os.MkdirAll(filepath.Dir(planted), 0o700))
	fixtures.CopyFile(t, other, planted)

	release := make(chan struct{})
	stall := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(stall.Close)
	t.Cleanup(func() { close(release) })

	analyze := func(server, cache string) (*DSO, *Report) {
		res := w.analyze(data, Options{Lookup: buildidcache.Options{
			BuildIDDir: "-", DebugDirs: []string{}, DebuginfodURLs: []string{server},
			DebuginfodCache: cache, DebuginfodTimeout: 300 * time.Millisecond}})
		return mustDSO(t, res, bin, Missing), res.Report()
	}
	refused, repRefused := analyze(url, dcache)
	stalled, repStalled := analyze(stall.URL, w.path("dcache2"))

	t.Logf("refused: %s\n\tstalled: %s", refused.Reason, stalled.Reason)
	assert.Contains(t, refused.Reason, "refused a wrong file: build-id mismatch: "+planted)
	assert.Contains(t, refused.Reason, "build-id mismatch")
	assert.Contains(t, refused.Reason, url+": executable not found")
	assert.NotEmpty(t, refused.Rejected)
	assert.Contains(t, stalled.Reason, stall.URL)
	assert.Contains(t, stalled.Reason, "DEBUGINFOD_TIMEOUT")
	assert.NotContains(t, stalled.Reason, "refused")
	assert.NotEqual(t, refused.Reason, stalled.Reason)
	assert.NotEmpty(t, stalled.Tried)
	for _, rep := range []*Report{repRefused, repStalled} {
		for _, a := range rep.Advice {
			assert.NotContains(t, a.Text, "set --debuginfod", "the servers were set")
		}
	}
	for _, d := range []*DSO{before.DSOs[indexOf(t, before, bin)], refused, stalled} {
		if d.FoundPath != "" {
			_, err := os.Stat(d.FoundPath)
			assert.NoError(t, err, "found_path names a file that does not exist")
		}
	}
}

// indexOf returns the index of the DSO of path in res.DSOs.
func indexOf(t *testing.T, res *Result, path string) int {
	t.Helper()
	for i, d := range res.DSOs {
		if d.Path == path {
			return i
		}
	}
	t.Fatalf("no DSO %s", path)
	return -1
}
