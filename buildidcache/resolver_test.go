package buildidcache

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/perfcheck/perfcheck/buildid"
	"github.com/perfcheck/perfcheck/dso"
	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// noNet is the Options base for tests: no perf cache, no debug dirs, no
// servers, a private debuginfod cache; tests turn on what they exercise.
func noNet(t *testing.T) Options {
	return Options{BuildIDDir: "-", DebugDirs: []string{}, DebuginfodURLs: []string{},
		DebuginfodCache: filepath.Join(t.TempDir(), "dcache")}
}

func mustID(t testing.TB, file string) *Identity {
	t.Helper()
	id, err := ReadFileIdentity(file)
	if err != nil {
		t.Fatal(err)
	}
	if id.BuildID == nil {
		t.Fatalf("%s has no build-id", file)
	}
	return id
}

// perfRecord runs real perf record with HOME=home, so that perf fills
// home/.debug the way it does for a user, and returns the perf.data path.
func perfRecord(t testing.TB, home string, cmd ...string) string {
	t.Helper()
	needTool(t, "perf")
	out := filepath.Join(home, "perf.data")
	args := append([]string{"record", "-q", "-e", "cpu-clock", "-o", out, "--"}, cmd...)
	c := exec.Command("perf", args...)
	c.Env = append(os.Environ(), "HOME="+home)
	c.Env = slicesDeleteEnv(c.Env, "PERF_BUILDID_DIR")
	if b, err := c.CombinedOutput(); err != nil {
		t.Skipf("perf record does not work here: %v\n%s", err, b)
	}
	return out
}

func slicesDeleteEnv(env []string, key string) []string {
	out := env[:0:0]
	for _, e := range env {
		if !strings.HasPrefix(e, key+"=") {
			out = append(out, e)
		}
	}
	return out
}

// TestResolvePerfCache resolves user, kernel and vDSO build-ids from a
// cache that real perf filled during perf record.
func TestResolvePerfCache(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	prog := buildC(t, home, "prog", "-Wl,--build-id")
	perfRecord(t, home, prog, "1")
	cache := filepath.Join(home, ".debug")
	opts := noNet(t)
	opts.BuildIDDir = cache
	r := New(opts)
	ctx := context.Background()

	id := mustID(t, prog)
	res, err := r.Resolve(ctx, Query{BuildID: id.BuildID, Path: prog})
	if err != nil {
		t.Fatal(err)
	}
	wantElf := filepath.Join(cache, ".build-id", id.BuildID.String()[:2], id.BuildID.String()[2:], "elf")
	if res.Identity.Locator != "perf-cache" || res.Identity.Path != wantElf || res.Identity.Role != "elf" {
		t.Errorf("identity %+v, want perf-cache %s", res.Identity, wantElf)
	}

	// The recorded binary is rebuilt: the cache still answers, and the
	// path lookup would be rejected.
	if err := os.Remove(prog); err != nil {
		t.Fatal(err)
	}
	buildC(t, home, "prog", "-Wl,--build-id", "-DOTHER=1", "-O2")
	if again := mustID(t, prog); again.BuildID.Matches(id.BuildID) {
		t.Fatal("rebuild kept the build-id")
	}
	if _, err := r.Resolve(ctx, Query{BuildID: id.BuildID, Path: prog}); err != nil {
		t.Errorf("after rebuild: %v", err)
	}

	// perf caches only the DSOs that samples hit; the kernel and the vDSO
	// usually are, but not always.
	hit := func(name string) bool {
		_, err := os.Stat(filepath.Join(cache, name))
		if err != nil {
			t.Logf("perf did not cache %s in this run", name)
		}
		return err == nil
	}
	// The kernel: perf copied kallsyms under the running kernel's build-id.
	if kid, err := KernelBuildID(); err == nil && hit("[kernel.kallsyms]") {
		res, err := r.Resolve(ctx, Query{BuildID: kid, Path: "[kernel.kallsyms]", Kind: dso.Kernel})
		if err != nil {
			t.Fatal(err)
		}
		if res.Identity.Role != "kallsyms" || res.Identity.Locator != "perf-cache" || res.Identity.Verified != "cache-key" {
			t.Errorf("kernel: %+v", res.Identity)
		}
	}
	// The vDSO: perf wrote it as <root>/[vdso]/<bid>/vdso.
	if _, vid, err := VDSO(); err == nil && hit("[vdso]") {
		res, err := r.Resolve(ctx, Query{BuildID: vid.BuildID, Path: "[vdso]", Kind: dso.VDSO})
		if err != nil {
			t.Fatal(err)
		}
		if res.Identity.Role != "vdso" || res.Identity.Locator != "perf-cache" {
			t.Errorf("vdso: %+v", res.Identity)
		}
	}
}

func TestResolveNotFoundListsWhatWasTried(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	prog := buildC(t, dir, "prog", "-Wl,--build-id")
	opts := noNet(t)
	opts.BuildIDDir = filepath.Join(dir, "empty-cache")
	r := New(opts)
	want := buildid.ID{1, 2, 3, 4, 5, 6, 7, 8}
	_, err := r.Resolve(context.Background(), Query{BuildID: want, Path: prog})
	var nf *NotFoundError
	if !errors.As(err, &nf) || !errors.Is(err, ErrNotFound) {
		t.Fatalf("err = %v, want *NotFoundError", err)
	}
	if len(nf.Rejected) != 1 || nf.Rejected[0].Path != prog || !errors.Is(nf.Rejected[0].Err, ErrMismatch) {
		t.Errorf("rejected = %+v, want the recorded path with a mismatch", nf.Rejected)
	}
	if !strings.Contains(err.Error(), "perf-cache: "+opts.BuildIDDir) {
		t.Errorf("error does not list the perf cache: %v", err)
	}
	if _, err := r.Resolve(context.Background(), Query{Path: prog}); !errors.Is(err, ErrNoBuildID) {
		t.Errorf("no build-id: err = %v", err)
	}
}

// debugPair builds a binary with DWARF, splits it with objcopy into a
// stripped binary with a .gnu_debuglink and a .debug file, and returns both.
func debugPair(t *testing.T, dir string) (bin, dbg string) {
	t.Helper()
	needTool(t, "objcopy")
	full := buildC(t, dir, "full", "-g", "-Wl,--build-id")
	bin = filepath.Join(dir, "bin", "prog")
	dbg = filepath.Join(dir, "prog.debug")
	os.MkdirAll(filepath.Dir(bin), 0o755)
	for _, args := range [][]string{
		{"--only-keep-debug", full, dbg},
		{"--strip-debug", "--strip-unneeded", "--add-gnu-debuglink=" + dbg, full, bin},
	} {
		if b, err := exec.Command("objcopy", args...).CombinedOutput(); err != nil {
			t.Fatalf("objcopy %v: %v\n%s", args, err, b)
		}
	}
	return bin, dbg
}

func TestResolveDebugDirs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin, dbg := debugPair(t, dir)
	id := mustID(t, bin)
	if id.DebugLink != "prog.debug" || id.Debug == DebugDWARF {
		t.Fatalf("stripped binary: %+v", id)
	}
	if mustID(t, dbg).Debug != DebugDWARF {
		t.Fatal("debug file without DWARF")
	}
	hexID := id.BuildID.String()
	ctx := context.Background()
	place := func(t *testing.T, dst string) {
		t.Helper()
		os.MkdirAll(filepath.Dir(dst), 0o755)
		b, _ := os.ReadFile(dbg)
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("build-id", func(t *testing.T) {
		d := t.TempDir()
		place(t, filepath.Join(d, ".build-id", hexID[:2], hexID[2:]+".debug"))
		opts := noNet(t)
		opts.DebugDirs = []string{filepath.Join(dir, "nonexistent"), d}
		res, err := New(opts).Resolve(ctx, Query{BuildID: id.BuildID, Path: bin})
		if err != nil {
			t.Fatal(err)
		}
		if res.Best.Locator != "debug-dir" || res.Best.Debug != DebugDWARF || res.Best.Role != "debug" {
			t.Errorf("best = %+v", res.Best)
		}
	})
	t.Run("path.debug", func(t *testing.T) {
		d := t.TempDir()
		place(t, filepath.Join(d, bin+".debug"))
		opts := noNet(t)
		opts.DebugDirs = []string{d}
		res, err := New(opts).Resolve(ctx, Query{BuildID: id.BuildID, Path: bin})
		if err != nil {
			t.Fatal(err)
		}
		if res.Best.Path != filepath.Join(d, bin+".debug") {
			t.Errorf("best = %+v", res.Best)
		}
	})
	for _, where := range []string{"next", ".debug"} {
		t.Run("debuglink-"+where, func(t *testing.T) {
			target := filepath.Join(filepath.Dir(bin), "prog.debug")
			if where == ".debug" {
				target = filepath.Join(filepath.Dir(bin), ".debug", "prog.debug")
			}
			place(t, target)
			defer os.Remove(target)
			opts := noNet(t)
			opts.DebugDirs = []string{t.TempDir()}
			res, err := New(opts).Resolve(ctx, Query{BuildID: id.BuildID, Path: bin})
			if err != nil {
				t.Fatal(err)
			}
			if res.Best.Path != target || res.Best.Debug != DebugDWARF {
				t.Errorf("best = %+v, want %s", res.Best, target)
			}
			// DWARF cannot be bettered, but a debug file has no code:
			// the local lookups went on to the executable at the path,
			// and stopped there.
			if len(res.Verified) != 2 || res.Identity.Path != target || res.Verified[1].Path != bin || res.Verified[1].Role != "elf" {
				t.Errorf("verified = %+v", res.Verified)
			}
		})
	}
	// Identity from the first verified file (the stripped binary that
	// real perf buildid-cache -a filed), symbols from the richest one.
	t.Run("identity-vs-best", func(t *testing.T) {
		home := t.TempDir()
		perfCmd(t, home, "buildid-cache", "-a", bin)
		d := t.TempDir()
		place(t, filepath.Join(d, ".build-id", hexID[:2], hexID[2:]+".debug"))
		opts := noNet(t)
		opts.BuildIDDir = filepath.Join(home, ".debug")
		opts.DebugDirs = []string{d}
		res, err := New(opts).Resolve(ctx, Query{BuildID: id.BuildID, Path: bin})
		if err != nil {
			t.Fatal(err)
		}
		if res.Identity.Locator != "perf-cache" || res.Identity.Debug == DebugDWARF {
			t.Errorf("identity = %+v", res.Identity)
		}
		if res.Best.Locator != "debug-dir" || res.Best.Debug != DebugDWARF {
			t.Errorf("best = %+v", res.Best)
		}
		q := Query{BuildID: id.BuildID, Path: bin, IdentityOnly: true}
		if res, err := New(opts).Resolve(ctx, q); err != nil || len(res.Verified) != 1 {
			t.Errorf("identity only: %v %+v", err, res)
		}
	})
	t.Run("stripped-only", func(t *testing.T) {
		res, err := New(noNet(t)).Resolve(ctx, Query{BuildID: id.BuildID, Path: bin})
		if err != nil {
			t.Fatal(err)
		}
		if res.Best.Path != bin || res.Best.Locator != "path" {
			t.Errorf("best = %+v", res.Best)
		}
	})
}

func TestResolveSymFSAndProcRoot(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	prog := buildC(t, dir, "prog", "-Wl,--build-id")
	id := mustID(t, prog)
	symfs := filepath.Join(dir, "root")
	inside := filepath.Join(symfs, "usr", "bin", "app")
	os.MkdirAll(filepath.Dir(inside), 0o755)
	b, _ := os.ReadFile(prog)
	os.WriteFile(inside, b, 0o755)

	opts := noNet(t)
	opts.SymFS = symfs
	r := New(opts)
	for _, p := range []string{"/usr/bin/app", "/../../usr/bin/app", "/usr/bin/../bin/app"} {
		res, err := r.Resolve(context.Background(), Query{BuildID: id.BuildID, Path: p})
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if res.Identity.Path != inside {
			t.Errorf("%s: found %s, want %s", p, res.Identity.Path, inside)
		}
	}
	// ".." cannot climb out of the symfs to the real file.
	if _, err := r.Resolve(context.Background(), Query{BuildID: id.BuildID, Path: "/../../../../../" + prog}); err == nil {
		t.Error("a path with .. escaped the symfs")
	}

	// With a pid, the host's file still comes first: /proc/PID/root is
	// looked in only when it does not verify (TestAddRecordedProcRoot
	// finds a chroot's file there).
	res, err := New(noNet(t)).Resolve(context.Background(), Query{BuildID: id.BuildID, Path: prog, PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Identity.Locator != "path" || res.Identity.Path != prog {
		t.Errorf("identity %+v, want path %s", res.Identity, prog)
	}
	if got := New(noNet(t)).LocalPaths(prog, 0); len(got) != 1 || got[0] != prog {
		t.Errorf("LocalPaths = %v", got)
	}
}

func TestResolveRunningKernelAndVDSO(t *testing.T) {
	t.Parallel()
	r := New(noNet(t))
	if kid, err := KernelBuildID(); err == nil {
		res, err := r.Resolve(context.Background(), Query{BuildID: kid, Kind: dso.Kernel, Path: "[kernel.kallsyms]"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Identity.Locator != "running-kernel" || res.Identity.Path != "/proc/kallsyms" {
			t.Errorf("kernel: %+v", res.Identity)
		}
	}
	if img, vid, err := VDSO(); err == nil {
		res, err := r.Resolve(context.Background(), Query{BuildID: vid.BuildID, Kind: dso.VDSO, Path: "[vdso]"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Identity.Locator != "running-vdso" || len(res.Identity.Image) != len(img) {
			t.Errorf("vdso: %+v", res.Identity)
		}
	}
}

// startDebuginfod runs the real elfutils server on a free port, indexing
// dir, and waits until it serves want's executable (fixtures.Debuginfod,
// the starter every package's tests share).
func startDebuginfod(t *testing.T, dir string, want buildid.ID) string {
	t.Helper()
	return fixtures.Debuginfod(t, dir, want.String())
}

// TestDebuginfodServerIsolated: a test server does not forward misses to
// the servers in the caller's $DEBUGINFOD_URLS.
func TestDebuginfodServerIsolated(t *testing.T) {
	upstream, n := faultServer(t, http.NotFound)
	t.Setenv("DEBUGINFOD_URLS", upstream.URL)
	srv := t.TempDir()
	prog := buildC(t, srv, "prog", "-Wl,--build-id")
	url := startDebuginfod(t, srv, mustID(t, prog).BuildID)
	resp, err := http.Get(url + "/buildid/" + strings.Repeat("ab", 20) + "/executable")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || n.Load() != 0 {
		t.Errorf("miss: HTTP %d, %d requests forwarded to $DEBUGINFOD_URLS", resp.StatusCode, n.Load())
	}
}

// debuginfodCount reads how many requests of a type the server answered,
// from its Prometheus /metrics.
func debuginfodCount(t *testing.T, url, typ string) int {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	prefix := `http_requests_total{type="` + typ + `"} `
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), prefix); ok {
			n, _ := strconv.ParseFloat(v, 64)
			return int(n)
		}
	}
	return 0
}

// TestDebuginfodReal serves binaries built here (C with and without DWARF,
// Go) from a real elfutils debuginfod and resolves them through it.
func TestDebuginfodReal(t *testing.T) {
	t.Parallel()
	srv := t.TempDir()
	cDbg := buildC(t, srv, "cdebug", "-g", "-Wl,--build-id")
	cStripped := buildC(t, srv, "cstripped", "-s", "-Wl,--build-id=md5")
	goBin := buildGo(t, srv, "gobin", nil)
	url := startDebuginfod(t, srv, mustID(t, goBin).BuildID)
	ctx := context.Background()

	for _, c := range []struct {
		file     string
		role     string
		debug    DebugLevel
		identity string
	}{
		{cDbg, "debuginfo", DebugDWARF, "debuginfo"},
		{cStripped, "executable", DebugDynsym, "executable"},
		{goBin, "debuginfo", DebugDWARF, "debuginfo"},
	} {
		t.Run(filepath.Base(c.file), func(t *testing.T) {
			id := mustID(t, c.file)
			opts := noNet(t)
			opts.DebuginfodURLs = []string{url + "/"} // a trailing slash is allowed
			res, err := New(opts).Resolve(ctx, Query{BuildID: id.BuildID, Path: "/nonexistent/" + filepath.Base(c.file)})
			if err != nil {
				t.Fatal(err)
			}
			want := filepath.Join(opts.DebuginfodCache, id.BuildID.String(), c.role)
			if res.Best.Path != want || res.Best.Locator != "debuginfod" || res.Best.URL != url || res.Best.Debug != c.debug {
				t.Errorf("best %+v, want %s from %s", res.Best, want, url)
			}
			if res.Identity.Role != c.identity {
				t.Errorf("identity %+v", res.Identity)
			}
			// The second Resolver finds it in the shared cache, offline.
			off := noNet(t)
			off.DebuginfodCache = opts.DebuginfodCache
			if res2, err := New(off).Resolve(ctx, Query{BuildID: id.BuildID}); err != nil || res2.Best.Path != want {
				t.Errorf("from cache: %v %+v", err, res2)
			}
		})
	}

	t.Run("singleflight", func(t *testing.T) {
		id := mustID(t, cDbg)
		opts := noNet(t)
		opts.DebuginfodURLs = []string{url}
		r := New(opts)
		before := debuginfodCount(t, url, "debuginfo")
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for range 16 {
			wg.Go(func() {
				if _, err := r.Resolve(ctx, Query{BuildID: id.BuildID}); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if n := debuginfodCount(t, url, "debuginfo") - before; n != 1 {
			t.Errorf("16 concurrent resolves made %d debuginfo requests, want 1", n)
		}
	})

	// The cache is elfutils' own: what debuginfod-find downloads we find
	// offline, and what we download debuginfod-find finds without asking
	// a server (its only server is unreachable).
	t.Run("shared-with-elfutils", func(t *testing.T) {
		needTool(t, "debuginfod-find")
		id := mustID(t, cDbg).BuildID
		find := func(cache, urls, typ string) (string, error) {
			c := exec.Command("debuginfod-find", typ, id.String())
			c.Env = append(slicesDeleteEnv(slicesDeleteEnv(os.Environ(), "DEBUGINFOD_URLS"), "DEBUGINFOD_CACHE_PATH"),
				"DEBUGINFOD_CACHE_PATH="+cache, "DEBUGINFOD_URLS="+urls, "DEBUGINFOD_TIMEOUT=2")
			b, err := c.Output()
			return strings.TrimSpace(string(b)), err
		}
		theirs := t.TempDir()
		got, err := find(theirs, url, "executable")
		if err != nil || got != filepath.Join(theirs, id.String(), "executable") {
			t.Fatalf("debuginfod-find: %q %v", got, err)
		}
		off := noNet(t)
		off.DebuginfodCache = theirs
		res, err := New(off).Resolve(ctx, Query{BuildID: id})
		if err != nil || res.Identity.Path != got {
			t.Errorf("offline from elfutils' download: %+v %v", res, err)
		}

		ours := noNet(t)
		ours.DebuginfodURLs = []string{url}
		if _, err := New(ours).Resolve(ctx, Query{BuildID: id}); err != nil {
			t.Fatal(err)
		}
		l, _ := net.Listen("tcp", "127.0.0.1:0")
		dead := "http://" + l.Addr().String()
		l.Close()
		got, err = find(ours.DebuginfodCache, dead, "debuginfo")
		if err != nil || got != filepath.Join(ours.DebuginfodCache, id.String(), "debuginfo") {
			t.Errorf("debuginfod-find on our download: %q %v", got, err)
		}
	})

	t.Run("negative-cache", func(t *testing.T) {
		opts := noNet(t)
		opts.DebuginfodURLs = []string{url}
		missing := buildid.ID{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4}
		before := debuginfodCount(t, url, "debuginfo") + debuginfodCount(t, url, "executable")
		for i := range 3 {
			_, err := New(opts).Resolve(ctx, Query{BuildID: missing})
			if !errors.Is(err, ErrNotFound) {
				t.Fatalf("try %d: err = %v", i, err)
			}
		}
		if n := debuginfodCount(t, url, "debuginfo") + debuginfodCount(t, url, "executable") - before; n != 2 {
			t.Errorf("3 resolves of a missing build-id made %d requests, want 2 (debuginfo, executable, then remembered)", n)
		}
		st, err := os.Stat(filepath.Join(opts.DebuginfodCache, missing.String(), "debuginfo"))
		if err != nil || st.Size() != 0 {
			t.Fatalf("negative cache entry: %v %v", st, err)
		}
		// elfutils honours our remembered miss: debuginfod-find fails at
		// once without asking the server.
		if _, err := exec.LookPath("debuginfod-find"); err == nil {
			before := debuginfodCount(t, url, "debuginfo")
			c := exec.Command("debuginfod-find", "debuginfo", missing.String())
			c.Env = append(os.Environ(), "DEBUGINFOD_CACHE_PATH="+opts.DebuginfodCache, "DEBUGINFOD_URLS="+url)
			if err := c.Run(); err == nil {
				t.Error("debuginfod-find found a missing build-id")
			}
			if n := debuginfodCount(t, url, "debuginfo") - before; n != 0 {
				t.Errorf("debuginfod-find asked the server %d times despite the remembered miss", n)
			}
		}
	})
}

// faultServer counts requests and answers each with h.
func faultServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	var n atomic.Int32
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s, &n
}

func TestDebuginfodFaults(t *testing.T) {
	dir := t.TempDir()
	prog := buildC(t, dir, "prog", "-Wl,--build-id")
	other := buildC(t, dir, "other", "-Wl,--build-id", "-DX=1", "-O2")
	id := mustID(t, prog)
	ctx := context.Background()

	t.Run("404", func(t *testing.T) {
		s, n := faultServer(t, http.NotFound)
		opts := noNet(t)
		opts.DebuginfodURLs = []string{s.URL}
		_, err := New(opts).Resolve(ctx, Query{BuildID: id.BuildID})
		if !errors.Is(err, ErrNotFound) || n.Load() != 2 {
			t.Errorf("err = %v after %d requests", err, n.Load())
		}
	})

	t.Run("wrong-file", func(t *testing.T) {
		s, _ := faultServer(t, func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, other) })
		opts := noNet(t)
		opts.DebuginfodURLs = []string{s.URL}
		_, err := New(opts).Resolve(ctx, Query{BuildID: id.BuildID})
		var nf *NotFoundError
		if !errors.As(err, &nf) {
			t.Fatalf("err = %v", err)
		}
		if len(nf.Rejected) != 2 || !errors.Is(nf.Rejected[0].Err, ErrMismatch) || !strings.Contains(nf.Rejected[0].Reason(), s.URL) {
			t.Errorf("rejected = %+v", nf.Rejected)
		}
		js, err := json.Marshal(nf.Rejected[0])
		if err != nil || !strings.Contains(string(js), `"reason":"build-id mismatch: `+s.URL) || !strings.Contains(string(js), `"locator":"debuginfod"`) {
			t.Errorf("JSON %s %v", js, err)
		}
		// Nothing was cached, and no temporary file is left.
		ents, _ := os.ReadDir(filepath.Join(opts.DebuginfodCache, id.BuildID.String()))
		for _, e := range ents {
			t.Errorf("left in the cache: %s", e.Name())
		}
	})

	t.Run("wrong-file-in-cache", func(t *testing.T) {
		// A file with another build-id already sits in the client cache
		// (another client, an old bug): it must not block the build-id.
		s, n := faultServer(t, func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/executable") {
				http.ServeFile(w, r, prog)
				return
			}
			http.NotFound(w, r)
		})
		opts := noNet(t)
		opts.DebuginfodURLs = []string{s.URL}
		cached := filepath.Join(opts.DebuginfodCache, id.BuildID.String(), "executable")
		os.MkdirAll(filepath.Dir(cached), 0o700)
		b, _ := os.ReadFile(other)
		os.WriteFile(cached, b, 0o644)
		res, err := New(opts).Resolve(ctx, Query{BuildID: id.BuildID})
		if err != nil {
			t.Fatalf("%v (after %d requests)", err, n.Load())
		}
		if res.Identity.Locator != "debuginfod" || res.Identity.Path != cached || res.Identity.URL != s.URL {
			t.Errorf("identity %+v", res.Identity)
		}
		if len(res.Rejected) != 1 || !errors.Is(res.Rejected[0].Err, ErrMismatch) || res.Rejected[0].Path != cached {
			t.Errorf("rejected %+v", res.Rejected)
		}
		if got := mustID(t, cached).BuildID; !got.Matches(id.BuildID) {
			t.Errorf("cache holds %v", got)
		}
	})

	t.Run("no-cache-dir", func(t *testing.T) {
		// Without HOME, XDG_CACHE_HOME and DEBUGINFOD_CACHE_PATH there is
		// no cache: downloads go to one scratch directory per Resolver,
		// which Close removes.
		tmp := t.TempDir()
		t.Setenv("TMPDIR", tmp)
		t.Setenv("HOME", "")
		t.Setenv("XDG_CACHE_HOME", "")
		t.Setenv("DEBUGINFOD_CACHE_PATH", "")
		s, _ := faultServer(t, func(w http.ResponseWriter, r *http.Request) {
			switch {
			case strings.Contains(r.URL.Path, id.BuildID.String()+"/executable"):
				http.ServeFile(w, r, prog)
			case strings.HasSuffix(r.URL.Path, "/executable"):
				http.ServeFile(w, r, other)
			default:
				http.NotFound(w, r)
			}
		})
		opts := noNet(t)
		opts.DebuginfodCache = ""
		opts.DebuginfodURLs = []string{s.URL}
		r := New(opts)
		for _, f := range []string{prog, other} {
			res, err := r.Resolve(ctx, Query{BuildID: mustID(t, f).BuildID})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(res.Identity.Path, tmp) {
				t.Errorf("downloaded to %s", res.Identity.Path)
			}
		}
		if ents, _ := os.ReadDir(tmp); len(ents) != 1 {
			t.Errorf("%d scratch directories for two downloads: %v", len(ents), ents)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
			t.Errorf("left after Close: %v", ents)
		}
	})

	t.Run("stall", func(t *testing.T) {
		release := make(chan struct{})
		defer close(release)
		s, n := faultServer(t, func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		})
		opts := noNet(t)
		opts.DebuginfodURLs = []string{s.URL}
		opts.DebuginfodTimeout = 300 * time.Millisecond
		r := New(opts)
		_, err := r.Resolve(ctx, Query{BuildID: id.BuildID})
		if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "DEBUGINFOD_TIMEOUT") {
			t.Errorf("err = %v", err)
		}
		// The server is now known dead: later lookups do not wait again.
		_, err = r.Resolve(ctx, Query{BuildID: mustID(t, other).BuildID})
		if !strings.Contains(fmt.Sprint(err), "failed earlier") || n.Load() != 1 {
			t.Errorf("second lookup: %v after %d requests", err, n.Load())
		}
	})

	t.Run("stall-mid-body", func(t *testing.T) {
		// The first 1000 bytes of the right file, so that the body is
		// not refused as non-ELF before it stalls.
		head, err := os.ReadFile(prog)
		if err != nil {
			t.Fatal(err)
		}
		s, _ := faultServer(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "100000")
			w.Write(head[:1000])
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		})
		opts := noNet(t)
		opts.DebuginfodURLs = []string{s.URL}
		opts.DebuginfodTimeout = 300 * time.Millisecond
		_, err = New(opts).Resolve(ctx, Query{BuildID: id.BuildID})
		if !strings.Contains(fmt.Sprint(err), "no progress") {
			t.Errorf("err = %v", err)
		}
	})

	t.Run("unreachable-then-good", func(t *testing.T) {
		l, _ := net.Listen("tcp", "127.0.0.1:0")
		dead := "http://" + l.Addr().String()
		l.Close()
		good, _ := faultServer(t, func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/executable") {
				http.ServeFile(w, r, prog)
				return
			}
			http.NotFound(w, r)
		})
		opts := noNet(t)
		opts.DebuginfodURLs = []string{dead, good.URL}
		res, err := New(opts).Resolve(ctx, Query{BuildID: id.BuildID})
		if err != nil {
			t.Fatal(err)
		}
		if res.Identity.URL != good.URL || res.Identity.Role != "executable" {
			t.Errorf("identity %+v", res.Identity)
		}
	})

	t.Run("deadline", func(t *testing.T) {
		s, n := faultServer(t, http.NotFound)
		opts := noNet(t)
		opts.DebuginfodURLs = []string{s.URL}
		opts.DebuginfodDeadline = time.Nanosecond
		r := New(opts)
		r.Resolve(ctx, Query{BuildID: id.BuildID}) // starts the clock
		time.Sleep(time.Millisecond)
		_, err := r.Resolve(ctx, Query{BuildID: mustID(t, other).BuildID})
		if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), ErrDeadline.Error()) {
			t.Errorf("err = %v", err)
		}
		if n.Load() > 2 {
			t.Errorf("%d requests after the deadline", n.Load())
		}
	})

	t.Run("policy-words-skipped", func(t *testing.T) {
		opts := noNet(t)
		opts.DebuginfodURLs = []string{"ima:enforcing", "http://a.example/", "file:///srv", "https://b.example"}
		if got := New(opts).dl.urls; len(got) != 2 || got[0] != "http://a.example" || got[1] != "https://b.example" {
			t.Errorf("urls = %q", got)
		}
	})

	t.Run("no-url-no-network", func(t *testing.T) {
		t.Setenv("DEBUGINFOD_URLS", "")
		opts := noNet(t)
		opts.DebuginfodURLs = nil // from the (empty) environment
		r := New(opts)
		if len(r.dl.urls) != 0 {
			t.Fatalf("urls = %v", r.dl.urls)
		}
		_, err := r.Resolve(ctx, Query{BuildID: id.BuildID})
		if !strings.Contains(fmt.Sprint(err), "no debuginfod URL configured") {
			t.Errorf("err = %v", err)
		}
	})
}

// TestDebuginfodTimeoutEnv: $DEBUGINFOD_TIMEOUT is whole seconds, as
// elfutils reads it; anything else leaves the default, and the option
// wins over the environment.
func TestDebuginfodTimeoutEnv(t *testing.T) {
	for env, want := range map[string]time.Duration{
		"": defaultDebuginfodTimeout, "3": 3 * time.Second, "90": 90 * time.Second,
		"0": defaultDebuginfodTimeout, "-5": defaultDebuginfodTimeout, "abc": defaultDebuginfodTimeout,
		"2.5": defaultDebuginfodTimeout,
	} {
		t.Setenv("DEBUGINFOD_TIMEOUT", env)
		opts := noNet(t)
		if got := New(opts).dl.timeout; got != want {
			t.Errorf("DEBUGINFOD_TIMEOUT=%q: timeout %v, want %v", env, got, want)
		}
		opts.DebuginfodTimeout = 7 * time.Second
		if got := New(opts).dl.timeout; got != 7*time.Second {
			t.Errorf("DEBUGINFOD_TIMEOUT=%q with the option: %v", env, got)
		}
	}
}

// TestProgressReader: a download longer than a second prints progress
// lines to its writer and a final line; without a writer nothing.
func TestProgressReader(t *testing.T) {
	t.Parallel()
	body := strings.Repeat("x", 3_000_000)
	var buf bytes.Buffer
	p := &progressReader{r: strings.NewReader(body), w: &buf,
		label: "abcd executable", total: int64(len(body)),
		start: time.Now().Add(-2 * time.Second)} // as if it began 2 s ago
	if n, err := io.Copy(io.Discard, p); err != nil || n != int64(len(body)) {
		t.Fatalf("copied %d: %v", n, err)
	}
	p.finish()
	out := buf.String()
	if !strings.HasPrefix(out, "\rdebuginfod: abcd executable ") || !strings.Contains(out, "/3.0 MB") ||
		!strings.HasSuffix(out, "\rdebuginfod: abcd executable 3.0 MB done\n") {
		t.Errorf("progress output %q", out)
	}
	q := &progressReader{r: strings.NewReader(body),
		start: time.Now().Add(-2 * time.Second)}
	io.Copy(io.Discard, q)
	q.finish() // no writer: must print nothing (and not panic)
	if q.printed {
		t.Error("printed without a writer")
	}
}

// failTransport fails the test on any request.
type failTransport struct{ t *testing.T }

func (f failTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	f.t.Errorf("network access without a configured server: %s", r.URL)
	return nil, errors.New("no network in this test")
}

// TestNoNetworkUnlessConfigured: with $DEBUGINFOD_URLS unset and no
// --debuginfod, resolving every kind of query makes no request.
func TestNoNetworkUnlessConfigured(t *testing.T) {
	t.Setenv("DEBUGINFOD_URLS", "")
	dir := t.TempDir()
	prog := buildC(t, dir, "prog", "-Wl,--build-id")
	opts := noNet(t)
	opts.DebuginfodURLs = nil // from the environment
	opts.HTTPClient = &http.Client{Transport: failTransport{t}}
	r := New(opts)
	defer r.Close()
	ctx := context.Background()
	for _, q := range []Query{
		{BuildID: mustID(t, prog).BuildID, Path: prog},
		{BuildID: buildid.ID(bytes.Repeat([]byte{0xab}, 20)), Path: "/nonexistent"},
		{BuildID: buildid.ID(bytes.Repeat([]byte{0xcd}, 20)), Kind: dso.Kernel, Path: "[kernel.kallsyms]"},
		{BuildID: buildid.ID(bytes.Repeat([]byte{0xef}, 20)), Kind: dso.Module, Path: "/lib/modules/x.ko"},
	} {
		r.Resolve(ctx, q)
	}
}
