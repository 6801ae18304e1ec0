package buildidcache

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostileServer serves every request with h on 127.0.0.1 and stops with
// the test.
func hostileServer(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	s, _ := faultServer(t, h)
	return s.URL
}

// requireNothingCached asserts that the debuginfod cache holds no file
// (temporary or not) for any build-id.
func requireNothingCached(t *testing.T, cache string) {
	t.Helper()
	filepath.WalkDir(cache, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			t.Errorf("left in the debuginfod cache: %s", p)
		}
		return nil
	})
}

// TestDebuginfodTrailingData: a server answers with the right file
// followed by 2 GiB of zeros (the file is a real binary built here; the
// zeros are generated as they are sent). The download stops right after
// the bytes the file's ELF headers describe: nothing enters the cache and
// the server gets to send little more than the file, whether it announces
// the length or not, and whether the section headers come last (C) or
// first (Go).
func TestDebuginfodTrailingData(t *testing.T) {
	dir := t.TempDir()
	for _, prog := range []string{buildC(t, dir, "prog", "-Wl,--build-id"), buildGo(t, dir, "goprog", nil)} {
		file, err := os.ReadFile(prog)
		require.NoError(t, err)
		id := mustID(t, prog)
		for _, announce := range []bool{true, false} {
			t.Run(filepath.Base(prog)+"/content-length="+strconv.FormatBool(announce), func(t *testing.T) {
				var sent atomic.Int64
				url := hostileServer(t, func(w http.ResponseWriter, r *http.Request) {
					if announce {
						w.Header().Set("Content-Length", strconv.FormatInt(int64(len(file))+2<<30, 10))
					}
					n, err := w.Write(file)
					sent.Add(int64(n))
					zeros := make([]byte, 1<<20)
					for i := 0; i < 2<<10 && err == nil; i++ {
						n, err = w.Write(zeros)
						sent.Add(int64(n))
					}
				})
				opts := noNet(t)
				opts.DebuginfodURLs = []string{url}
				r := New(opts)
				_, err := r.Resolve(context.Background(), Query{BuildID: id.BuildID})
				var nf *NotFoundError
				require.ErrorAs(t, err, &nf)
				require.NotEmpty(t, nf.Rejected)
				assert.Contains(t, nf.Rejected[0].Reason(), "its ELF headers describe")
				requireNothingCached(t, opts.DebuginfodCache)
				t.Logf("the server sent %d bytes of %d", sent.Load(), int64(len(file))+2<<30)
				assert.Less(t, sent.Load(), int64(len(file))+64<<20, "bytes the server sent")
				assert.Empty(t, r.dl.down, "a refused file does not make the server dead")
			})
		}
	}
}

// TestDebuginfodMaxSize: a file larger than the limit is refused while it
// arrives, announced or not; $DEBUGINFOD_MAXSIZE sets the limit (0 there
// means none, as in elfutils), and the defaults differ by type.
func TestDebuginfodMaxSize(t *testing.T) {
	dir := t.TempDir()
	prog := buildC(t, dir, "prog", "-Wl,--build-id")
	file, err := os.ReadFile(prog)
	require.NoError(t, err)
	id := mustID(t, prog)
	for _, announce := range []bool{true, false} {
		t.Run("content-length="+strconv.FormatBool(announce), func(t *testing.T) {
			var sent atomic.Int64
			url := hostileServer(t, func(w http.ResponseWriter, r *http.Request) {
				if announce {
					w.Header().Set("Content-Length", strconv.Itoa(len(file)))
				}
				n, _ := w.Write(file)
				sent.Add(int64(n))
			})
			opts := noNet(t)
			opts.DebuginfodURLs = []string{url}
			opts.DebuginfodMaxSize = 4096
			_, err := New(opts).Resolve(context.Background(), Query{BuildID: id.BuildID})
			var nf *NotFoundError
			require.ErrorAs(t, err, &nf)
			require.NotEmpty(t, nf.Rejected)
			assert.Contains(t, nf.Rejected[0].Reason(), "4096")
			assert.Contains(t, nf.Rejected[0].Reason(), "DEBUGINFOD_MAXSIZE")
			requireNothingCached(t, opts.DebuginfodCache)
		})
	}

	for env, want := range map[string][2]int64{
		"":     {defaultMaxExecutable, defaultMaxDebuginfo},
		"1000": {1000, 1000},
		"0":    {0, 0},
		"-1":   {defaultMaxExecutable, defaultMaxDebuginfo},
		"x":    {defaultMaxExecutable, defaultMaxDebuginfo},
	} {
		t.Setenv("DEBUGINFOD_MAXSIZE", env)
		d := New(noNet(t)).dl
		assert.Equal(t, want, [2]int64{d.limit("executable"), d.limit("debuginfo")}, "DEBUGINFOD_MAXSIZE=%q", env)
	}
	opts := noNet(t)
	opts.DebuginfodMaxSize = 7
	assert.Equal(t, int64(7), New(opts).dl.limit("debuginfo"), "the option wins")
}

// TestDebuginfodGzipBomb: a server that answers with Content-Encoding gzip
// although it was asked for the file as it is — a 1 MiB body of gzip
// members that inflate to the right file followed by 1 GiB of zeros — is
// refused without inflating anything, and the request never asked for
// gzip, not even through Go's transport, which asks on its own.
func TestDebuginfodGzipBomb(t *testing.T) {
	dir := t.TempDir()
	prog := buildC(t, dir, "prog", "-Wl,--build-id")
	file, err := os.ReadFile(prog)
	require.NoError(t, err)
	id := mustID(t, prog)
	// One member holds the file, each further one 16 MiB of zeros; Go's
	// reader, like gzip(1), reads concatenated members as one stream.
	var body bytes.Buffer
	zw := gzip.NewWriter(&body)
	zw.Write(file)
	zw.Close()
	var zeros bytes.Buffer
	zw = gzip.NewWriter(&zeros)
	zw.Write(make([]byte, 16<<20))
	zw.Close()
	for range 64 {
		body.Write(zeros.Bytes())
	}
	require.Less(t, body.Len(), 2<<20)

	var asked atomic.Value
	url := hostileServer(t, func(w http.ResponseWriter, r *http.Request) {
		asked.Store(r.Header.Get("Accept-Encoding"))
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Length", strconv.Itoa(body.Len()))
		w.Write(body.Bytes())
	})
	opts := noNet(t)
	opts.DebuginfodURLs = []string{url}
	start := time.Now()
	_, err = New(opts).Resolve(context.Background(), Query{BuildID: id.BuildID})
	var nf *NotFoundError
	require.ErrorAs(t, err, &nf)
	require.NotEmpty(t, nf.Rejected)
	assert.Contains(t, nf.Rejected[0].Reason(), `Content-Encoding "gzip"`)
	assert.NotContains(t, asked.Load(), "gzip")
	requireNothingCached(t, opts.DebuginfodCache)
	assert.Less(t, time.Since(start), 10*time.Second)
}

// trickle serves the first bytes of file one every period until the
// client goes away.
func trickle(file []byte, period time.Duration) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(file)))
		for _, b := range file {
			if _, err := w.Write([]byte{b}); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-time.After(period):
			case <-r.Context().Done():
				return
			}
		}
	}
}

// TestDebuginfodTrickle: a body that trickles in — a byte every 20 ms of
// the right file, from a server on 127.0.0.1 — is cut by
// DEBUGINFOD_MAXTIME however steadily it comes, by the progress rule
// (100 KiB per DEBUGINFOD_TIMEOUT) even though no read ever waits long,
// and by the Resolver's deadline when that comes first. Each cut happens
// no earlier than its bound (timers do not fire early) and says which
// rule cut it; a download the bound did not cut would trickle for minutes
// (the file is 16 KB and more), which trickleCut's wait catches. The
// bounds a run uses by default are proven by cmd/perfcheck's
// TestHostileDebuginfodTrickle.
func TestDebuginfodTrickle(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	prog := buildC(t, dir, "prog", "-Wl,--build-id")
	file, err := os.ReadFile(prog)
	require.NoError(t, err)
	id := mustID(t, prog)
	for _, c := range []struct {
		name                       string
		timeout, maxTime, deadline time.Duration
		bound                      time.Duration
		want                       string
	}{
		{"maxtime", time.Minute, 500 * time.Millisecond, time.Minute, 500 * time.Millisecond, "not complete within 500ms (DEBUGINFOD_MAXTIME)"},
		{"progress", 500 * time.Millisecond, time.Minute, time.Minute, 500 * time.Millisecond, "no progress of 100 KiB within 500ms"},
		{"deadline", time.Minute, time.Minute, 500 * time.Millisecond, 500 * time.Millisecond, "not complete 500ms after the first download began (DEBUGINFOD_MAXTIME)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s, _ := faultServer(t, trickle(file, 20*time.Millisecond))
			require.True(t, strings.HasPrefix(s.URL, "http://127.0.0.1:"), s.URL)
			opts := noNet(t)
			opts.DebuginfodURLs = []string{s.URL}
			opts.DebuginfodTimeout = c.timeout
			opts.DebuginfodMaxTime = c.maxTime
			opts.DebuginfodDeadline = c.deadline
			err, took := trickleCut(t, New(opts), id)
			require.ErrorIs(t, err, ErrNotFound)
			assert.Contains(t, err.Error(), c.want)
			assert.GreaterOrEqual(t, took, c.bound, "cut before its bound")
			requireNothingCached(t, opts.DebuginfodCache)
		})
	}
}

// trickleCut resolves id's executable with r, whose server trickles it,
// and returns the error and how long it took. It waits a minute, a
// hundred times the bounds TestDebuginfodTrickle sets, for the cut.
func trickleCut(t *testing.T, r *Resolver, id *Identity) (error, time.Duration) {
	t.Helper()
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		_, err := r.Resolve(context.Background(), Query{BuildID: id.BuildID})
		done <- err
	}()
	select {
	case err := <-done:
		took := time.Since(start)
		t.Logf("cut after %v: %v", took.Round(time.Millisecond), err)
		return err, took
	case <-time.After(time.Minute):
		t.Fatal("still downloading after a minute")
		return nil, 0
	}
}

// TestDebuginfodTimeBoundsEnv: $DEBUGINFOD_MAXTIME is whole seconds per
// download, 0 for none, as elfutils reads it, else 30 s; the Resolver's
// deadline follows it but is never shorter than 30 s, and is none when a
// download has none.
func TestDebuginfodTimeBoundsEnv(t *testing.T) {
	for env, want := range map[string][2]time.Duration{
		"":    {30 * time.Second, 30 * time.Second},
		"3":   {3 * time.Second, 30 * time.Second},
		"300": {300 * time.Second, 300 * time.Second},
		"0":   {-1, -1},
		"-2":  {30 * time.Second, 30 * time.Second},
		"1.5": {30 * time.Second, 30 * time.Second},
	} {
		t.Setenv("DEBUGINFOD_MAXTIME", env)
		d := New(noNet(t)).dl
		assert.Equal(t, want, [2]time.Duration{d.maxTime, d.deadline}, "DEBUGINFOD_MAXTIME=%q: max time, deadline", env)
	}
	t.Setenv("DEBUGINFOD_MAXTIME", "300")
	opts := noNet(t)
	opts.DebuginfodMaxTime = time.Second
	opts.DebuginfodDeadline = 2 * time.Second
	d := New(opts).dl
	assert.Equal(t, [2]time.Duration{time.Second, 2 * time.Second}, [2]time.Duration{d.maxTime, d.deadline}, "the options win")
}

// TestDebuginfodCacheSymlink: <cache>/<build-id> is a symlink to another
// directory, which holds a file of the user's named debuginfo (not ELF) and
// one named executable (another binary). Neither is removed or replaced,
// nothing is created there, no request is made, and the lookup says why.
func TestDebuginfodCacheSymlink(t *testing.T) {
	dir := t.TempDir()
	prog := buildC(t, dir, "prog", "-Wl,--build-id")
	other := buildC(t, dir, "other", "-Wl,--build-id", "-DX=1", "-O2")
	id := mustID(t, prog)
	victim := t.TempDir()
	otherBytes, err := os.ReadFile(other)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(victim, "debuginfo"), []byte("my notes\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(victim, "executable"), otherBytes, 0o755))

	s, n := faultServer(t, func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, prog) })
	opts := noNet(t)
	opts.DebuginfodURLs = []string{s.URL}
	require.NoError(t, os.MkdirAll(opts.DebuginfodCache, 0o700))
	require.NoError(t, os.Symlink(victim, filepath.Join(opts.DebuginfodCache, id.BuildID.String())))

	_, err = New(opts).Resolve(context.Background(), Query{BuildID: id.BuildID})
	require.ErrorIs(t, err, ErrNotFound)
	assert.Contains(t, err.Error(), "is a symlink, not followed")
	assert.Zero(t, n.Load(), "requests made for a cache entry that leads outside the cache")
	ents, err := os.ReadDir(victim)
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	assert.Equal(t, []string{"debuginfo", "executable"}, names)
	b, err := os.ReadFile(filepath.Join(victim, "debuginfo"))
	require.NoError(t, err)
	assert.Equal(t, "my notes\n", string(b))
	b, err = os.ReadFile(filepath.Join(victim, "executable"))
	require.NoError(t, err)
	assert.True(t, bytes.Equal(otherBytes, b), "the user's executable was replaced")
}

// TestDebuginfodRefusalReasons: a body that is not ELF at all is refused
// at its first bytes, with a reason, and the server stays usable.
func TestDebuginfodRefusalReasons(t *testing.T) {
	dir := t.TempDir()
	prog := buildC(t, dir, "prog", "-Wl,--build-id")
	id := mustID(t, prog)
	url := hostileServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(strings.Repeat("<html>not found</html>\n", 100)))
	})
	opts := noNet(t)
	opts.DebuginfodURLs = []string{url}
	_, err := New(opts).Resolve(context.Background(), Query{BuildID: id.BuildID})
	var nf *NotFoundError
	require.ErrorAs(t, err, &nf)
	require.Len(t, nf.Rejected, 2)
	for _, c := range nf.Rejected {
		assert.True(t, errors.Is(c.Err, ErrServer), c.Reason())
		assert.Contains(t, c.Reason(), "not an ELF file")
	}
	requireNothingCached(t, opts.DebuginfodCache)
}
