package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// bicPerf runs real perf with HOME=home (so its cache is home/.debug).
var bicPerf = fixtures.PerfHome

func TestCacheAddListPrune(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	a := bicBuildC(t, dir, "a", "-Wl,--build-id", `-DTAG="a"`)
	b := bicBuildC(t, dir, "b", "-Wl,--build-id", `-DTAG="b"`)
	none := bicBuildC(t, dir, "none", "-Wl,--build-id=none")

	code, out, errb := bicRun(t, "cache", "add", "--buildid-dir", cache, a, b, none, "--json")
	if code != exitProblems {
		t.Fatalf("exit %d (want 1: one file lacks a build-id); %s %s", code, out, errb)
	}
	var rep cacheAddReportJSON
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Added != 2 || rep.Skipped != 1 || rep.Results[2].Status != "skipped" {
		t.Errorf("add report %+v", rep)
	}
	if code, out, _ := bicRun(t, "cache", "add", "--buildid-dir", cache, a); code != exitOK || !strings.HasPrefix(out, "cached ") {
		t.Errorf("re-add: %d %q", code, out)
	}

	// perf itself lists what we added.
	if _, err := exec.LookPath("perf"); err == nil {
		pl := bicPerf(t, dir, "--buildid-dir", cache, "buildid-cache", "-l")
		if !strings.Contains(pl, a) || !strings.Contains(pl, b) {
			t.Errorf("perf buildid-cache -l:\n%s", pl)
		}
	}

	code, out, _ = bicRun(t, "cache", "list", "--buildid-dir", cache, "--json")
	var list struct {
		Entries []cacheEntryJSON `json:"entries"`
		Size    int64            `json:"size"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &list) != nil || len(list.Entries) != 2 {
		t.Fatalf("list: %d %s", code, out)
	}
	// Make a the least recently used, then prune to one entry's size.
	old := time.Now().Add(-48 * time.Hour)
	for _, e := range list.Entries {
		if e.Name == a {
			os.Chtimes(filepath.Join(e.Dir, "elf"), old, old)
		}
	}
	code, out, errb = bicRun(t, "cache", "prune", "--buildid-dir", cache, "--max-size", "1T", "--older-than", "1d")
	if code != exitOK || !strings.Contains(out, "removed ") || !strings.Contains(out, a) || strings.Contains(out, "removed "+b) {
		t.Errorf("prune: %d %q %q", code, out, errb)
	}
	code, out, _ = bicRun(t, "cache", "list", "--buildid-dir", cache)
	if code != exitOK || strings.Count(out, "\n") != 1 || !strings.Contains(out, b) {
		t.Errorf("after prune: %q", out)
	}
	if code, _, errb := bicRun(t, "cache", "prune", "--buildid-dir", cache); code != exitError || !strings.Contains(errb, "--max-size") {
		t.Errorf("prune without --max-size: %d %q", code, errb)
	}
	if code, _, _ := bicRun(t, "cache", "bogus"); code != exitError {
		t.Errorf("unknown subcommand: %d", code)
	}
}

// TestCacheFill records a program with real perf without letting perf
// cache anything, fills the cache from the recording, replaces the binary,
// and checks that perf report still names the function through our cache.
func TestCacheFill(t *testing.T) {
	t.Parallel()
	bicNeed(t, "perf")
	home := t.TempDir()
	prog := bicBuildC(t, home, "prog", "-Wl,--build-id")
	data := filepath.Join(home, "perf.data")
	bicPerf(t, home, "record", "-q", "-e", "cpu-clock", "--no-buildid-cache", "-o", data, "--", prog, "1")
	cache := filepath.Join(home, ".debug")

	code, out, errb := bicRun(t, "cache", "fill", "--buildid-dir", cache, "--debuginfod", "none", data, "--json")
	if code != exitOK {
		t.Fatalf("fill: exit %d\n%s\n%s", code, out, errb)
	}
	var rep cacheAddReportJSON
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range rep.Results {
		if r.Path == prog && r.Status == "added" {
			found = true
		}
	}
	if !found {
		t.Fatalf("prog not added: %s", out)
	}

	os.Remove(prog)
	bicBuildC(t, home, "prog", "-Wl,--build-id", "-O2", `-DTAG="new"`)
	report := bicPerf(t, home, "report", "-i", data, "--stdio", "--sort", "dso,sym")
	if !strings.Contains(report, "spin") {
		t.Errorf("perf report does not name spin from the filled cache:\n%s", report)
	}

	// A second fill into an empty cache now finds the binary changed.
	code, out, _ = bicRun(t, "cache", "fill", "--buildid-dir", filepath.Join(home, "other"), "--debuginfod", "none", data)
	if code != exitProblems || !strings.Contains(out, "changed since the recording") {
		t.Errorf("fill after rebuild: exit %d\n%s", code, out)
	}
}

func TestParseSizeAge(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{"4096": 4096, "2G": 2 << 30, "500M": 500 << 20, "1.5GiB": 3 << 29, "10k": 10 << 10, "1T": 1 << 40} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "G", "-1G", "lots"} {
		if _, err := parseSize(bad); err == nil {
			t.Errorf("parseSize(%q) succeeded", bad)
		}
	}
	for in, want := range map[string]time.Duration{"30d": 30 * 24 * time.Hour, "2w": 14 * 24 * time.Hour, "12h": 12 * time.Hour} {
		if got, err := parseAge(in); err != nil || got != want {
			t.Errorf("parseAge(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := parseAge("soon"); err == nil {
		t.Error("parseAge(soon) succeeded")
	}
}

func TestLookupFlags(t *testing.T) {
	t.Setenv("PERF_BUILDID_DIR", "/env/cache")
	var lf lookupFlags
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	lf.register(fs)
	if err := fs.Parse([]string{"--debug-dir", "/a", "--debug-dir", "/b", "--symfs", "/root", "--debuginfod", "http://x http://y"}); err != nil {
		t.Fatal(err)
	}
	o := lf.options(os.Stderr)
	if o.BuildIDDir != "/env/cache" || strings.Join(o.DebugDirs, ",") != "/a,/b" || o.SymFS != "/root" ||
		strings.Join(o.DebuginfodURLs, ",") != "http://x,http://y" {
		t.Errorf("options %+v", o)
	}
	var lf2 lookupFlags
	fs2 := flag.NewFlagSet("y", flag.ContinueOnError)
	lf2.register(fs2)
	fs2.Parse([]string{"--debuginfod", "none", "--buildid-dir", "/flag"})
	o2 := lf2.options(os.Stderr)
	if o2.DebuginfodURLs == nil || len(o2.DebuginfodURLs) != 0 || o2.BuildIDDir != "/flag" || o2.DebugDirs != nil {
		t.Errorf("options %+v", o2)
	}
}

// TestLookupFlagsProgressOnlyOnTerminal: download progress goes to stderr
// only when it is a terminal; a file, a pipe or a buffer gets none.
func TestLookupFlagsProgressOnlyOnTerminal(t *testing.T) {
	t.Parallel()
	var lf lookupFlags
	f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	for _, w := range []io.Writer{f, pw, &bytes.Buffer{}} {
		if o := lf.options(w); o.Progress != nil {
			t.Errorf("%T: progress enabled on a non-terminal", w)
		}
	}
}
