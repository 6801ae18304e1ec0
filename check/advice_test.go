package check

import (
	"errors"
	"os"
	"os/user"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/buildidcache"
)

// The command lines perf record writes into CMDLINE: -B and --no-buildid
// among perf record's options, grouped short options, values of options
// that take one, and the workload's own arguments after it.
func TestRecordedWithoutBuildIDs(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cmdline string
		want    bool
	}{
		{"/usr/bin/perf record -N -B -q -e cpu-clock:u -o b.data -- ./cshared 100 2", true},
		{"/usr/bin/perf record --no-buildid ./prog", true},
		{"perf record -aB -g sleep 1", true},
		{"perf record -gB -o x.data ls", true},
		{"perf record -N -q -o b.data -- ./prog -B", false},
		{"perf record -N ./prog -B", false},
		{"perf record -o -B ./prog", false},               // -B is -o's value
		{"perf record -e cycles -c 1000 -B ./prog", true}, // values skipped, -B still an option
		{"perf record --call-graph dwarf -B ./prog", true},
		{"perf record --call-graph=dwarf ./prog -B", false},
		{"perf record -oB ./prog", false}, // -o's value is "B"
		{"perf record --buildid-mmap ./prog", false},
		{"perf record --no-buildid-cache ./prog", false},
		{"perf", false},
	} {
		assert.Equal(t, c.want, recordedWithoutBuildIDs(strings.Fields(c.cmdline)), c.cmdline)
	}
}

// A recording made here by another user, whose ~/.debug holds the binary
// that ran, which is gone from its path: the advice names that user's
// build-id cache, the note the copy, and following the advice verifies
// the binary. The copy is put there by real perf: the recording is made
// with -N (the tests never let perf record fill a cache), then perf
// buildid-cache -a, with that user's HOME, adds the binary as perf record
// does at its end. The other user is this test's: a uid the file is
// chown'd to, whose home the user database (Options.host.users) says is
// the scratch home; the tests cannot add a user to the machine's.
func TestRealRecordingUsersCache(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	if os.Geteuid() != 0 {
		t.Skip("giving the recording to another user needs root")
	}
	bin := w.path("busy")
	w.gcc(bin, busyV1)
	data := w.record("other.data", []string{"-N"}, bin)
	w.run(nil, "perf", "buildid-cache", "-a", bin)
	require.NoError(t, os.Remove(bin))
	require.NoError(t, os.Chown(data, 4242, 4242))
	otherHome := t.TempDir()
	users := func(uid string) (*user.User, error) {
		switch uid {
		case "4242":
			return &user.User{Uid: uid, Username: "alice", HomeDir: w.home}, nil
		case "4243":
			return &user.User{Uid: uid, Username: "bob", HomeDir: otherHome}, nil
		}
		return nil, errors.New("no such user")
	}
	empty := buildidcache.Options{BuildIDDir: t.TempDir(), DebugDirs: []string{t.TempDir()}}
	opts := Options{Lookup: empty, host: hostRoots{users: users}}

	res := w.analyze(data, opts)
	d := mustDSO(t, res, bin, Missing)
	a := adviceFor(t, res.Report(), bin)
	assert.Contains(t, a, "build-id cache of alice, who made the recording: pass --buildid-dir "+w.cache())
	entry, ok := (&buildidcache.Cache{Dir: w.cache()}).Has(d.BuildID)
	require.True(t, ok, "perf buildid-cache did not cache %s", bin)
	assert.Contains(t, d.Notes, "the binary that ran is in alice's build-id cache: "+entry.Dir)

	// As the advice says.
	followed := opts
	followed.Lookup.BuildIDDir = w.cache()
	mustDSO(t, w.analyze(data, followed), bin, Verified)

	// Another user whose cache does not hold it, and a recording of this
	// user's own: the general advice.
	require.NoError(t, os.Chown(data, 4243, 4243))
	assert.NotContains(t, adviceFor(t, w.analyze(data, opts).Report(), bin), "--buildid-dir")
	require.NoError(t, os.Chown(data, os.Geteuid(), os.Getegid()))
	assert.NotContains(t, adviceFor(t, w.analyze(data, opts).Report(), bin), "--buildid-dir")
}

// adviceFor is the advice the report gives for path.
func adviceFor(t *testing.T, rep *Report, path string) string {
	t.Helper()
	for _, a := range rep.Advice {
		for _, p := range a.Paths {
			if p == path {
				return a.Text
			}
		}
	}
	t.Fatalf("no advice for %s in %+v", path, rep.Advice)
	return ""
}

// The advice for a recording from another machine names what differs
// and where to fill a cache; the same machine, or one the recording does
// not describe, gives none.
func TestOtherMachine(t *testing.T) {
	t.Parallel()
	here := machine{release: "6.1.0", arch: "x86_64", host: "vm"}
	assert.Equal(t, "", otherMachine(here, here))
	assert.Equal(t, "", otherMachine(machine{}, here))
	assert.Equal(t, "", otherMachine(machine{release: "5.10.0", arch: "x86_64", host: "vm"}, here), "a reboot into another kernel")
	assert.Equal(t, "host build7 (this machine: vm)", otherMachine(machine{release: "6.1.0", arch: "x86_64", host: "build7"}, here))
	assert.Equal(t, "host pi (this machine: vm), architecture aarch64 (this machine: x86_64), kernel 6.6.0 (this machine: 6.1.0)",
		otherMachine(machine{release: "6.6.0", arch: "aarch64", host: "pi"}, here))
}
