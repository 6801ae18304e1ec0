package check

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/dso"
)

// A kernel named from a kallsyms listing of another boot is relocated by
// the difference of the reference symbol there and when recorded, and
// KernelSymbol names its addresses as its frames are named; only for a
// kernel whose verdict trusts its names and whose lookup was kept.
func TestKernelSymbolRelocated(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	listing := filepath.Join(dir, "kallsyms")
	// The recording's boot had _text at 0xffffffff81000000; the
	// listing's boot 32 MiB higher.
	require.NoError(t, os.WriteFile(listing, []byte("ffffffff83000000 T _text\nffffffff83001000 T core_fn\nffffffff83002000 t other_fn\n"), 0o644))
	lk, err := (defaultOpener{}).Open(listing, dso.Kernel)
	require.NoError(t, err)
	defer lk.Close()
	d := &DSO{Path: "[kernel.kallsyms]", Kind: dso.Kernel, Verdict: Verified, relocSym: "_text", relocAddr: 0xffffffff81000000}
	d.relocateTo(lk)
	assert.Equal(t, uint64(32<<20), d.symDelta)

	_, _, ok := d.KernelSymbol(0xffffffff81001010)
	assert.False(t, ok, "no lookup kept")
	d.kernelNames = lk
	name, off, ok := d.KernelSymbol(0xffffffff81001010)
	require.True(t, ok)
	assert.Equal(t, "core_fn", name)
	assert.Equal(t, uint64(0x10), off)
	name, off, ok = d.KernelSymbol(0xffffffff81002004)
	assert.True(t, ok)
	assert.Equal(t, "other_fn", name)
	assert.Equal(t, uint64(4), off)

	d.Verdict = Mismatch
	_, _, ok = d.KernelSymbol(0xffffffff81001010)
	assert.False(t, ok, "an untrusted kernel names nothing")

	// Without a recorded kernel map, nothing says where the recording's
	// boot had the kernel: read unrelocated, as perf reads it.
	u := &DSO{Path: "[kernel.kallsyms]", Kind: dso.Kernel, Verdict: Verified}
	u.relocateTo(lk)
	assert.Zero(t, u.symDelta)
}
