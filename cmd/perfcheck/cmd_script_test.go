package main

import (
	"bufio"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// perfOut runs perf with args (LC_ALL=C, HOME in a scratch directory so
// that its build-id cache is not the machine's) and returns stdout.
func perfOut(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("perf", args...)
	cmd.Env = append(cmd.Environ(), "LC_ALL=C", "HOME="+t.TempDir())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("perf %s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}

// headerLines are the sample lines of perf script output: those that do
// not start with a tab (callchain entries) and are not empty.
func headerLines(s string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if l != "" && l[0] != '\t' {
			out = append(out, l)
		}
	}
	return out
}

// Each sample line of perfcheck script must be perf script's, field for
// field (comm and its padding, pid/tid, time to the microsecond, period,
// event name and its width), for every committed recording perf can read.
// perf is asked for the same fields perfcheck prints; where perf adds the
// ip and symbol on the same line (recordings without callchains), the
// comparison stops at the end of perfcheck's header, before the frame,
// whose name perf may spell as another alias.
func TestScriptHeadersMatchPerfScript(t *testing.T) {
	t.Parallel()
	needPerf(t)
	symfs := ckSymfs(t)
	for _, data := range ckFixtures(t) {
		t.Run(filepath.Base(data), func(t *testing.T) {
			want := headerLines(perfOut(t, "script", "-F", "comm,pid,tid,time,period,event,ip,sym,dso", "-i", data))
			out, errOut, code := ckRun(t, append(append([]string{"script", "-F", "comm,pid,tid,time,period,event,ip,sym,dso", "--symfs", symfs}, ckHermetic(t)...), data)...)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			got := headerLines(out)
			if len(got) != len(want) {
				t.Fatalf("%d samples, perf script prints %d", len(got), len(want))
			}
			for i := range got {
				g := strings.TrimSuffix(got[i], "[untrusted]")
				if j := strings.Index(g, ": "); j >= 0 {
					// Cut after "EVENT: ", before a same-line frame.
					k := strings.Index(g[j+2:], ": ")
					if k >= 0 {
						g = g[:j+2+k+2]
					}
				}
				if !strings.HasPrefix(want[i], g) || len(g) < 30 {
					t.Fatalf("sample %d:\n perfcheck %q\n perf      %q", i, got[i], want[i])
				}
			}
		})
	}
}

// The frames: the offsets perfcheck prints are the ones perf script prints
// for callchain entries (perf prints the map-relative address, which is the
// file offset for a DSO and the address for the kernel), and a named frame
// carries the name perf gives it, up to aliases of one address.
func TestScriptFramesMatchPerfScript(t *testing.T) {
	t.Parallel()
	needPerf(t)
	symfs := ckSymfs(t)
	data := ckFixture(t, "cshared-fp.data")
	perf := perfOut(t, "script", "--symfs", symfs, "-F", "ip,sym", "-i", data)
	out, _, code := ckRun(t, append(append([]string{"script", "-F", "ip,sym,dso", "--symfs", symfs}, ckLikePerf(t)...), data)...)
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	var wantAddr, gotAddr []string
	wantSym := map[string]string{}
	for _, l := range strings.Split(perf, "\n") {
		if f := strings.Fields(l); len(f) >= 2 {
			wantAddr = append(wantAddr, f[0])
			wantSym[f[0]] = strings.SplitN(f[1], "+0x", 2)[0]
		}
	}
	same := 0
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "\t") {
			continue
		}
		// An unverified DSO's names carry the mark (docs/commands-check.md).
		f := strings.Fields(strings.Replace(l, "[unverified] ", "", 1))
		gotAddr = append(gotAddr, f[0])
		if len(f) >= 3 && strings.HasPrefix(f[2], "(") && wantSym[f[0]] == f[1] {
			same++
		}
	}
	if strings.Join(gotAddr, " ") != strings.Join(wantAddr, " ") {
		t.Fatalf("frame addresses differ from perf script's:\n perfcheck %v\n perf      %v", gotAddr, wantAddr)
	}
	// Names: perf and perfcheck may pick different aliases (access vs
	// __access), but the program's own functions must agree.
	if same*10 < len(gotAddr)*9 {
		t.Errorf("only %d of %d frames carry perf's name", same, len(gotAddr))
	}
}

func TestScriptJSONLines(t *testing.T) {
	t.Parallel()
	data := ckFixture(t, "cshared-fp.data")
	out, _, code := ckRun(t, append(append([]string{"script", "--json", "--symfs", ckSymfs(t)}, ckHermetic(t)...), data)...)
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 301 {
		t.Fatalf("%d lines, want one per sample (301)", len(lines))
	}
	var s scriptSample
	if err := json.Unmarshal([]byte(lines[2]), &s); err != nil {
		t.Fatal(err)
	}
	// The third sample, as perf script prints it: cshared 7486/7486
	// 357.558088: 1001001 cpu-clock: with main_spin at 0x11dd.
	if s.Comm != "cshared" || s.PID != 7486 || s.TID != 7486 || s.Time/1000 != 357558088 || s.Event != "cpu-clock" ||
		s.Period != 1001001 || s.CPU != nil || len(s.Frames) == 0 || s.Frames[0].Offset != "0x11dd" || s.Frames[0].Symbol != "main_spin" {
		t.Errorf("sample 3: %+v", s)
	}
}
