package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// scriptAddrs are the address columns of script output: for each sample
// with a callchain, the address of every frame line; for each sample
// without one, the address on its line (the field after "event:").
func scriptAddrs(out string) []string {
	var addrs []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "\t") {
			addrs = append(addrs, strings.Fields(l)[0])
			continue
		}
		f := strings.Fields(l)
		if len(f) == 1 {
			addrs = append(addrs, f[0]) // perf script -F ip, no callchain
			continue
		}
		for i := 3; i+1 < len(f); i++ {
			if strings.HasSuffix(f[i], ":") && !strings.HasPrefix(f[i+1], "[") {
				addrs = append(addrs, f[i+1])
				break
			}
		}
	}
	return addrs
}

// The address column of perfcheck script is perf script's, frame by frame:
// the map-relative address perf 6.1 prints for callchain entries (the file
// offset; the address for the kernel), and for a sample without callchain
// the sample's IP as recorded (twoevents.data: user addresses like
// 7f298e54bb70, which the deduplicated locations no longer hold, so the
// engine keeps each sample's addresses for script).
func TestScriptAddressColumn(t *testing.T) {
	t.Parallel()
	needPerf(t)
	symfs := ckSymfs(t)
	for _, name := range []string{"cshared-fp.data", "goprog.data", "forkexec.data", "twoevents.data"} {
		t.Run(name, func(t *testing.T) {
			data := ckFixture(t, name)
			want := scriptAddrs(perfOut(t, "script", "--symfs", symfs, "-F", "ip", "-i", data))
			out, _, code := ckRun(t, append(append([]string{"script", "--symfs", symfs}, ckHermetic(t)...), data)...)
			if code != exitOK {
				t.Fatalf("exit %d", code)
			}
			got := scriptAddrs(out)
			if len(got) != len(want) || len(got) == 0 {
				t.Fatalf("%d addresses, perf script prints %d", len(got), len(want))
			}
			var diff []string
			for i := range got {
				if got[i] != want[i] {
					diff = append(diff, got[i]+" != perf's "+want[i])
				}
			}
			// forkexec: one frame, a libc address sampled inside execve
			// after the COMM exec record, is [unknown] to perfcheck (the
			// exec dropped the old image's maps, docs/verdicts.md §1) and
			// printed as the address; perf still resolves it through
			// the old maps. That is the engine's rule, not the column's.
			allowed := 0
			if name == "forkexec.data" {
				allowed = 1
			}
			if len(diff) > allowed {
				t.Errorf("%d of %d addresses differ from perf script's: %v", len(diff), len(got), diff)
			}
		})
	}
}

// --json keeps both: the file offset and the recorded address of every
// frame; for a file-backed frame they agree in the page offset.
func TestScriptJSONAddress(t *testing.T) {
	t.Parallel()
	data := ckFixture(t, "twoevents.data")
	out, _, code := ckRun(t, append(append([]string{"script", "--json", "--symfs", ckSymfs(t)}, ckHermetic(t)...), data)...)
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	n, user := 0, 0
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var s scriptSample
		if err := json.Unmarshal([]byte(l), &s); err != nil {
			t.Fatal(err)
		}
		for _, f := range s.Frames {
			n++
			off, err1 := strconv.ParseUint(strings.TrimPrefix(f.Offset, "0x"), 16, 64)
			addr, err2 := strconv.ParseUint(strings.TrimPrefix(f.Address, "0x"), 16, 64)
			if err1 != nil || err2 != nil {
				t.Fatalf("frame %+v: offset or address unreadable", f)
			}
			if off&0xfff != addr&0xfff {
				t.Errorf("frame %+v: offset and address differ within the page", f)
			}
			if off != addr {
				user++
			}
		}
	}
	if n == 0 || user == 0 {
		t.Errorf("%d frames, %d with an address other than the offset; want user frames with both", n, user)
	}
}
