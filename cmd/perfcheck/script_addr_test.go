package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// addrC writes through a large array, one page after another, so that a
// recording of its page faults holds many distinct data addresses.
const addrC = `
static volatile long buf[1 << 21];
__attribute__((noinline)) long walk(int rounds) {
	long s = 0;
	for (int r = 0; r < rounds; r++)
		for (int i = 0; i < (1 << 21); i += 16)
			s += buf[i]++;
	return s;
}
int main(void) { return (int)walk(200) & 1; }
`

// recordAddr records argv with perf record -N -d (PERF_SAMPLE_ADDR) and
// the extra options, and returns the recording's path.
func (w *realWorld) recordAddr(name string, extra []string, argv ...string) string {
	w.t.Helper()
	data := filepath.Join(w.dir, name)
	args := append([]string{"record", "-q", "-N", "-d", "-o", data}, extra...)
	w.run("perf", append(append(args, "--"), argv...)...)
	return data
}

// perfcheck script -F addr prints each sample's PERF_SAMPLE_ADDR where
// perf script prints it, as perf prints it: on a page-fault recording
// (whose addresses are the data written) the lines are perf's byte for
// byte; on a cpu-clock recording with -d, with sym and dso, they are
// perf's up to the frame differences compareScript accounts for, looked
// up as perf looks them up (ckLikePerf: the system's debug directory,
// where perf finds libc's local symbols).
func TestScriptAddrMatchesPerfScript(t *testing.T) {
	t.Parallel()
	w := newRealWorld(t)
	bin := filepath.Join(w.dir, "addrprog")
	w.buildSrc(bin, addrC)

	faults := w.recordAddr("faults.data", []string{"-e", "page-faults", "-c", "1"}, bin)
	for _, fields := range []string{"comm,tid,event,addr,ip", "tid,time,addr,ip"} {
		perf := w.run("perf", "script", "-F", fields, "-i", faults)
		out, errs, code := w.pcOut(proofCase{}, "script", "-F", fields, faults)
		require.Equal(t, exitOK, code, errs)
		require.Equal(t, perf, out, fields)
	}
	// The comparison proves something only if the addresses vary and
	// some fall in the program's array.
	perf := w.run("perf", "script", "-F", "addr", "-i", faults)
	addrs := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(perf), "\n") {
		addrs[strings.TrimSpace(l)] = true
	}
	assert.Greater(t, len(addrs), 100, "distinct data addresses")

	// Recorded with a fixed period (-c), the events have no
	// PERF_SAMPLE_PERIOD; perf script's default grammar still prints the
	// period (the attr's), and so must perfcheck's.
	perf = w.run("perf", "script", "-F", "comm,tid,time,period,event,ip", "-i", faults)
	require.Contains(t, perf, "          1 page-faults:")
	out, errs, code := w.pcOut(proofCase{}, "script", "-F", "comm,tid,time,period,event,ip", faults)
	require.Equal(t, exitOK, code, errs)
	require.Equal(t, perf, out, "-F period on a fixed-period recording")
	perf = w.run("perf", "script", "--symfs", "/nonexistent", "-i", faults)
	out, errs, code = w.pcOut(proofCase{}, "script", "--symfs", "/nonexistent", faults)
	require.Equal(t, exitOK, code, errs)
	require.Equal(t, sampleHeads(perf), sampleHeads(out), "default grammar on a fixed-period recording")

	clock := w.recordAddr("clock.data", []string{"-e", "cpu-clock", "-F", "2000"}, bin)
	for _, fields := range []string{"comm,tid,event,addr,ip,sym", "comm,tid,event,addr,ip,sym,dso"} {
		perf := w.run("perf", "script", "-F", fields, "-i", clock)
		out, errs, code := ckRun(t, append(append([]string{"script", "-F", fields}, ckLikePerf(t)...), clock)...)
		require.Equal(t, exitOK, code, errs)
		logReasons(t, compareScript(t, "clock.data", perf, out))
	}
	withChain := w.recordAddr("clockg.data", []string{"-e", "cpu-clock", "-F", "2000", "-g"}, bin)
	fields := "comm,tid,event,addr,ip,sym,dso"
	perf = w.run("perf", "script", "-F", fields, "-i", withChain)
	out, errs, code = ckRun(t, append(append([]string{"script", "-F", fields}, ckLikePerf(t)...), withChain)...)
	require.Equal(t, exitOK, code, errs)
	logReasons(t, compareScript(t, "clockg.data", perf, out))

	// script --json carries each sample's address, perf's.
	out, errs, code = w.pcOut(proofCase{}, "script", "--json", faults)
	require.Equal(t, exitOK, code, errs)
	perf = w.run("perf", "script", "-F", "addr", "-i", faults)
	var jsonAddrs []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var s struct{ Addr string }
		require.NoError(t, json.Unmarshal([]byte(l), &s))
		jsonAddrs = append(jsonAddrs, s.Addr)
	}
	var perfAddrs []string
	for _, l := range strings.Split(strings.TrimSpace(perf), "\n") {
		perfAddrs = append(perfAddrs, "0x"+strings.TrimSpace(l))
	}
	assert.Equal(t, perfAddrs, jsonAddrs, "script --json addr")
}

// addrStaticC runs without libc or a dynamic loader, so that every
// address its page faults record lies in the program itself, its stack or
// its anonymous memory, all named from the program alone: table is data
// in the file (its end is _edata's), counter and buf are zeroed memory,
// counter on the file's last page, buf past it.
const addrStaticC = `
static long table[(1 << 16) + 3] = {1};
static volatile long counter;
static volatile long buf[1 << 18];
__attribute__((noinline)) long walk(volatile long *p, long n) {
	long s = 0;
	for (long i = 0; i < n; i += 512)
		s += p[i]++;
	return s;
}
void _start(void) {
	counter++;
	long s = walk(table, 1 << 16) + walk(buf, 1 << 18) + counter;
	__asm__ volatile("syscall" :: "a"(60), "D"(s & 1));
	for (;;) ;
}
`

// perf script names a page fault's address with sym, symoff and dso, from
// the process's maps at the fault and the code and data symbols of the
// binary there; perfcheck prints the same bytes where the binary is
// proven, and "[verdict] dso+0xoff", never a name, where it is not.
func TestScriptAddrNamedAsPerf(t *testing.T) {
	t.Parallel()
	if runtime.GOARCH != "amd64" {
		t.Skip("the freestanding program calls exit with an x86-64 syscall")
	}
	w := newRealWorld(t)
	bin := filepath.Join(w.dir, "addrstatic")
	w.buildSrc(bin, addrStaticC, "-static-pie", "-nostdlib", "-fno-stack-protector")
	data := w.recordAddr("static.data", []string{"-e", "page-faults", "-c", "1"}, bin)

	for _, fields := range []string{"comm,tid,event,addr,sym,symoff,dso,ip", "tid,addr,ip,sym,dso", "addr,sym,symoff,dso", "addr,dso",
		"comm,ip,brstack", "comm,ip,brstacksym,dso"} {
		perf := w.run("perf", "script", "-F", fields, "-i", data)
		out, errs, code := w.pcOut(proofCase{}, "script", "-F", fields, data)
		require.Equal(t, exitOK, code, errs)
		require.Equal(t, perf, out, fields)
	}
	// The comparison proves something only if the addresses are named
	// from the program's data, code and labels, and some are not (its
	// stack faults or not as the kernel lays out the arguments).
	perf := w.run("perf", "script", "-F", "addr,sym,dso", "-i", data)
	for _, name := range []string{" table (", " _start (", " _edata (", " [unknown] (//anon)"} {
		assert.Contains(t, perf, name)
	}

	// From a pipe, read live: the same names, marked unverified (a pipe's
	// build-ids come at its end; docs/commands-check.md).
	stream := w.run("perf", "record", "-q", "-N", "-d", "-e", "page-faults", "-c", "1", "-o", "-", "--", bin)
	pipe := filepath.Join(w.dir, "static.pipe")
	require.NoError(t, os.WriteFile(pipe, []byte(stream), 0o644))
	perf = w.run("perf", "script", "-F", "addr,sym,symoff,dso", "-i", pipe)
	out, errs, code := w.pcOutIn(strings.NewReader(stream), proofCase{}, "script", "-F", "addr,sym,symoff,dso", "-")
	require.Equal(t, exitOK, code, errs)
	require.Contains(t, out, "[unverified] table+0x")
	require.Equal(t, perf, strings.ReplaceAll(out, "[unverified] ", ""), "live pipe")

	// The program rebuilt: its recorded build-id is nowhere, so its
	// addresses are the mismatch's and are not named.
	w.buildSrc(bin, addrStaticC, "-static-pie", "-nostdlib", "-fno-stack-protector", "-O2")
	out, errs, code = w.pcOut(proofCase{}, "script", "-F", "addr,sym,symoff,dso", data)
	require.Equal(t, exitOK, code, errs)
	inProgram := 0
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasSuffix(l, "("+bin+")") {
			continue
		}
		inProgram++
		assert.Regexp(t, `^ *[0-9a-f]+ \[mismatch\] addrstatic\+0x[0-9a-f]+ \(`, l)
	}
	assert.Greater(t, inProgram, 100, "faults in the program")
}

// -F addr on a recording without PERF_SAMPLE_ADDR is refused, as perf
// script refuses it, with one line that says why.
func TestScriptAddrRefusedWithoutAddr(t *testing.T) {
	t.Parallel()
	data := ckFixture(t, "cshared-fp.data")
	fields := "comm,tid,event,addr,ip,sym"
	out, errs, code := ckRun(t, append([]string{"script", "-F", fields}, append(ckHermetic(t), data)...)...)
	assert.Equal(t, exitError, code)
	assert.Empty(t, out)
	assert.Equal(t, "perfcheck script: samples for \"cpu-clock\" do not have the ADDR attribute set: cannot print addr\n", errs)

	if _, err := exec.LookPath("perf"); err != nil {
		return
	}
	cmd := exec.Command("perf", "script", "-F", fields, "-i", data)
	cmd.Env = append(fixtures.PerfEnv(t.TempDir()), "LC_ALL=C")
	var perfErr bytes.Buffer
	cmd.Stderr = &perfErr
	require.Error(t, cmd.Run(), "perf script accepts -F addr without ADDR")
	assert.Contains(t, perfErr.String(), "do not have ADDR attribute set. Cannot print 'addr' field.")
}

// sampleHeads returns the sample lines of perf script text (frame lines
// start with a tab) up to the sample's address: the comm, tid, time,
// period, event and ip print alike, the names after them may not.
func sampleHeads(script string) []string {
	var heads []string
	for _, l := range strings.Split(script, "\n") {
		if l == "" || strings.HasPrefix(l, "\t") {
			continue
		}
		if m := sampleHeadRE.FindString(l); m != "" {
			l = m
		}
		heads = append(heads, l)
	}
	return heads
}

// sampleHeadRE matches a sample line up to the ip after the event name (an
// event's name ends in a letter before its colon, the time in a digit).
var sampleHeadRE = regexp.MustCompile(`^.*[A-Za-z_-]:\s+[0-9a-f]+\b`)
