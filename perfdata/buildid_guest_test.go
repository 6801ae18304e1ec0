package perfdata

import (
	"bytes"
	"encoding/binary"
	"slices"
	"testing"
)

// TestBuildIDGuestEntries: build-id entries of a guest machine (perf kvm
// record) carry the cpumode GUEST_KERNEL or GUEST_USER and the guest's
// pid; in the layout from before 2.6.34, which has no pid, perf gives
// guest entries DEFAULT_GUEST_KERNEL_ID (0) and host ones HOST_KERNEL_ID
// (-1) (perf_header__read_build_ids_abi_quirk in tools/perf/util/header.c).
//
// There is no guest here to record: the table is the real one of
// twoevents.data with entries rewritten in test code: the kernel's made a
// guest kernel's ("[guest.kernel.kallsyms.4242]", pid 4242), the next one a
// guest user DSO of the same guest; for the old layout each entry's pid
// is deleted, as TestBuildIDLegacyLayout does.
func TestBuildIDGuestEntries(t *testing.T) {
	t.Parallel()
	const guestPID = 4242
	orig := readFixture(t, "twoevents.data")
	f, err := NewFile(bytes.NewReader(orig), int64(len(orig)))
	if err != nil {
		t.Fatal(err)
	}
	host, err := f.BuildIDs()
	if err != nil {
		t.Fatal(err)
	}
	if len(host) < 3 || host[0].Filename != "[kernel.kallsyms]" || host[0].CPUMode != CPUModeKernel || host[1].CPUMode != CPUModeUser {
		t.Fatalf("fixture's build-id table is not kernel, user, ...: %+v", host)
	}
	sec, ok := f.Features().sectionLocked(FeatureBuildID)
	if !ok {
		t.Fatal("no BUILD_ID section")
	}
	le := binary.LittleEndian
	setMode := func(b []byte, at int64, mode CPUMode) {
		misc := le.Uint16(b[at+4:])
		le.PutUint16(b[at+4:], misc&^miscCPUModeMask|uint16(mode))
	}

	t.Run("current layout", func(t *testing.T) {
		c := bytes.Clone(orig)
		k, u := host[0].Offset, host[1].Offset
		setMode(c, k, CPUModeGuestKernel)
		le.PutUint32(c[k+8:], guestPID)
		name := c[k+36 : k+int64(le.Uint16(c[k+6:]))]
		clear(name)
		copy(name, "[guest.kernel.kallsyms.4242]")
		setMode(c, u, CPUModeGuestUser)
		le.PutUint32(c[u+8:], guestPID)
		gf, err := NewFile(bytes.NewReader(c), int64(len(c)))
		if err != nil {
			t.Fatal(err)
		}
		got, err := gf.BuildIDs()
		if err != nil {
			t.Fatal(err)
		}
		want := slices.Clone(host)
		want[0].CPUMode, want[0].PID, want[0].Filename = CPUModeGuestKernel, guestPID, "[guest.kernel.kallsyms.4242]"
		want[0].Misc = want[0].Misc&^miscCPUModeMask | uint16(CPUModeGuestKernel)
		want[1].CPUMode, want[1].PID = CPUModeGuestUser, guestPID
		want[1].Misc = want[1].Misc&^miscCPUModeMask | uint16(CPUModeGuestUser)
		compareBuildIDs(t, got, want)
	})

	t.Run("layout without pid", func(t *testing.T) {
		raw, err := f.Features().Raw(FeatureBuildID)
		if err != nil {
			t.Fatal(err)
		}
		// The host kernel stays first: its name losing "[ker" is how
		// the old layout is recognised.
		var old []byte
		want := slices.Clone(host)
		for i, off := 0, 0; off < len(raw); i++ {
			size := int(le.Uint16(raw[off+6:]))
			ev := slices.Clone(raw[off : off+size])
			le.PutUint16(ev[6:], uint16(size-4))
			// Old perf had no PERF_RECORD_MISC_BUILD_ID_SIZE; the
			// fixture's ids are 20 bytes, all that perf then read.
			le.PutUint16(ev[4:], le.Uint16(ev[4:])&^miscBuildIDSize)
			switch i {
			case 1:
				setMode(ev, 0, CPUModeGuestUser)
				want[i].CPUMode, want[i].PID = CPUModeGuestUser, defaultGuestKernelID
			case 2:
				setMode(ev, 0, CPUModeGuestKernel)
				want[i].CPUMode, want[i].PID = CPUModeGuestKernel, defaultGuestKernelID
			}
			want[i].Misc = le.Uint16(ev[4:])
			want[i].Offset = sec.Offset + int64(len(old))
			old = append(old, ev[:8]...)
			old = append(old, ev[12:]...)
			off += size
		}
		got, err := decodeBuildIDTable(old, sec.Offset, le)
		if err != nil {
			t.Fatal(err)
		}
		compareBuildIDs(t, got, want)
	})
}

func compareBuildIDs(t *testing.T, got, want []BuildIDEntry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d entries, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.PID != w.PID || g.CPUMode != w.CPUMode || g.Misc != w.Misc || g.Filename != w.Filename || !bytes.Equal(g.BuildID, w.BuildID) || g.Offset != w.Offset {
			t.Errorf("entry %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
}
