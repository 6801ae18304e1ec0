package main

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// shiftKallsyms returns the listing b with the kernel's own symbols (not
// the modules', which the kernel places apart) moved by slide, as another
// boot under KASLR lists the same kernel.
func shiftKallsyms(t *testing.T, b []byte, slide uint64) []byte {
	t.Helper()
	var out bytes.Buffer
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) == 3 {
			a, err := strconv.ParseUint(f[0], 16, 64)
			require.NoError(t, err, line)
			if a != 0 {
				line = fmt.Sprintf("%016x%s", a+slide, line[len(f[0]):])
			}
		}
		out.WriteString(line)
	}
	return out.Bytes()
}

// The kernel's %pS and %ps, and the kernel frames, named from a kallsyms
// copy in perf's build-id cache that lists the kernel elsewhere than the
// recording's boot had it: perf's cache keeps the copy of the first boot
// that recorded with a kernel build, so a recording of a later boot under
// KASLR needs its addresses relocated to that copy by the difference of
// _text, as perf relocates them (kallsyms__delta). The test makes that
// earlier boot: a real recording of this boot (perf record -N -a), its
// kernel build-id rewritten so that the running kernel is not taken for
// it, and this boot's /proc/kallsyms with the kernel's symbols moved by
// 32 MiB filed under that build-id as perf files a copy. perfcheck script must print what
// perf script prints with that cache, and what perf script printed from
// the running kernel's symbols; with the slide 0 (a copy of the
// recording's own boot) too.
func TestScriptTraceKernelRelocated(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/sys/kernel/tracing/events/kmem/kfree"); err != nil {
		t.Skipf("no tracepoints to record: %v", err)
	}
	kallsyms, err := os.ReadFile("/proc/kallsyms")
	require.NoError(t, err)
	if bytes.HasPrefix(kallsyms, []byte("0000000000000000")) {
		t.Skip("/proc/kallsyms hides addresses (kptr_restrict)")
	}
	w := newRealWorld(t)
	data := filepath.Join(w.dir, "kmem.data")
	w.run("perf", "record", "-q", "-N", "-a", "-e", "kmem:kfree", "-e", "timer:hrtimer_start",
		"-o", data, "--", "sh", "-c", "ls / >/dev/null; sleep 0.2")
	const fields = "comm,tid,time,event,ip,sym,dso,trace"
	named := w.run("perf", "script", "-F", fields, "-i", data)
	require.Regexp(t, `kmem:kfree: call_site=[a-z_][a-z0-9_.]*\+0x[0-9a-f]+ `, named, "perf names the call sites")
	require.Regexp(t, `function=[a-z_][a-z0-9_.]* `, named)

	b, err := os.ReadFile(data)
	require.NoError(t, err)
	off, size := featureAt(t, b, 2)
	i := bytes.Index(b[off:off+size], []byte("[kernel.kallsyms]\x00"))
	require.GreaterOrEqual(t, i, 0, "no kernel entry in the build-id table")
	idAt := off + i - 24 // the entry's build-id (20 bytes, then its size and padding)
	for j := idAt; j < idAt+20; j++ {
		b[j] ^= 0x5a
	}
	other := filepath.Join(w.dir, "other-boot.data")
	require.NoError(t, os.WriteFile(other, b, 0o644))
	id := hex.EncodeToString(b[idAt : idAt+20])

	for _, slide := range []uint64{32 << 20, 0} {
		cache := filepath.Join(w.dir, ".debug")
		dir := filepath.Join(cache, "[kernel.kallsyms]", id)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		copyPath := filepath.Join(dir, "kallsyms")
		require.NoError(t, os.WriteFile(copyPath, shiftKallsyms(t, kallsyms, slide), 0o644))
		// The link perf's build_id_cache__add makes beside the copy.
		link := filepath.Join(cache, ".build-id", id[:2], id[2:])
		require.NoError(t, os.MkdirAll(filepath.Dir(link), 0o755))
		os.Remove(link)
		require.NoError(t, os.Symlink(filepath.Join("..", "..", "[kernel.kallsyms]", id), link))
		name := fmt.Sprintf("slide %#x", slide)

		perf := w.run("perf", "script", "-F", fields, "-i", other) // from w.dir/.debug
		require.Equal(t, named, perf, "%s: perf relocates to the copy", name)
		perf = w.run("perf", "script", "--kallsyms", copyPath, "-F", fields, "-i", other)
		require.Equal(t, named, perf, "%s: perf --kallsyms", name)
		c := proofCase{flags: []string{"--buildid-dir", cache}}
		out, errs, code := w.pcOut(c, "script", "-F", fields, other)
		require.Equal(t, exitOK, code, errs)
		assert.Equal(t, named, out, name)
		assert.NotContains(t, errs, "print in hex", name)
		out, errs, code = w.pcOut(c, "script", other)
		require.Equal(t, exitOK, code, errs)
		assert.Equal(t, w.run("perf", "script", "-i", data), out, "%s: default fields", name)
	}
}
