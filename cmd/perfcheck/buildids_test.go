package main

import (
	"fmt"
	"testing"

	"github.com/perfcheck/perfcheck/perfdata"
)

// TestHitTracker follows a small synthetic history: a process maps a
// library, forks a child that execs and maps another; kernel samples land
// in a module inside the kernel's range. Only hit DSOs are listed, in the
// order they were created.
func TestHitTracker(t *testing.T) {
	t.Parallel()
	tr := newHitTracker()
	hdr := func(misc uint16) perfdata.RecordHeader { return perfdata.RecordHeader{Misc: misc} }
	sample := func(mode perfdata.CPUMode, pid, tid uint32, ip uint64) *perfdata.Sample {
		s := &perfdata.Sample{RecordHeader: hdr(uint16(mode)), Fields: perfdata.SampleIP | perfdata.SampleTID, IP: ip}
		s.SampleID = perfdata.SampleIDInfo{Fields: perfdata.SampleTID, PID: pid, TID: tid}
		return s
	}
	recs := []perfdata.Record{
		&perfdata.Mmap{RecordHeader: hdr(1), PID: ^uint32(0), Addr: 0xffff0000, Len: 0x10000, Filename: "[kernel.kallsyms]_text"},
		&perfdata.Mmap{RecordHeader: hdr(1), PID: ^uint32(0), Addr: 0xffff8000, Len: 0x1000, Filename: "/lib/modules/x/kernel/foo-bar.ko"},
		&perfdata.Mmap2{RecordHeader: hdr(2), PID: 10, TID: 10, Addr: 0x400000, Len: 0x1000, Prot: 4, Filename: "/bin/parent"},
		&perfdata.Mmap2{RecordHeader: hdr(2), PID: 10, TID: 10, Addr: 0x7000000, Len: 0x1000, Prot: 4, Filename: "/lib/libc.so"},
		&perfdata.Mmap2{RecordHeader: hdr(2), PID: 10, TID: 10, Addr: 0x9000000, Len: 0x1000, Prot: 4, Filename: "//anon"},
		&perfdata.Mmap2{RecordHeader: hdr(2), PID: 10, TID: 10, Addr: 0xa000000, Len: 0x1000, Prot: 4, Filename: "/never/hit.so"},
		&perfdata.Fork{RecordHeader: hdr(0), PID: 11, PPID: 10, TID: 11, PTID: 10},
		&perfdata.Mmap2{RecordHeader: hdr(2), PID: 11, TID: 11, Addr: 0x400000, Len: 0x1000, Prot: 4, Filename: "/bin/child"},
		sample(perfdata.CPUModeUser, 11, 11, 0x7000010),    // libc, inherited from the parent
		sample(perfdata.CPUModeUser, 11, 11, 0x400010),     // the child's own binary
		sample(perfdata.CPUModeUser, 10, 12, 0x9000010),    // a new thread of 10: JIT code
		sample(perfdata.CPUModeKernel, 10, 10, 0xffff8100), // the module
		sample(perfdata.CPUModeKernel, 10, 10, 0xffff0100), // the kernel
		&perfdata.Exit{RecordHeader: hdr(0), PID: 11, TID: 11},
		sample(perfdata.CPUModeUser, 11, 11, 0x400010), // after exit: a new, empty thread
	}
	for _, r := range recs {
		tr.record(r)
	}
	var got []string
	for _, d := range tr.ms.all(func(d *bidDSO) bool { return d.hit }) {
		got = append(got, d.name)
	}
	want := []string{"[kernel.kallsyms]", "/lib/modules/x/kernel/foo-bar.ko", "/lib/libc.so", "/tmp/perf-10.map", "/bin/child"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("hit DSOs %v, want %v", got, want)
	}
	if d := tr.ms.host.findShort("[foo_bar]"); d == nil {
		t.Error("module not found by its short name")
	}
}

// TestMachinesOrder: host DSOs first, then guests by pid; same-named
// DSOs of one machine are one.
func TestMachinesOrder(t *testing.T) {
	t.Parallel()
	var ms machines
	ms.get(7).findnew("/guest7", nil)
	ms.get(-1).findnew("/host", nil)
	ms.get(0).findnew("/guest0", nil)
	if d := ms.get(-1).findnew("/host", nil); d != ms.get(-1).dsos[0] {
		t.Error("a lookup without an id did not find the DSO by name")
	}
	id := &dsoID{maj: 1, min: 2, ino: 3, gen: 4}
	if d := ms.get(-1).findnew("/host", id); d != ms.get(-1).dsos[0] || d.id != *id {
		t.Error("a DSO without an id did not take the first id given")
	}
	if d := ms.get(-1).findnew("/host", &dsoID{maj: 1, min: 2, ino: 9}); d == ms.get(-1).dsos[0] {
		t.Error("another inode under the same name is the same DSO")
	}
	if d := ms.get(-1).findnew("/host", &dsoID{maj: 1, min: 2, ino: 3}); d != ms.get(-1).dsos[0] {
		t.Error("a missing inode generation made another DSO")
	}
	var got []string
	for _, d := range ms.all(func(*bidDSO) bool { return true }) {
		got = append(got, fmt.Sprintf("%s@%s", d.name, machineName(d.machine)))
	}
	if want := "[/host@host /host@host /guest0@guest:0 /guest7@guest:7]"; fmt.Sprint(got) != want {
		t.Errorf("%v, want %s", got, want)
	}
}
