package perfdata

import (
	"strconv"
)

// CPUMode is the address space a record belongs to: the low three bits of
// perf_event_header.misc (PERF_RECORD_MISC_CPUMODE_MASK).
type CPUMode uint8

// CPU modes, as in include/uapi/linux/perf_event.h.
const (
	CPUModeUnknown     CPUMode = 0
	CPUModeKernel      CPUMode = 1
	CPUModeUser        CPUMode = 2
	CPUModeHypervisor  CPUMode = 3
	CPUModeGuestKernel CPUMode = 4
	CPUModeGuestUser   CPUMode = 5
)

func (m CPUMode) String() string {
	switch m {
	case CPUModeUnknown:
		return "unknown"
	case CPUModeKernel:
		return "kernel"
	case CPUModeUser:
		return "user"
	case CPUModeHypervisor:
		return "hypervisor"
	case CPUModeGuestKernel:
		return "guest-kernel"
	case CPUModeGuestUser:
		return "guest-user"
	}
	return "cpumode(" + strconv.Itoa(int(m)) + ")"
}

// misc bits of perf_event_header (include/uapi/linux/perf_event.h and
// tools/perf's own uses of the reserved bit 15).
const (
	miscCPUModeMask        = 0x7
	miscProcMapParseTimout = 1 << 12
	miscMmapData           = 1 << 13 // MMAP, MMAP2: not an executable mapping
	miscCommExec           = 1 << 13 // COMM: caused by exec
	miscSwitchOut          = 1 << 13 // SWITCH, SWITCH_CPU_WIDE
	miscExactIP            = 1 << 14 // SAMPLE
	miscSwitchOutPreempt   = 1 << 14 // SWITCH, SWITCH_CPU_WIDE
	miscMmapBuildID        = 1 << 14 // MMAP2: the union holds a build-id
	miscBuildIDSize        = 1 << 15 // HEADER_BUILD_ID (perf): the size byte is valid
	miscLostSamplesBPF     = 1 << 15 // LOST_SAMPLES (perf)
)
