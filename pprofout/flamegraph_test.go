package pprofout

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pprofStacks is the data pprof's web UI draws its flame graph from
// (internal/report's StackSet, passed to stackViewer in /ui/flamegraph):
// stacks of source indexes, root first.
type pprofStacks struct {
	Total  int64
	Stacks []struct {
		Value   int64
		Sources []int
	}
	Sources []struct{ FullName string }
}

// serveFlameGraph runs go tool pprof's web UI on file (loopback, no
// browser) and returns the flame graph data of /ui/flamegraph.
func serveFlameGraph(t *testing.T, file string) *pprofStacks {
	t.Helper()
	out, err := exec.Command(goTool(t), "tool", "-n", "pprof").Output()
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	// The tool binary itself, not `go tool pprof`: killing it then
	// leaves no server behind.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, strings.TrimSpace(string(out)), "-no_browser", "-http="+addr, file)
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "PPROF_BINARY_PATH="+home, "PPROF_TMPDIR="+home)
	require.NoError(t, cmd.Start())
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var page []byte
	for i := 0; ; i++ {
		resp, err := http.Get("http://" + addr + "/ui/flamegraph")
		if err == nil {
			page, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", page)
			break
		}
		require.Less(t, i, 300, "pprof's web UI did not answer: %v", err)
		time.Sleep(100 * time.Millisecond)
	}
	m := regexp.MustCompile(`stackViewer\((\{.*\}), `).FindSubmatch(page)
	require.NotNil(t, m, "no flame graph data in /ui/flamegraph:\n%.2000s", page)
	var st pprofStacks
	require.NoError(t, json.Unmarshal(m[1], &st))
	return &st
}

// The flame graph of go tool pprof's web UI draws the mismatched library:
// the stacks whose leaf is its label weigh its share of the period, not
// the caller's own time.
func TestPprofFlameGraphKeepsUntrustedWeight(t *testing.T) {
	if testing.Short() {
		t.Skip("starts go tool pprof's web server")
	}
	res, lib, file := mismatchedProfile(t)

	st := serveFlameGraph(t, file)
	var leaf, through int64
	for _, s := range st.Stacks {
		n := len(s.Sources)
		require.NotZero(t, n)
		if st.Sources[s.Sources[n-1]].FullName == "[mismatch] libhot.so" {
			leaf += s.Value
		}
		for _, src := range s.Sources {
			if st.Sources[src].FullName == "[mismatch] libhot.so" {
				through += s.Value
				break
			}
		}
	}
	// Every sample of the fixture has the period 1001001 ns.
	assert.Equal(t, int64(res.Samples)*1001001, st.Total)
	assert.Equal(t, int64(lib.HitsLeaf)*1001001, leaf, "leaf period of the library in the flame graph")
	assert.Equal(t, int64(lib.HitsAny)*1001001, through, "period of the stacks through the library")
	t.Logf("flame graph: %s has %s of %d ns at the leaf", "[mismatch] libhot.so", strconv.FormatInt(leaf, 10), st.Total)
}
