package buildidcache

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func nlink(t *testing.T, p string) uint64 {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	s, ok := sysStat(st)
	if !ok {
		t.Fatalf("%s: stat gives no link count", p)
	}
	return s.nlink
}

// overwriteInPlace rewrites dst's inode with src's bytes (open O_TRUNC,
// as a linker or perf inject --jit writes its output), keeping every hard
// link to it pointing at the new contents.
func overwriteInPlace(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// TestAddUnsharesHardLinks: an entry whose binary is a hard link to the
// original (perf's way: perf record, perf buildid-cache -a, perf inject
// --jit) loses that binary when the original is rewritten in place. Add
// and addRecorded, which copy by default, turn such an entry into a
// private copy, so the rewrite no longer reaches it; with HardLink they
// leave it linked, by the user's choice.
func TestAddUnsharesHardLinks(t *testing.T) {
	t.Parallel()
	for _, maker := range []string{"perf", "HardLink"} {
		t.Run(maker, func(t *testing.T) {
			dir := t.TempDir()
			prog := buildC(t, dir, "prog", "-Wl,--build-id")
			other := buildC(t, dir, "other", "-Wl,--build-id", "-DTAG=\"o\"")
			c := &Cache{Dir: filepath.Join(dir, "cache"), DebugDirs: []string{}}
			if maker == "perf" {
				if _, err := exec.LookPath("perf"); err != nil {
					t.Skip("perf not installed")
				}
				perfCmd(t, t.TempDir(), "--buildid-dir", c.Dir, "buildid-cache", "-a", prog)
			} else if _, err := (&Cache{Dir: c.Dir, DebugDirs: []string{}, HardLink: true}).Add(prog); err != nil {
				t.Fatal(err)
			}
			id, _ := ReadFileIdentity(prog)
			e, ok := c.Has(id.BuildID)
			if !ok {
				t.Fatal("not cached")
			}
			elf := filepath.Join(e.Dir, "elf")
			if nlink(t, elf) < 2 {
				t.Skipf("%s copied instead of hard-linking (another file system?)", maker)
			}

			// With HardLink, the user's choice stands.
			if e, err := (&Cache{Dir: c.Dir, DebugDirs: []string{}, HardLink: true}).Add(prog); err != nil || e.Unshared || nlink(t, elf) < 2 {
				t.Errorf("HardLink cache unshared the entry: %+v, %v", e, err)
			}

			r := New(Options{BuildIDDir: t.TempDir(), DebugDirs: []string{}, DebuginfodURLs: []string{}})
			defer r.Close()
			e2, err := c.addRecorded(r, prog, nil, id.BuildID)
			if err != nil {
				t.Fatal(err)
			}
			if e2.Added || !e2.Unshared {
				t.Errorf("addRecorded on a hard-linked entry: added %v, unshared %v; want a private copy of the existing entry", e2.Added, e2.Unshared)
			}
			if n := nlink(t, elf); n != 1 {
				t.Errorf("elf still has %d links", n)
			}
			if e3, err := c.Add(prog); err != nil || e3.Unshared || e3.Added {
				t.Errorf("second add: %+v, %v; want the entry as it is", e3, err)
			}

			// The original is rewritten in place: the cache keeps the binary.
			overwriteInPlace(t, other, prog)
			if got, _ := ReadFileIdentity(prog); got.BuildID.Matches(id.BuildID) {
				t.Fatal("the overwrite did not change the original")
			}
			if _, ok := c.Has(id.BuildID); !ok {
				t.Error("the cached binary changed with the original")
			}
			if got, err := ReadFileIdentity(elf); err != nil || !got.BuildID.Matches(id.BuildID) {
				t.Errorf("cached elf: %v, %v", got.BuildID, err)
			}
		})
	}
}
