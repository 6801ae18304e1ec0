package check

import "github.com/perfcheck/perfcheck/perfdata"

// Records as perf writes them, for sessions fed by hand.

// Misc bits of perf_event_header (include/uapi/linux/perf_event.h).
const (
	miscMmapData = 1 << 13 // PERF_RECORD_MISC_MMAP_DATA
	miscCommExec = 1 << 13 // PERF_RECORD_MISC_COMM_EXEC
)

func recHeader(t perfdata.RecordType, mode perfdata.CPUMode, misc uint16) perfdata.RecordHeader {
	return perfdata.RecordHeader{RecType: t, Misc: uint16(mode) | misc, EventIndex: -1}
}

// mmapRec is an executable MMAP record of pid, in the kernel's cpumode for
// pid -1 (perf's synthesized kernel and module maps), the user's otherwise.
func mmapRec(pid int32, start, length, pgoff uint64, path string) *perfdata.Mmap {
	mode, tid := perfdata.CPUModeUser, pid
	if pid == -1 {
		mode, tid = perfdata.CPUModeKernel, 0
	}
	return &perfdata.Mmap{RecordHeader: recHeader(perfdata.RecordMmap, mode, 0),
		PID: uint32(pid), TID: uint32(tid), Addr: start, Len: length, PgOff: pgoff, Filename: path}
}

// mmap2Rec is an executable user MMAP2 record of pid in the device and
// inode form, at perf clock time t.
func mmap2Rec(pid int32, start, length, pgoff uint64, path string, maj, min uint32, ino, t uint64) *perfdata.Mmap2 {
	r := &perfdata.Mmap2{RecordHeader: recHeader(perfdata.RecordMmap2, perfdata.CPUModeUser, 0),
		PID: uint32(pid), TID: uint32(pid), Addr: start, Len: length, PgOff: pgoff, Filename: path,
		Maj: maj, Min: min, Ino: ino}
	r.SampleID.Time = t
	return r
}

// commRec is a COMM record; exec sets PERF_RECORD_MISC_COMM_EXEC.
func commRec(pid, tid int32, comm string, exec bool) *perfdata.Comm {
	var misc uint16
	if exec {
		misc = miscCommExec
	}
	return &perfdata.Comm{RecordHeader: recHeader(perfdata.RecordComm, perfdata.CPUModeUser, misc),
		PID: uint32(pid), TID: uint32(tid), Comm: comm}
}

// forkRec is a FORK record.
func forkRec(pid, ppid, tid, ptid int32) *perfdata.Fork {
	return &perfdata.Fork{RecordHeader: recHeader(perfdata.RecordFork, perfdata.CPUModeUser, 0),
		PID: uint32(pid), PPID: uint32(ppid), TID: uint32(tid), PTID: uint32(ptid)}
}
