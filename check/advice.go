package check

import (
	"errors"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/perfdata"
)

// origin is what a recording says of where, how and by whom it was made,
// as far as it changes what to do about a DSO that could not be verified
// (caseAdvice).
type origin struct {
	// elsewhere says how the recording's machine differs from this one
	// (host name or architecture, from the HOSTNAME and ARCH features),
	// "" when it does not or nothing says.
	elsewhere string
	// noBuildID is set when perf record ran with -B (--no-buildid): the
	// command line says so and the recording has no build-id table.
	noBuildID bool
	// owner is the user who owns the recording file when that is not this
	// process's effective user: perf record filled that user's ~/.debug.
	owner *recordingUser
}

// recordingUser is the owner of a recording made on this machine by
// another user, and that user's build-id cache.
type recordingUser struct {
	name  string // login name, or "uid N" when the user database has none
	cache string // HOME/.debug, where perf record keeps its copies; "" when the home is unknown
}

// readOrigin reads what caseAdvice needs from the recording f (name is its
// file, "" for a stream) and this machine.
func readOrigin(f recording, name string, rec machine, h hostRoots) origin {
	feats := f.Features()
	var o origin
	o.elsewhere = otherMachine(rec, h.runningMachine())
	if args, err := feats.CmdLine(); err == nil && !feats.Has(perfdata.FeatureBuildID) {
		o.noBuildID = recordedWithoutBuildIDs(args)
	}
	if name != "" && o.elsewhere == "" {
		o.owner = h.otherOwner(name)
	}
	return o
}

// otherMachine says how the recording's machine rec differs from this
// one, now, by host name or architecture (the kernel release is said
// too when one of them differs), or "" when they are the same or not
// known.
func otherMachine(rec, now machine) string {
	if (rec.host == "" || rec.host == now.host) && (rec.arch == "" || rec.arch == now.arch) {
		return ""
	}
	var diff []string
	for _, c := range []struct{ what, rec, now string }{
		{"host", rec.host, now.host},
		{"architecture", rec.arch, now.arch},
		{"kernel", rec.release, now.release},
	} {
		if c.rec != "" && c.now != "" && c.rec != c.now {
			diff = append(diff, c.what+" "+c.rec+" (this machine: "+c.now+")")
		}
	}
	return strings.Join(diff, ", ")
}

// recordShortArg are perf record's short options that take a separate
// argument (perf record -h): after one of them, the next word is a value.
const recordShortArg = "cCDeFGjkmoprtu"

// recordLongArg are perf record's long options that take an argument that
// may be the next word (perf record -h).
var recordLongArg = map[string]bool{
	"count": true, "cpu": true, "delay": true, "event": true, "freq": true, "cgroup": true,
	"branch-filter": true, "clockid": true, "mmap-pages": true, "output": true, "pid": true,
	"realtime": true, "tid": true, "uid": true, "affinity": true, "call-graph": true,
	"clang-opt": true, "clang-path": true, "control": true, "filter": true, "max-size": true,
	"mmap-flush": true, "num-thread-synthesize": true, "proc-map-timeout": true,
	"switch-max-files": true, "switch-output-event": true, "synth": true, "vmlinux": true,
}

// recordedWithoutBuildIDs reports whether the perf command line args (the
// CMDLINE feature: perf's path, "record", its options) holds -B or
// --no-buildid among the options of perf record, which stop at "--" or
// at the first word that is not an option (the workload), as perf's
// parse_options with PARSE_OPT_STOP_AT_NON_OPTION. Short options may be
// grouped ("-aB"); one that takes a value ends its group.
func recordedWithoutBuildIDs(args []string) bool {
	i := 0
	for i < len(args) && args[i] != "record" {
		i++
	}
	for i++; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--" || a == "-" || !strings.HasPrefix(a, "-"):
			return false
		case a == "--no-buildid":
			return true
		case strings.HasPrefix(a, "--"):
			if !strings.Contains(a, "=") && recordLongArg[a[2:]] {
				i++
			}
		default:
			for j := 1; j < len(a); j++ {
				if a[j] == 'B' {
					return true
				}
				if strings.IndexByte(recordShortArg, a[j]) >= 0 {
					if j == len(a)-1 {
						i++
					}
					break
				}
			}
		}
	}
	return false
}

// otherOwner is the owner of the recording file name when it is not this
// process's effective user, nil otherwise or when it cannot be told.
func (h hostRoots) otherOwner(name string) *recordingUser {
	st, err := os.Stat(name)
	if err != nil {
		return nil
	}
	uid, ok := fileOwner(st)
	if !ok || uid == os.Geteuid() {
		return nil
	}
	id := strconv.Itoa(uid)
	u := &recordingUser{name: "uid " + id}
	lookup := h.users
	if lookup == nil {
		lookup = user.LookupId
	}
	if pw, err := lookup(id); err == nil {
		u.name = pw.Username
		if pw.HomeDir != "" {
			u.cache = filepath.Join(pw.HomeDir, ".debug")
		}
	}
	return u
}

// caseAdvice gives each DSO that is not verified the advice that matches
// how the recording was made, where the general advice (keep binaries by
// build-id, set --debuginfod) would send the user the wrong way: a
// recording from another machine needs that machine's binaries; one made
// by another user here may have them in that user's ~/.debug, where perf
// record put them; one made with -B has no build-ids to look up at all.
func caseAdvice(dsos []*DSO, o origin, recording string) {
	base := "perf.data"
	if recording != "" && recording != "-" {
		base = filepath.Base(recording)
	}
	for _, d := range dsos {
		if d.Verdict == Verified || d.advice == "" {
			continue
		}
		switch {
		case len(d.BuildID) > 0 && (d.Verdict == Missing || d.Verdict == Mismatch) && o.elsewhere != "":
			d.advice = "recorded on another machine (" + o.elsewhere + "): its binaries are there; run `perfcheck cache fill " +
				base + "` or `perf archive " + base + "` there and pass that build-id cache (perf archive's tarball unpacked) with --buildid-dir"
		case len(d.BuildID) > 0 && (d.Verdict == Missing || d.Verdict == Mismatch) && o.owner != nil && o.owner.cache != "":
			ownerCacheAdvice(d, o.owner)
		case len(d.BuildID) == 0 && o.noBuildID:
			d.advice = "the recording was made with perf record -B (--no-buildid): it has no build-id table and perf record kept no copies, " +
				"so no binary can be proven to be the one that ran (only its path, inode and modification time are compared); record without -B"
		}
	}
}

// ownerCacheAdvice names, for d, the copy that perf record put in the
// build-id cache of u, the user who made the recording: a copy verified
// by build-id that this user's lookup did not see.
func ownerCacheAdvice(d *DSO, u *recordingUser) {
	if refused(u.cache) {
		d.advice = "the recording belongs to " + u.name + ", whose build-id cache " + u.cache +
			" (where perf record keeps the binaries that ran) this user cannot read: run perfcheck as " + u.name + " (or root) with --buildid-dir " + u.cache
		return
	}
	c := buildidcache.Cache{Dir: u.cache}
	e, ok := c.Has(d.BuildID)
	if !ok {
		return
	}
	d.advice = "perf record kept the binaries that ran in the build-id cache of " + u.name + ", who made the recording: pass --buildid-dir " + u.cache
	d.Notes = append(d.Notes, "the binary that ran is in "+u.name+"'s build-id cache: "+e.Dir)
}

// refused reports whether this process is refused the directory dir
// (another user's build-id cache): it may not search it or a directory
// above it (a home of mode 0700, a cache of mode 000), or may not list
// it. A cache that does not exist is not refused: it holds nothing.
func refused(dir string) bool {
	_, err := os.Lstat(filepath.Join(dir, ".build-id"))
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		var f *os.File
		if f, err = os.Open(dir); err == nil {
			_, err = f.Readdirnames(1)
			f.Close()
		}
	}
	return errors.Is(err, fs.ErrPermission)
}

// fileName is the file the recording f was opened from, "" for a stream.
func fileName(f recording) string {
	if pf, ok := f.(*perfdata.File); ok {
		return pf.Name()
	}
	return ""
}
