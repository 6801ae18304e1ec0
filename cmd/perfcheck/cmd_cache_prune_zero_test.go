package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/perfcheck/perfcheck/internal/fixtures"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCachePruneMaxSizeZero: `cache prune --max-size 0` empties the cache.
func TestCachePruneMaxSizeZero(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	for _, name := range []string{"a", "b"} {
		bin := fixtures.BuildC(t, dir, name, "-Wl,--build-id", `-DTAG="`+name+`"`)
		var out, errb bufWriter
		require.Equal(t, exitOK, run([]string{"cache", "add", "--buildid-dir", cache, bin}, nil, &out, &errb), errb.String())
	}
	var out, errb bufWriter
	require.Equal(t, exitOK, run([]string{"cache", "prune", "--buildid-dir", cache, "--max-size", "0", "--json"}, nil, &out, &errb), errb.String())
	var rep struct {
		Removed   []cacheEntryJSON `json:"removed"`
		Kept      int              `json:"kept"`
		SizeAfter int64            `json:"size_after"`
	}
	require.NoError(t, json.Unmarshal([]byte(out.String()), &rep), out.String())
	assert.Len(t, rep.Removed, 2)
	assert.Zero(t, rep.Kept)
	assert.Zero(t, rep.SizeAfter)
	out, errb = bufWriter{}, bufWriter{}
	require.Equal(t, exitOK, run([]string{"cache", "list", "--buildid-dir", cache, "--json"}, nil, &out, &errb), errb.String())
	assert.Contains(t, out.String(), `"entries": []`)
}
