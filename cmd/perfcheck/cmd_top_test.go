package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// perfReportLine is one line of `perf report --no-children --stdio -g none
// --sort sym`: "    51.50%  [.] lib_mix".
var perfReportLine = regexp.MustCompile(`^\s+([0-9.]+)%\s+\[(.)\]\s+(\S.*?)\s*$`)

type perfEntry struct {
	pct   float64
	name  string
	parts int // perf entries summed into this one (perfSelfBy); 0 is one
}

// perfSelf runs perf report on data and returns its user-space entries
// ("[.]") of at least minPct percent, with perf's own binaries resolved
// under symfs.
func perfSelf(t *testing.T, data, symfs string, minPct float64) []perfEntry {
	t.Helper()
	return parsePerfSelf(perfOut(t, "report", "--no-children", "--stdio", "-g", "none", "--sort", "sym", "--symfs", symfs, "-i", data), minPct)
}

// parsePerfSelf reads the user-space ("[.]") entries of at least minPct
// from perf report --no-children --stdio -g none --sort sym output.
func parsePerfSelf(out string, minPct float64) []perfEntry {
	var es []perfEntry
	for _, l := range strings.Split(out, "\n") {
		m := perfReportLine.FindStringSubmatch(l)
		if m == nil || m[2] != "." {
			continue
		}
		pct, _ := strconv.ParseFloat(m[1], 64)
		if pct >= minPct {
			es = append(es, perfEntry{pct: pct, name: m[3]})
		}
	}
	return es
}

// The top functions agree with perf report --no-children --sort sym on the
// committed recordings: every user-space function perf gives at least 1%
// of the samples has the same self percentage in perfcheck top, to perf's
// rounding (two decimals). Kernel entries are left out: under --symfs the
// recording's kernel is not this host's, and perfcheck refuses to name it.
func TestTopMatchesPerfReport(t *testing.T) {
	t.Parallel()
	needPerf(t)
	symfs := ckSymfs(t)
	for _, name := range []string{"cshared-fp.data", "cshared-dwarf.data", "goprog.data", "forkexec.data", "threads.data", "pipe.data", "zstd.data", "buildid-mmap.data"} {
		data := ckFixture(t, name)
		t.Run(filepath.Base(data), func(t *testing.T) {
			data := recordedAfterBins(t, data)
			want := perfSelf(t, data, symfs, 1)
			if len(want) == 0 {
				t.Fatal("perf report shows no user-space entry of 1% or more")
			}
			out, errOut, code := ckRun(t, append(append([]string{"top", "--json", "-n", "0", "--symfs", symfs}, ckHermetic(t)...), data)...)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var tj topJSON
			if err := json.Unmarshal([]byte(out), &tj); err != nil {
				t.Fatal(err)
			}
			if len(tj.Events) != 1 {
				t.Fatalf("%d events", len(tj.Events))
			}
			got := map[string]float64{}
			for _, e := range tj.Events[0].Entries {
				if !e.Group {
					got[e.Name] += e.SelfPct
				}
			}
			for _, w := range want {
				g, ok := got[w.name]
				if !ok {
					t.Errorf("%s (%.2f%% in perf report) missing from perfcheck top", w.name, w.pct)
					continue
				}
				if math.Abs(g-w.pct) > 0.0051 {
					t.Errorf("%s: self %.4f%%, perf report %.2f%%", w.name, g, w.pct)
				}
			}
		})
	}
}

// recordedAfterBins returns a copy of the recording data (a file, or the
// directory perf record --threads writes) whose mtimes, the time the
// recording ended, are a second after the newest file of the fixtures' bin
// directory. A recording without build-ids (zstd.data) has its binaries
// judged by their mtimes against that time under --symfs, and a checkout
// writes files in no set order: the copy makes the binaries older than the
// recording, as they were when it was made, whatever order they were
// checked out in.
func recordedAfterBins(t *testing.T, data string) string {
	t.Helper()
	bins, err := os.ReadDir(filepath.Join(fixtureDir, "bin"))
	require.NoError(t, err)
	var newest time.Time
	for _, e := range bins {
		st, err := e.Info()
		require.NoError(t, err)
		if st.ModTime().After(newest) {
			newest = st.ModTime()
		}
	}
	end := newest.Add(time.Second)
	cp := filepath.Join(t.TempDir(), filepath.Base(data))
	st, err := os.Stat(data)
	require.NoError(t, err)
	if st.IsDir() {
		require.NoError(t, os.Mkdir(cp, 0o755))
		files, err := os.ReadDir(data)
		require.NoError(t, err)
		for _, f := range files {
			fixtures.CopyFile(t, filepath.Join(data, f.Name()), filepath.Join(cp, f.Name()))
			require.NoError(t, os.Chtimes(filepath.Join(cp, f.Name()), end, end))
		}
	} else {
		fixtures.CopyFile(t, data, cp)
	}
	require.NoError(t, os.Chtimes(cp, end, end))
	return cp
}

func TestTopText(t *testing.T) {
	t.Parallel()
	data := ckFixture(t, "cshared-fp.data")
	out, _, code := ckRun(t, append(append([]string{"top", "-n", "3", "--symfs", ckSymfs(t)}, ckHermetic(t)...), data)...)
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	lines := strings.Split(out, "\n")
	// perf report --no-children on this file: lib_mix 51.50%, main_spin
	// 30.56%, main_sort_step 12.29%.
	for i, want := range []string{"51.50%", "30.56%", "12.29%"} {
		if !strings.HasPrefix(strings.TrimSpace(lines[2+i]), want) {
			t.Errorf("line %d: %q, want self %s", 2+i, lines[2+i], want)
		}
	}
	if !strings.Contains(lines[2], "lib_mix (/work/main/testdata/perf/bin/libhot.so)") {
		t.Errorf("first entry %q", lines[2])
	}
	if !strings.Contains(out, "more; -n 0 shows all") {
		t.Errorf("no note on the omitted entries:\n%s", out)
	}
}
