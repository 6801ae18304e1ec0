package main

import (
	"bytes"
	"cmp"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
// recording's own boot) too. Then a vmlinux built in the test from the
// same listing, linked elsewhere, as perf script --vmlinux reads it.
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

	// A vmlinux: the kernel's text symbols of this boot's listing, linked
	// 16 MiB below where this boot has them, with the rewritten build-id,
	// filed in another cache as perf files a kernel image (elf).
	for _, tool := range []string{"as", "ld"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s to build a vmlinux: %v", tool, err)
		}
	}
	cache := filepath.Join(w.dir, "vmlinux-cache")
	dir := filepath.Join(cache, "[kernel.kallsyms]", id)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	vmlinux := filepath.Join(dir, "elf")
	buildVmlinux(t, kallsyms, 16<<20, id, vmlinux)
	link := filepath.Join(cache, ".build-id", id[:2], id[2:])
	require.NoError(t, os.MkdirAll(filepath.Dir(link), 0o755))
	require.NoError(t, os.Symlink(filepath.Join("..", "..", "[kernel.kallsyms]", id), link))
	perf := w.run("perf", "script", "--vmlinux", vmlinux, "-F", fields, "-i", other)
	require.Equal(t, named, perf, "perf relocates the vmlinux")
	out, errs, code := w.pcOut(proofCase{flags: []string{"--buildid-dir", cache}}, "script", "-F", fields, other)
	require.Equal(t, exitOK, code, errs)
	assert.Equal(t, named, out, "vmlinux")
}

// buildVmlinux writes to path an ELF kernel image whose symbols are the
// kernel's text symbols of the kallsyms listing b (each name once, sized
// to the next address), linked below where the listing has them by
// lower, with the GNU build-id id (hex): what a vmlinux of that kernel
// looks like to a symbolizer, its text zero-filled.
func buildVmlinux(t *testing.T, b []byte, lower uint64, id, path string) {
	t.Helper()
	type sym struct {
		addr   uint64
		name   string
		global bool
	}
	var syms []sym
	var text, etext uint64
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		a, err := strconv.ParseUint(f[0], 16, 64)
		require.NoError(t, err, line)
		switch f[2] {
		case "_text":
			text = a
		case "_etext":
			etext = a
		}
		if f[1] == "t" || f[1] == "T" {
			syms = append(syms, sym{a, f[2], f[1] == "T"})
		}
	}
	require.True(t, text != 0 && etext > text, "no _text and _etext in the listing")
	slices.SortStableFunc(syms, func(x, y sym) int { return cmp.Compare(x.addr, y.addr) })
	var src strings.Builder
	src.WriteString(".section .text,\"ax\",@progbits\n")
	seen := map[string]bool{}
	for i := 0; i < len(syms); {
		a := syms[i].addr
		j := i
		for j < len(syms) && syms[j].addr == a {
			j++
		}
		next := etext
		if j < len(syms) && syms[j].addr < etext {
			next = syms[j].addr
		}
		if a >= text && a < etext {
			for _, s := range syms[i:j] {
				if seen[s.name] {
					continue
				}
				seen[s.name] = true
				if s.global {
					fmt.Fprintf(&src, ".globl \"%s\"\n", s.name)
				}
				fmt.Fprintf(&src, ".type \"%s\",@function\n.size \"%s\",%d\n\"%s\":\n", s.name, s.name, next-a, s.name)
			}
			fmt.Fprintf(&src, ".skip %d\n", next-a)
		}
		i = j
	}
	dir := t.TempDir()
	asm, obj := filepath.Join(dir, "vmlinux.s"), filepath.Join(dir, "vmlinux.o")
	require.NoError(t, os.WriteFile(asm, []byte(src.String()), 0o644))
	for _, cmd := range [][]string{
		{"as", "-o", obj, asm},
		{"ld", "-o", path, fmt.Sprintf("-Ttext=%#x", text-lower), "--build-id=0x" + id, "-e", "_text", obj},
	} {
		out, err := exec.Command(cmd[0], cmd[1:]...).CombinedOutput()
		require.NoError(t, err, "%v: %s", cmd, out)
	}
}
