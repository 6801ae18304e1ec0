package perfdata

import (
	"bytes"
	"encoding/binary"
	"io"
	"strings"

	"github.com/perfcheck/perfcheck/buildid"
)

// BuildIDEntry is one build_id_event: an entry of the BUILD_ID header
// feature or a PERF_RECORD_HEADER_BUILD_ID (67) record (struct
// perf_record_header_build_id in tools/lib/perf/include/perf/event.h).
type BuildIDEntry struct {
	// PID is the machine the DSO belongs to: -1 (HOST_KERNEL_ID) for the
	// host, 0 (DEFAULT_GUEST_KERNEL_ID) or a guest's pid for guests.
	PID int32
	// CPUMode is header.misc & PERF_RECORD_MISC_CPUMODE_MASK: kernel
	// (kernel or module), user, guest-kernel or guest-user.
	CPUMode CPUMode
	// Misc is the whole header.misc, including
	// PERF_RECORD_MISC_BUILD_ID_SIZE.
	Misc uint16
	// BuildID holds the size byte's worth of bytes when Misc has
	// PERF_RECORD_MISC_BUILD_ID_SIZE, else the 20 bytes perf assumes
	// (so a 16-byte build-id written without the size bit keeps four
	// trailing zero bytes, as perf prints it).
	BuildID buildid.ID
	// Filename is the DSO's path or perf's name for it
	// ("[kernel.kallsyms]", "[vdso]", a module's path or "[name]").
	Filename string
	// Offset is the absolute file (or stream) offset of the event.
	Offset int64
}

const (
	buildIDEventHeaderSize = 36 // header 8, pid 4, build_id[20], size 1, reserved 3
	legacyBuildIDHeader    = 32 // header 8, build_id[24]: before the pid field existed
	buildIDMaxSize         = 20 // BUILD_ID_SIZE
	hostKernelID           = -1 // HOST_KERNEL_ID in tools/perf/util/machine.h
	defaultGuestKernelID   = 0  // DEFAULT_GUEST_KERNEL_ID
)

// decodeBuildIDEvent decodes one build_id_event, header included, at d's
// position and leaves d at the start of the next event (header.size bytes
// further). It reads the layout perf has written since 2.6.34; the layout
// without the pid field is handled by decodeBuildIDTable, which detects it
// the way perf does.
func decodeBuildIDEvent(d *decoder) BuildIDEntry {
	return decodeBuildIDEventABI(d, false)
}

// decodeBuildIDEventABI decodes one event; legacy selects the layout
// without pid (perf_header__read_build_ids_abi_quirk in
// tools/perf/util/header.c).
func decodeBuildIDEventABI(d *decoder, legacy bool) BuildIDEntry {
	var e BuildIDEntry
	start := d.off
	e.Offset = d.base + int64(start)
	d.u32() // header.type: not meaningful inside the feature section
	e.Misc = d.u16()
	size := int(d.u16())
	if d.err != nil {
		return BuildIDEntry{}
	}
	fixed := buildIDEventHeaderSize
	if legacy {
		fixed = legacyBuildIDHeader
	}
	if size < fixed {
		d.off = start
		d.fail(nil, "build-id event size %d is smaller than its %d-byte header", size, fixed)
		return BuildIDEntry{}
	}
	if size-8 > d.remaining() {
		d.off = start
		d.fail(io.ErrUnexpectedEOF, "build-id event size %d exceeds the %d bytes left", size, d.remaining()+8)
		return BuildIDEntry{}
	}
	e.CPUMode = CPUMode(e.Misc & miscCPUModeMask)
	var area []byte
	if legacy {
		// The pid is missing; perf fills it in from the cpumode.
		e.PID = hostKernelID
		if e.CPUMode == CPUModeGuestKernel || e.CPUMode == CPUModeGuestUser {
			e.PID = defaultGuestKernelID
		}
		area = d.bytes(24)
	} else {
		e.PID = int32(d.u32())
		area = d.bytes(24) // build_id[20], u8 size, 3 reserved bytes
	}
	n := buildIDMaxSize
	if !legacy && e.Misc&miscBuildIDSize != 0 {
		n = int(area[20])
		if n > buildIDMaxSize {
			d.off = start + 32
			d.fail(nil, "build-id size %d exceeds %d", n, buildIDMaxSize)
			return BuildIDEntry{}
		}
	}
	e.BuildID = bytes.Clone(area[:n])
	e.Filename = cstr(d.bytes(size - fixed))
	return e
}

// decodeBuildIDTable decodes the BUILD_ID feature section: build_id_events
// back to back until the end of b (perf_header__read_build_ids). If a
// filename reads "nel.kallsyms]", the table predates the pid field (the four
// missing bytes chop "[ker" off the kernel's name) and the whole table is
// decoded again with the old layout, as perf does.
func decodeBuildIDTable(b []byte, base int64, order binary.ByteOrder) ([]BuildIDEntry, error) {
	out, quirk, err := decodeBuildIDs(b, base, order, false)
	if quirk {
		out, _, err = decodeBuildIDs(b, base, order, true)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

func decodeBuildIDs(b []byte, base int64, order binary.ByteOrder, legacy bool) (out []BuildIDEntry, quirk bool, err error) {
	d := newDecoder(b, base, order, "BUILD_ID feature")
	for d.remaining() > 0 {
		e := decodeBuildIDEventABI(&d, legacy)
		if d.err != nil {
			return nil, false, d.err
		}
		if !legacy && strings.HasPrefix(e.Filename, "nel.kallsyms]") {
			return nil, true, nil
		}
		out = append(out, e)
	}
	return out, false, nil
}
