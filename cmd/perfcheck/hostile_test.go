package main

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// The hostile inputs of docs/limits.md, given to the command as a user
// would: each is built in test code from the repository's real binaries
// (internal/fixtures says how for each), and perfcheck runs in a child
// process, this test binary again (TestHostileChild calls run, what main
// calls), which reports its peak resident set and what its Go runtime
// mapped at its end (fixtures.WriteChildMemory).
// Each run must end with exit 0, 1 or 2, an error that names the file when
// it fails, and memory of at most 256 MB plus four times its largest input
// (fixtures.AssertMemoryBound, which says what is held to it under the
// race detector). The time bound (30 s) is not asserted: a child still
// running far past it (hostileHang) is killed, and the test fails.

// hostileHang is when a child is given up on: ten times the time bound.
const hostileHang = 300 * time.Second

// hostileASLimit caps a child's address space, so that an input that
// makes perfcheck allocate without bound kills the child (a failed test),
// not the machine the tests share.
const hostileASLimit = 3 << 30

// TestHostileChild is the child of runHostileCmd: perfcheck with the
// arguments in $PERFCHECK_HOSTILE_ARGS (separated by \x1f, the ASCII unit separator). It does nothing in
// a normal run.
func TestHostileChild(t *testing.T) {
	args := os.Getenv("PERFCHECK_HOSTILE_ARGS")
	if args == "" {
		t.Skip("the child of runHostileCmd")
	}
	if err := fixtures.LimitAddressSpace(hostileASLimit); err != nil {
		fmt.Fprintln(os.Stderr, "setrlimit:", err)
		os.Exit(3)
	}
	code := run(strings.Split(args, "\x1f"), os.Stdin, os.Stdout, os.Stderr)
	if err := fixtures.WriteChildMemory(); err != nil {
		fmt.Fprintln(os.Stderr, "writing the Go runtime's memory:", err)
		os.Exit(3)
	}
	os.Exit(code)
}

// hostileResult is what a child did.
type hostileResult struct {
	code    int                  // exit status; -1 when killed by a signal
	out     string               // stdout and stderr
	mem     fixtures.ChildMemory // as it reported at its end
	elapsed time.Duration        // from start to exit
}

// runHostileCmd runs perfcheck args in a child and checks the bounds;
// inputs are the files it reads, whose largest sets the memory bound.
// The child has the defaults a user has: no debuginfod server, time
// bound or decompression budget from this process's environment.
func runHostileCmd(t *testing.T, inputs []string, args ...string) hostileResult {
	t.Helper()
	return runHostileCmdEnv(t, nil, inputs, args...)
}

// runHostileCmdEnv is runHostileCmd with env added to the child's
// environment.
func runHostileCmdEnv(t *testing.T, env []string, inputs []string, args ...string) hostileResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hostileHang)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHostileChild$")
	mem := filepath.Join(t.TempDir(), "memory")
	cmd.Env = append(os.Environ(), "PERFCHECK_HOSTILE_ARGS="+strings.Join(args, "\x1f"), "HOME="+t.TempDir(),
		"DEBUGINFOD_URLS=", "DEBUGINFOD_TIMEOUT=", "DEBUGINFOD_MAXTIME=", "DEBUGINFOD_MAXSIZE=",
		"PERFCHECK_MAX_DECOMPRESSED=", fixtures.ChildMemoryEnv+"="+mem)
	cmd.Env = append(cmd.Env, env...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("running the child: %v", err)
	}
	r := hostileResult{code: cmd.ProcessState.ExitCode(), out: string(out), elapsed: time.Since(start)}
	r.mem, _ = fixtures.ReadChildMemory(mem)
	var largest int64
	for _, p := range inputs {
		if st, err := os.Stat(p); err == nil {
			largest = max(largest, st.Size())
		}
	}
	t.Logf("perfcheck %s: exit %d, peak %d MB (Go runtime: %d MB), %v\n%s", strings.Join(args[:1], " "), r.code, r.mem.PeakRSS>>20,
		r.mem.GoMapped>>20, r.elapsed.Round(time.Millisecond), head(r.out, 6000))
	require.Contains(t, []int{exitOK, exitProblems, exitError}, r.code, "the child died or was killed:\n%s", head(r.out, 3000))
	fixtures.AssertMemoryBound(t, r.mem, largest)
	return r
}

func head(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// hostileLib returns the hostile variants of testdata's libhot.so.
func hostileLibs(t *testing.T) map[string][]byte {
	hot, err := os.ReadFile(filepath.Join(fixtures.Dir(), "bin", "libhot.so"))
	require.NoError(t, err)
	stream, size := fixtures.ZlibZeros(t, 1<<30)
	return map[string][]byte{
		// Four empty xz blocks declaring 4 GiB dictionaries, as its
		// MiniDebugInfo.
		"minidebuginfo-bomb": fixtures.ELFWithSection(t, hot, ".gnu_debugdata", elf.SHT_PROGBITS, 0, fixtures.XZDictBomb(t, 4)),
		// A DWARF 5 line header of 2^44 directories, and one of 2^24
		// directories and files.
		"lines-2^44": fixtures.LineTableCounts(t, hot, 1<<44, 0),
		"lines-2^24": fixtures.LineTableCounts(t, hot, 1<<24, 1<<24),
		// .debug_info as a zlib stream of 1 GiB of zeros (1 MB), the
		// most deflate allows.
		"zlib-1GiB": fixtures.ELFWithSection(t, hot, ".debug_info", elf.SHT_PROGBITS, elf.SHF_COMPRESSED, fixtures.CompressedSection(size, stream)),
		// A .dynsym of 40,000 functions all naming one 512 KiB string,
		// and a .plt of 65,536 stubs through the GOT slot of one of
		// them.
		"plt-names": fixtures.PLTStubs(t, fixtures.SymbolNames(t, hot, ".dynsym", 40000, 512<<10), 65536),
		// DWARF of 100,000 subprograms named by the suffixes of one
		// 512 KiB string.
		"dwarf-names": fixtures.DWARFNames(t, hot, 100000, 512<<10, true),
	}
}

// hostileWhat is what the message about each hostile binary says was
// wrong (after the file's name).
var hostileWhat = map[string]string{
	"minidebuginfo-bomb": "section .gnu_debugdata at offset",
	"lines-2^44":         "DWARF unit at offset 0xc: malformed input: .debug_line offset 0x0: line table header declares 17592186044416 directories",
	"lines-2^24":         "DWARF unit at offset 0xc: malformed input: .debug_line offset 0x0: line table header declares 16777216 directories",
	"zlib-1GiB":          "section .debug_info at offset 0x4450 needs 1073741824 bytes decompressed",
	"pclntab-nfunc":      ".gopclntab: malformed input: pclntab header: 4294967295 functions",
	"two-zlib-1GiB":      "section .debug_info at offset",
	"xz-bomb":            "xz-compressed, not the ELF file a process maps",
	"plt-names":          "section .plt at offset 0x",
	"dwarf-names":        "DWARF unit at offset 0xb: malformed input: function names take more than twice the DWARF sections they come from",
}

// symfsWith returns a --symfs root in which the fixtures' recorded paths
// resolve to copies of testdata/perf/bin, except the files named in
// replace, which hold the bytes given; and the paths of the files there.
func symfsWith(t *testing.T, replace map[string][]byte) (string, []string) {
	root := t.TempDir()
	dir := filepath.Join(root, fixtures.RecordedBin)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	ents, err := os.ReadDir(filepath.Join(fixtures.Dir(), "bin"))
	require.NoError(t, err)
	var files []string
	for _, e := range ents {
		data, ok := replace[e.Name()]
		if !ok {
			data, err = os.ReadFile(filepath.Join(fixtures.Dir(), "bin", e.Name()))
			require.NoError(t, err)
		}
		p := filepath.Join(dir, e.Name())
		require.NoError(t, os.WriteFile(p, data, 0o755))
		files = append(files, p)
	}
	for _, d := range []string{"usr", "lib", "lib64"} {
		if _, err := os.Stat("/" + d); err == nil {
			require.NoError(t, os.Symlink("/"+d, filepath.Join(root, d)))
		}
	}
	return root, files
}

// TestHostileSymbolize: perfcheck symbolize -e on each hostile libhot.so,
// and on goprog without DWARF whose pclntab declares 2^32-1 functions.
// Each answers or fails naming the file.
func TestHostileSymbolize(t *testing.T) {
	t.Parallel()
	bins := hostileLibs(t)
	goprog, err := os.ReadFile(filepath.Join(fixtures.Dir(), "bin", "goprog"))
	require.NoError(t, err)
	bins["pclntab-nfunc"] = fixtures.PclntabCount(t, goprog)
	for name, data := range bins {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := filepath.Join(t.TempDir(), name)
			require.NoError(t, os.WriteFile(p, data, 0o755))
			ef, err := elf.Open(p)
			require.NoError(t, err)
			var addrs []string
			for _, s := range ef.Sections {
				if s.Name == ".text" {
					for a := s.Addr; a < s.Addr+s.Size; a += max(s.Size/20, 1) {
						addrs = append(addrs, fmt.Sprintf("%#x", a))
					}
				}
			}
			ef.Close()
			require.NotEmpty(t, addrs)
			r := runHostileCmd(t, []string{p}, append([]string{"symbolize", "-e", p}, addrs...)...)
			assert.Contains(t, r.out, "warning: "+p+": "+hostileWhat[name], "the warning names the file and what was wrong")
		})
	}
}

// TestHostileBuildID: perfcheck buildid on the 120-byte xz stream of four
// empty blocks declaring 4 GiB dictionaries, named as a compressed
// kernel module.
func TestHostileBuildID(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "bomb.ko.xz")
	require.NoError(t, os.WriteFile(p, fixtures.XZDictBomb(t, 4), 0o644))
	r := runHostileCmd(t, []string{p}, "buildid", p)
	assert.NotEqual(t, exitOK, r.code)
	assert.Contains(t, r.out, p)
}

// TestHostileRecordings: check, top, script and pprof on real recordings
// whose binaries, found under --symfs at their recorded paths, are the
// hostile ones: libhot.so of cshared-fp.data replaced by each variant
// (and by the bare xz bomb: a compressed file where a process mapped an
// ELF file); both cshared and libhot.so with a 1 GiB zlib .debug_info
// (several at once); goprog of goprog.data with its pclntab count.
func TestHostileRecordings(t *testing.T) {
	t.Parallel()
	cshared, err := os.ReadFile(filepath.Join(fixtures.Dir(), "bin", "cshared"))
	require.NoError(t, err)
	stream, size := fixtures.ZlibZeros(t, 1<<30)
	goprog, err := os.ReadFile(filepath.Join(fixtures.Dir(), "bin", "goprog"))
	require.NoError(t, err)
	type recCase struct {
		data    string
		replace map[string][]byte
	}
	cases := map[string]recCase{
		"xz-bomb": {"cshared-fp.data", map[string][]byte{"libhot.so": fixtures.XZDictBomb(t, 4)}},
		"two-zlib-1GiB": {"cshared-fp.data", map[string][]byte{
			"libhot.so": hostileLibs(t)["zlib-1GiB"],
			"cshared":   fixtures.ELFWithSection(t, cshared, ".debug_info", elf.SHT_PROGBITS, elf.SHF_COMPRESSED, fixtures.CompressedSection(size, stream)),
		}},
		"pclntab-nfunc": {"goprog.data", map[string][]byte{"goprog": fixtures.PclntabCount(t, goprog)}},
	}
	for name, data := range hostileLibs(t) {
		cases[name] = recCase{"cshared-fp.data", map[string][]byte{"libhot.so": data}}
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			root, files := symfsWith(t, c.replace)
			rec := filepath.Join(fixtures.Dir(), c.data)
			inputs := append(files, rec)
			lookup := []string{"--symfs", root, "--buildid-dir", t.TempDir(), "--debug-dir", t.TempDir(), "--debuginfod", "none"}
			for _, cmd := range [][]string{
				{"check"},
				{"top"},
				{"script"},
				{"pprof", "-o", filepath.Join(t.TempDir(), "out.pb.gz")},
			} {
				args := append(append(cmd, lookup...), rec)
				r := runHostileCmd(t, inputs, args...)
				// check says what is wrong with a file it cannot
				// verify; top and script, which symbolize, what is
				// wrong with one they read (pprof writes it in the
				// profile's comments).
				switch {
				case name == "xz-bomb":
					if cmd[0] == "check" {
						assert.Contains(t, r.out, fixtures.RecordedBin+"/libhot.so: mismatch\n    the file at the path is "+hostileWhat[name])
					}
				case cmd[0] == "top" || cmd[0] == "script":
					for f := range c.replace {
						assert.Contains(t, r.out, filepath.Join(root, fixtures.RecordedBin, f)+": "+hostileWhat[name], "perfcheck %s", cmd[0])
					}
				}
			}
		})
	}
}

// TestHostileDebuginfodTrickle: perfcheck check on goprog.data with no
// binary anywhere but on a debuginfod server, on 127.0.0.1, that answers
// every request with goprog (2.4 MB) trickled at 32 KiB a second: fast
// enough for the progress rule (100 KiB per 10 s), slow enough that the
// file would take over a minute. The child has the defaults a user has
// (no DEBUGINFOD_TIMEOUT, DEBUGINFOD_MAXTIME or DEBUGINFOD_MAXSIZE):
// the download in progress is cut 30 s after the first began and no
// other starts, so that the run ends within the 30 s a hostile input may
// take beside its own work; the message names the setting that raises
// the bound; nothing enters the debuginfod cache.
// The run lasts at least the bound (a timer cuts the downloads, and
// timers do not fire early) and, asserted with room for a loaded
// machine, less than twice it: without the bound, goprog's download
// would end after 75 s, and be used.
func TestHostileDebuginfodTrickle(t *testing.T) {
	t.Parallel()
	const bound = 30 * time.Second
	goprog, err := os.ReadFile(filepath.Join(fixtures.Dir(), "bin", "goprog"))
	require.NoError(t, err)
	var requests, cut, completed atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Length", strconv.Itoa(len(goprog)))
		for off := 0; off < len(goprog); off += 32 << 10 {
			if _, err := w.Write(goprog[off:min(off+32<<10, len(goprog))]); err != nil {
				cut.Add(1)
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-time.After(time.Second):
			case <-r.Context().Done():
				cut.Add(1)
				return
			}
		}
		completed.Add(1)
	}))
	defer srv.Close()
	require.True(t, strings.HasPrefix(srv.URL, "http://127.0.0.1:"), srv.URL)
	cache := t.TempDir()
	rec := filepath.Join(fixtures.Dir(), "goprog.data")
	r := runHostileCmdEnv(t, []string{"DEBUGINFOD_CACHE_PATH=" + cache}, []string{rec},
		"check", "--symfs", t.TempDir(), "--buildid-dir", t.TempDir(), "--debug-dir", t.TempDir(),
		"--debuginfod", srv.URL, rec)
	assert.Equal(t, exitProblems, r.code)
	// The download's own bound and the run's deadline are both 30 s
	// here; whichever fires first names the setting.
	assert.Regexp(t, `not complete (within 30s|30s after the first download began) \(DEBUGINFOD_MAXTIME\)`, r.out)
	assert.GreaterOrEqual(t, r.elapsed, bound, "the downloads were cut before the bound")
	assert.Less(t, r.elapsed, 2*bound, "the run outlasted the bound")
	assert.NotZero(t, requests.Load())
	assert.Zero(t, completed.Load(), "a download outlasted the bound")
	filepath.WalkDir(cache, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			t.Errorf("left in the debuginfod cache: %s", p)
		}
		return nil
	})
}
