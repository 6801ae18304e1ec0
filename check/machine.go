package check

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"

	"github.com/perfcheck/perfcheck/buildid"
	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/perfdata"
)

// machine is what identifies the kernel a recording ran on without its
// build-id: its release (uname -r), architecture (uname -m) and host name,
// from the recording's OSRELEASE, ARCH and HOSTNAME features or, for this
// machine, from /proc/sys/kernel. "" is unknown.
type machine struct {
	release, arch, host string
}

// runningMachine reads this machine's identity under h's /proc.
func (h hostRoots) runningMachine() machine {
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(h.procDir(), "sys", "kernel", name))
		if err != nil {
			return ""
		}
		return string(bytes.TrimSpace(b))
	}
	return machine{release: read("osrelease"), arch: read("arch"), host: read("hostname")}
}

// sameKernel compares the recording's machine rec with this one, now, as
// evidence that the running kernel is the one that ran: without a kernel
// build-id, only the same release on the same architecture and host is.
// It returns what differs (evidence of another kernel) and what is not
// known on either side (no evidence either way), in words, or "".
func sameKernel(rec, now machine) (differs, unknown string) {
	var diff, noRec, noNow []string
	for _, c := range []struct{ what, rec, now string }{
		{"kernel release", rec.release, now.release},
		{"architecture", rec.arch, now.arch},
		{"host", rec.host, now.host},
	} {
		switch {
		case c.rec == "":
			noRec = append(noRec, c.what)
		case c.now == "":
			noNow = append(noNow, c.what)
		case c.rec != c.now:
			diff = append(diff, c.what+" "+c.rec+" (this machine: "+c.now+")")
		}
	}
	var u []string
	if len(noRec) > 0 {
		u = append(u, "the recording does not say its "+strings.Join(noRec, ", "))
	}
	if len(noNow) > 0 {
		u = append(u, "this machine's "+strings.Join(noNow, ", ")+" cannot be read")
	}
	return strings.Join(diff, ", "), strings.Join(u, "; ")
}

// judgeKernelWithoutBuildID judges a kernel recorded without a build-id:
// the running kernel's symbols name its frames only when the recording
// was made on this machine's kernel release, architecture and host;
// otherwise the frames stay offsets in [kernel.kallsyms], and the reason
// says what differs or what is not known.
func (s *session) judgeKernelWithoutBuildID(d *DSO) {
	o := &s.opts
	if o.Lookup.SymFS != "" {
		d.Verdict = Missing
		d.Reason = "no kernel build-id recorded, and under --symfs the running kernel is not the recording's"
		d.advice = "copy the recording machine's build-id cache (kallsyms) and pass it with --buildid-dir"
		return
	}
	now := s.thisHost().machine
	differs, unknown := sameKernel(s.rec.machine, now)
	switch {
	case differs != "":
		d.Verdict = Replaced
		d.Reason = "no kernel build-id recorded; recorded on another kernel: " + differs
		d.advice = "copy the recording machine's build-id cache (kallsyms) or record with a kernel that has a build-id"
		return
	case unknown != "":
		d.Verdict = Missing
		d.Reason = "no kernel build-id recorded, and " + unknown + ": nothing shows that the running kernel is the one that ran"
		d.advice = "copy the recording machine's build-id cache (kallsyms) or record with a kernel that has a build-id"
		return
	}
	d.Verdict = Unverified
	d.Source = "running-kernel"
	d.FoundPath = "/proc/kallsyms"
	d.symPath = "/proc/kallsyms"
	d.Reason = "no kernel build-id recorded; recorded on this machine's kernel release (" + now.release + "), architecture and host, nothing shows it changed"
	d.needReloc = true
}

// judgeVDSOWithoutBuildID judges a vdso recorded without a build-id (a
// pipe, perf record -B): the vdso is part of the kernel, so by the rule of
// judgeKernelWithoutBuildID the running one stands for it when the
// recording was made on this machine's kernel release, architecture and
// host; otherwise its frames stay offsets.
func (s *session) judgeVDSOWithoutBuildID(d *DSO) {
	id, why := s.runningVDSO()
	if id == nil {
		d.Verdict = NoFile
		d.Reason = "no build-id recorded for the vdso, and " + why + ": left unsymbolized"
		return
	}
	d.Verdict = Unverified
	d.Source = "running-vdso"
	d.FoundPath = "[vdso]"
	d.FoundBuildID = id
	d.Reason = "no build-id recorded for the vdso; recorded on this machine's kernel release, architecture and host, so the running vdso is assumed"
}

// runningVDSO returns the running vdso's build-id when the recording was
// made on this machine's kernel (sameKernel), or why not.
func (s *session) runningVDSO() (buildid.ID, string) {
	o := &s.opts
	if o.Lookup.SymFS != "" {
		return nil, "under --symfs the running kernel is not the recording's"
	}
	if s.live != nil {
		// A stream read live says where it was recorded as it goes.
		s.rec.machine.fromFeatures(s.live.rec.Features())
	}
	differs, unknown := sameKernel(s.rec.machine, s.thisHost().machine)
	switch {
	case differs != "":
		return nil, "it was recorded on another kernel: " + differs
	case unknown != "":
		return nil, unknown
	}
	_, ident, err := buildidcache.VDSO()
	if err != nil || len(ident.BuildID) == 0 {
		return nil, "the running vdso cannot be read"
	}
	return ident.BuildID, ""
}

// fromFeatures fills what m does not know yet from the recording's
// OSRELEASE, ARCH and HOSTNAME features.
func (m *machine) fromFeatures(fs *perfdata.Features) {
	for _, f := range []struct {
		v   *string
		get func() (string, error)
	}{{&m.release, fs.OSRelease}, {&m.arch, fs.Arch}, {&m.host, fs.Hostname}} {
		if *f.v == "" {
			if v, err := f.get(); err == nil {
				*f.v = v
			}
		}
	}
}

// Where the recording's end time comes from (Result.RecordingEndSource).
const (
	// EndFromClock: the last sample's time, converted to wall time with
	// the recording's own clock reference (CLOCK_DATA, or a CLOCKID of
	// CLOCK_REALTIME, whose times are wall time already). A copy of the
	// file does not change it.
	EndFromClock = "clock"
	// EndFromMTime: the perf.data file's modification time (perf
	// rewrites the header when it stops), which a copy (cp, scp, a CI
	// artifact) resets to the time of the copy.
	EndFromMTime = "mtime"
)

// clockIDRealtime is CLOCK_REALTIME, the clock whose times are wall time.
const clockIDRealtime = 0

// realtimeClock is the wall-time reference of a recording timed with
// CLOCK_REALTIME (perf record -k realtime) that has no CLOCK_DATA: its
// times convert to themselves.
func realtimeClock(fs *perfdata.Features) *perfdata.ClockData {
	if id, err := fs.ClockID(); err == nil && id == clockIDRealtime {
		return &perfdata.ClockData{Version: 1, ClockID: clockIDRealtime, WallClockNS: 1, ClockIDNS: 1}
	}
	return nil
}

// endFromClock makes the recording's own clock the source of its end
// time, when it has one: the wall time of last, the last sample's time.
func (r *recInfo) endFromClock(last uint64) {
	if t, ok := r.wallTime(last); ok {
		r.end, r.endSource = t, EndFromClock
	}
}
