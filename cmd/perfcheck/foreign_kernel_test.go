package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// featureAt returns the byte range of feature bit feat's section in a
// little-endian file-format perf.data (the table after the data section
// has one {offset, size} per set bit of the header's bitmap).
func featureAt(t *testing.T, b []byte, feat int) (off, size int) {
	t.Helper()
	le := binary.LittleEndian
	table := int(le.Uint64(b[40:]) + le.Uint64(b[48:]))
	n := 0
	for bit := 0; bit < 256; bit++ {
		if b[72+bit/8]&(1<<(bit%8)) == 0 {
			continue
		}
		if bit == feat {
			e := b[table+16*n:]
			return int(le.Uint64(e)), int(le.Uint64(e[8:]))
		}
		n++
	}
	t.Fatalf("feature %d not in the recording", feat)
	return 0, 0
}

// rewriteString replaces the perf_header_string feature feat (u32 length,
// then the padded string) by s, which must fit its padding.
func rewriteString(t *testing.T, b []byte, feat int, s string) {
	off, size := featureAt(t, b, feat)
	require.Less(t, len(s), size-4, "feature %d's room", feat)
	clear(b[off+4 : off+size])
	copy(b[off+4:], s)
}

// kernelVerdict runs check --json and script on data and returns the
// kernel's verdict and reason, and whether script named a kernel function
// (a frame of [kernel.kallsyms] other than [kernel.kallsyms]+0xOFF).
func kernelVerdict(t *testing.T, data string) (verdict, reason string, named bool) {
	t.Helper()
	cache := t.TempDir()
	out, errs, code := runCmd(t, "check", "--json", "--buildid-dir", cache, data)
	require.Contains(t, []int{exitOK, exitProblems}, code, errs)
	var rep struct {
		DSOs []struct {
			Path, Verdict, Reason string
		} `json:"dsos"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	for _, d := range rep.DSOs {
		if d.Path == "[kernel.kallsyms]" {
			verdict, reason = d.Verdict, d.Reason
		}
	}
	require.NotEmpty(t, verdict, "no kernel DSO in %s", out)
	out, errs, code = runCmd(t, "script", "--buildid-dir", cache, data)
	require.Equal(t, exitOK, code, errs)
	for _, l := range strings.Split(out, "\n") {
		if strings.HasSuffix(l, "([kernel.kallsyms])") && !strings.Contains(l, " [kernel.kallsyms]+0x") {
			named = true
		}
	}
	return verdict, reason, named
}

// TestKernelAcrossMachines: the running kernel's symbols name a
// recording's kernel frames only with evidence that it ran that kernel.
// A recording made here with real perf (its build-id table has the
// running kernel's build-id) is rewritten in this test to look like one
// from elsewhere: the kernel's build-id changed, or its build-id entry
// renamed away (no kernel build-id), and the OSRELEASE and ARCH features
// changed. Only the untouched file and the one without a build-id but
// with this machine's release, arch and host get kernel names.
func TestKernelAcrossMachines(t *testing.T) {
	t.Parallel()
	fixtures.NeedTool(t, "perf")
	dir := t.TempDir()
	data := filepath.Join(dir, "here.data")
	// dd's one-byte reads and writes run in the kernel.
	fixtures.PerfHome(t, dir, "record", "-N", "-q", "-g", "-e", "cpu-clock", "-F", "4000", "-o", data, "--",
		"dd", "if=/dev/zero", "of=/dev/null", "bs=1", "count=300000")
	orig, err := os.ReadFile(data)
	require.NoError(t, err)

	variant := func(name string, edit func(b []byte)) string {
		b := bytes.Clone(orig)
		edit(b)
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, b, 0o644))
		return p
	}
	const featBuildID, featOSRelease, featArch = 2, 4, 6
	kernelEntry := func(b []byte) int {
		off, size := featureAt(t, b, featBuildID)
		i := bytes.Index(b[off:off+size], []byte("[kernel.kallsyms]\x00"))
		require.GreaterOrEqual(t, i, 0, "no kernel entry in the build-id table")
		return off + i
	}
	otherID := func(b []byte) {
		// The entry is {header, pid, build_id[24], filename}, the
		// build-id's 20 bytes first in build_id: flip them.
		i := kernelEntry(b)
		for j := i - 24; j < i-4; j++ {
			b[j] ^= 0x5a
		}
	}
	noID := func(b []byte) { copy(b[kernelEntry(b):], "[kernel.kallsymX]") }
	rel, err := os.ReadFile("/proc/sys/kernel/osrelease")
	require.NoError(t, err)
	otherRel := func(b []byte) { rewriteString(t, b, featOSRelease, "4.9.0-4-amd64") }
	otherArch := func(b []byte) { rewriteString(t, b, featArch, "aarch64") }

	for _, c := range []struct {
		name, verdict, reason string
		named                 bool
		edits                 []func([]byte)
	}{
		{"as-recorded", "verified", "", true, nil},
		{"other-build-id", "mismatch", "is not the running one", false, []func([]byte){otherID}},
		{"no-build-id", "unverified", "recorded on this machine's kernel release (" + strings.TrimSpace(string(rel)) + ")", true, []func([]byte){noID}},
		{"no-build-id-other-release", "replaced", "kernel release 4.9.0-4-amd64 (this machine: ", false, []func([]byte){noID, otherRel}},
		{"no-build-id-other-arch", "replaced", "architecture aarch64 (this machine: ", false, []func([]byte){noID, otherArch}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := variant(c.name+".data", func(b []byte) {
				for _, e := range c.edits {
					e(b)
				}
			})
			v, reason, named := kernelVerdict(t, p)
			assert.Equal(t, c.verdict, v, reason)
			assert.Contains(t, reason, c.reason)
			assert.Equal(t, c.named, named, "kernel frames named")
		})
	}
}

// TestStrictFigures: under --strict an unverified DSO fails the check, so
// the trust figures printed with the verdict follow that policy: the
// samples in a program without a build-id, recorded with real perf, are
// trusted by default and untrusted under --strict.
func TestStrictFigures(t *testing.T) {
	t.Parallel()
	fixtures.NeedTool(t, "perf")
	dir := t.TempDir()
	bin := fixtures.BuildC(t, dir, "nobid", "-Wl,--build-id=none")
	data := filepath.Join(dir, "nobid.data")
	fixtures.PerfHome(t, dir, "record", "-N", "-q", "-e", "cpu-clock:u", "-o", data, "--", bin, "1")
	cache := t.TempDir()

	out, errs, code := runCmd(t, "check", "--buildid-dir", cache, data)
	require.Equal(t, exitOK, code, errs+out)
	assert.Contains(t, out, "100% fully trusted; 0% have an untrusted leaf; 0% an untrusted frame\n")

	out, errs, code = runCmd(t, "check", "--strict", "--json", "--buildid-dir", cache, data)
	require.Equal(t, exitProblems, code, errs)
	type figures struct {
		Trusted       uint64 `json:"trusted_samples"`
		UntrustedLeaf uint64 `json:"untrusted_leaf_samples"`
		UntrustedAny  uint64 `json:"untrusted_any_samples"`
	}
	var rep struct {
		Samples uint64  `json:"samples"`
		Strict  figures `json:"strict_figures"`
		DSOs    []struct {
			Path    string
			Verdict string
			Leaf    uint64 `json:"hits_leaf"`
			Any     uint64 `json:"hits_any"`
		} `json:"dsos"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	var want figures
	for _, d := range rep.DSOs {
		if d.Path == bin {
			require.Equal(t, "unverified", d.Verdict)
			want = figures{Trusted: rep.Samples - d.Any, UntrustedLeaf: d.Leaf, UntrustedAny: d.Any}
		}
	}
	require.NotZero(t, want.UntrustedAny, "no sample in %s", bin)
	assert.Equal(t, want, rep.Strict)

	out, errs, code = runCmd(t, "check", "--strict", "--buildid-dir", cache, data)
	require.Equal(t, exitProblems, code, errs+out)
	pct := func(n uint64) string {
		return strings.TrimSuffix(strconv.FormatFloat(float64(n)*100/float64(rep.Samples), 'f', 1, 64), ".0") + "%"
	}
	assert.Contains(t, out, fmt.Sprintf("%d samples, %s fully trusted; %s have an untrusted leaf; %s an untrusted frame (--strict: unverified frames untrusted)\n",
		rep.Samples, pct(want.Trusted), pct(want.UntrustedLeaf), pct(want.UntrustedAny)))
}
