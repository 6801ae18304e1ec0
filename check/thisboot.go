package check

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// recordedThisBoot says whether the recording was made on this host since
// it last booted: its host name and kernel release (the HOSTNAME and
// OSRELEASE features) are this machine's, and its time (recordedAt) is
// after this boot began (/proc/stat's btime). Only then do its pids name
// this machine's processes, whose /proc/PID/root a lookup may look under
// (buildidcache.Query.PID). A pid recorded on another host or in an
// earlier boot names an unrelated process, or none: a lookup through it
// would depend on what runs where the recording is read, and prove
// nothing.
func (s *session) recordedThisBoot() bool {
	o := &s.opts
	if o.Lookup.SymFS != "" {
		// The recording is from elsewhere; the lookup does not look
		// under /proc/PID/root then either.
		return false
	}
	rec, now := s.rec.machine, s.thisHost()
	if rec.host == "" || rec.release == "" || rec.host != now.machine.host || rec.release != now.machine.release {
		return false
	}
	at := s.rec.recordedAt()
	return now.bootOK && !at.IsZero() && at.After(now.boot)
}

// hostNow is this machine (runningMachine) and when it booted (bootTime).
type hostNow struct {
	machine machine
	boot    time.Time
	bootOK  bool
}

// now reads hostNow.
func (h hostRoots) now() hostNow {
	boot, ok := h.bootTime()
	return hostNow{machine: h.runningMachine(), boot: boot, bootOK: ok}
}

// queryPID is the pid a lookup of d's binary may look under /proc/PID/root
// of: the process that mapped it first, when the recording was made on
// this host in this boot (recordedThisBoot); 0 otherwise.
func (s *session) queryPID(d *DSO) int {
	if pid := int32(d.pid); pid > 0 && s.recordedThisBoot() {
		return int(pid)
	}
	return 0
}

// recordedAt is a wall time within the recording or at its end, to compare
// with this machine's boot: the recording's clock reference (CLOCK_DATA,
// taken as perf record starts) when it has one, else its end (the last
// sample's time by that clock, or the file's modification time); zero when
// neither is known (a stream from a pipe without a clock reference). A
// CLOCK_REALTIME recording without CLOCK_DATA has only realtimeClock's
// identity, which is no time.
func (r *recInfo) recordedAt() time.Time {
	if c := r.clock; c != nil && c.ClockID != clockIDRealtime {
		return time.Unix(0, int64(c.WallClockNS))
	}
	return r.end
}

// bootTime is when this machine booted: the btime line of /proc/stat
// (seconds since the epoch, as proc(5) says).
func (h hostRoots) bootTime() (time.Time, bool) {
	b, err := os.ReadFile(filepath.Join(h.procDir(), "stat"))
	if err != nil {
		return time.Time{}, false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "btime "); ok {
			sec, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return time.Unix(sec, 0), err == nil && sec > 0
		}
	}
	return time.Time{}, false
}
