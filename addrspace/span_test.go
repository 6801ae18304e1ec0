package addrspace

import (
	"testing"

	"github.com/perfcheck/perfcheck/perfdata"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLookupSpan: over the whole range LookupSpan returns with a mapping,
// Lookup gives that mapping, for user maps, kernel modules, the kernel
// map between modules and the holes around them; the range holds the
// address asked.
func TestLookupSpan(t *testing.T) {
	t.Parallel()
	tr := New()
	kmmap(tr, 0xffffffff81000000, 0x7effffff, 0xffffffff81000000, "[kernel.kallsyms]_text")
	kmmap(tr, 0xffffffffc0000000, 0x10000, 0, "/lib/modules/x/kernel/a.ko")
	kmmap(tr, 0xffffffffc0020000, 0x10000, 0, "/lib/modules/x/kernel/b.ko")
	mmap(tr, 7, 0x400000, 0x10000, 0, "/bin/app")
	mmap(tr, 7, 0x420000, 0x10000, 0, "/lib/libc.so.6")
	probes := []struct {
		mode perfdata.CPUMode
		ip   uint64
	}{
		{perfdata.CPUModeUser, 0x400010}, {perfdata.CPUModeUser, 0x42fff0}, {perfdata.CPUModeUser, 0x410010},
		{perfdata.CPUModeKernel, 0xffffffff81001000}, {perfdata.CPUModeKernel, 0xffffffffc0000010},
		{perfdata.CPUModeKernel, 0xffffffffc0010010}, {perfdata.CPUModeKernel, 0xffffffffc0030010},
		{perfdata.CPUModeUser, 0xffffffffc0000010}, {perfdata.CPUModeGuestUser, 0x400010},
	}
	for _, p := range probes {
		m, lo, hi := tr.LookupSpan(7, p.mode, p.ip)
		require.Same(t, tr.Lookup(7, p.mode, p.ip), m, "%#x", p.ip)
		require.True(t, p.ip-lo < hi-lo, "%#x not in [%#x, %#x)", p.ip, lo, hi)
		if m == nil {
			continue
		}
		for _, ip := range []uint64{lo, lo + (hi-lo)/2, hi - 1} {
			assert.Same(t, m, tr.Lookup(7, p.mode, ip), "%#x in the span of %#x", ip, p.ip)
		}
		assert.True(t, lo >= m.Start && hi-1 < m.Limit, "[%#x, %#x) within %#x's mapping", lo, hi, p.ip)
	}
}
