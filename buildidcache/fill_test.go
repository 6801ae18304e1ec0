package buildidcache

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/perfcheck/perfcheck/buildid"
	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// blockProg waits until its standard input closes: a process to keep
// running while its binary is looked up through /proc/PID/root.
const blockProg = `
#include <unistd.h>
int main(void) { char c; while (read(0, &c, 1) > 0) ; return 0; }
`

// TestAddRecordedProcRoot runs a static binary in a chroot, as a container
// runs its own root: the path a recording names (/perfcheck-fill-…/app)
// does not exist here, only under /proc/PID/root. addRecorded must find
// and cache it there while the process runs, under the recorded name, and
// say ErrNotFound once the process is gone; a wrong build-id is
// ErrMismatch, never cached.
func TestAddRecordedProcRoot(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("chroot needs root")
	}
	chroot := needTool(t, "chroot")
	needTool(t, "gcc")
	dir := t.TempDir()
	src := filepath.Join(dir, "block.c")
	if err := os.WriteFile(src, []byte(blockProg), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "block")
	if b, err := exec.Command("gcc", "-O1", "-static", "-Wl,--build-id", "-o", bin, src).CombinedOutput(); err != nil {
		t.Skipf("gcc -static (libc.a needed): %v\n%s", err, b)
	}
	id, err := ReadFileIdentity(bin)
	if err != nil || id.BuildID == nil {
		t.Fatalf("build-id of %s: %v", bin, err)
	}

	jail := filepath.Join(dir, "jail")
	inside := "/perfcheck-fill-" + strconv.Itoa(os.Getpid()) + "/app"
	if _, err := os.Stat(inside); err == nil {
		t.Skipf("%s exists on this host", inside)
	}
	if err := os.MkdirAll(filepath.Dir(filepath.Join(jail, inside)), 0o755); err != nil {
		t.Fatal(err)
	}
	fixtures.CopyFile(t, bin, filepath.Join(jail, inside))
	cmd := exec.Command(chroot, jail, inside)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	exited := false
	defer func() {
		if !exited {
			stdin.Close()
			cmd.Wait()
		}
	}()
	// chroot(1) changes its root, then execs the program.
	waitBlocked(t, pid, "app")

	r := New(Options{BuildIDDir: t.TempDir(), DebugDirs: []string{}, DebuginfodURLs: []string{}})
	defer r.Close()
	c := &Cache{Dir: filepath.Join(dir, "cache"), DebugDirs: []string{}}

	// Without the pid there is nothing to find: the path is not ours.
	if _, err := c.addRecorded(r, inside, nil, id.BuildID); !errors.Is(err, ErrNotFound) {
		t.Errorf("without the pid: %v, want ErrNotFound", err)
	}
	// Another build-id: the file is there, but not that binary.
	wrong := append(buildid.ID(nil), id.BuildID...)
	wrong[0] ^= 0xff
	if _, err := c.addRecorded(r, inside, []int{pid}, wrong); !errors.Is(err, ErrMismatch) {
		t.Errorf("wrong build-id: %v, want ErrMismatch", err)
	}
	if _, ok := c.Has(wrong); ok {
		t.Error("a mismatched file was cached")
	}
	// A pid that is not running (ours has no such file), then the right one.
	e, err := c.addRecorded(r, inside, []int{os.Getpid(), pid}, id.BuildID)
	if err != nil {
		t.Fatalf("through /proc/%d/root: %v", pid, err)
	}
	if !e.Added || e.Name != inside {
		t.Errorf("entry %+v: want added under %s", e, inside)
	}
	got, err := os.ReadFile(filepath.Join(e.Dir, "elf"))
	want, _ := os.ReadFile(bin)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("cached elf differs from the jail's binary (%v)", err)
	}
	if l, _ := c.List(); len(l) != 1 || l[0].Name != inside || !l[0].BuildID.Matches(id.BuildID) {
		t.Errorf("list: %+v", l)
	}
	// The Resolver finds it there too, for the same reason.
	res, err := r.Resolve(context.Background(), Query{BuildID: id.BuildID, Path: inside, PID: pid, IdentityOnly: true})
	if err != nil || res.Identity.Locator != "proc-root" {
		t.Errorf("resolve through /proc/%d/root: %+v, %v", pid, res, err)
	}
	// Cached: a second fill finds it there.
	if e, err := c.addRecorded(r, inside, []int{pid}, id.BuildID); err != nil || e.Added {
		t.Errorf("second fill: %+v, %v; want the existing entry", e, err)
	}

	// Once the process is gone, its root is too.
	stdin.Close()
	cmd.Wait()
	exited = true
	c2 := &Cache{Dir: filepath.Join(dir, "cache2"), DebugDirs: []string{}}
	if _, err := c2.addRecorded(r, inside, []int{pid}, id.BuildID); !errors.Is(err, ErrNotFound) {
		t.Errorf("after exit: %v, want ErrNotFound", err)
	}
}

// TestAddRecordedPath: a binary at its recorded path is cached under its
// real path (as perf resolves it), as cache fill did before AddRecordedMapping;
// a cached build-id answers without a file; no file at all is
// ErrNotFound, a changed file ErrMismatch.
func TestAddRecordedPath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	prog := buildC(t, dir, "prog", "-Wl,--build-id")
	id, err := ReadFileIdentity(prog)
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "via-link")
	if err := os.Symlink(prog, link); err != nil {
		t.Fatal(err)
	}
	r := New(Options{BuildIDDir: t.TempDir(), DebugDirs: []string{}, DebuginfodURLs: []string{}})
	defer r.Close()
	c := &Cache{Dir: filepath.Join(dir, "cache"), DebugDirs: []string{}}
	e, err := c.addRecorded(r, link, []int{os.Getpid()}, id.BuildID)
	if err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(prog)
	if e.Name != real {
		t.Errorf("cached under %s, want the real path %s", e.Name, real)
	}
	// Once cached, the entry answers even when the file is gone.
	if e, err := c.addRecorded(r, filepath.Join(dir, "gone"), nil, id.BuildID); err != nil || e.Added {
		t.Errorf("cached, file gone: %+v, %v; want the entry", e, err)
	}
	c2 := &Cache{Dir: filepath.Join(dir, "cache2"), DebugDirs: []string{}}
	if _, err := c2.addRecorded(r, filepath.Join(dir, "gone"), nil, id.BuildID); !errors.Is(err, ErrNotFound) {
		t.Errorf("no file: %v, want ErrNotFound", err)
	}
	other := buildC(t, dir, "other", "-Wl,--build-id", "-DTAG=\"x\"")
	oid, _ := ReadFileIdentity(other)
	if _, err := c2.addRecorded(r, prog, nil, oid.BuildID); !errors.Is(err, ErrMismatch) {
		t.Errorf("changed file: %v, want ErrMismatch", err)
	}
	if _, err := c2.addRecorded(r, prog, nil, nil); !errors.Is(err, ErrNoBuildID) {
		t.Errorf("no build-id: %v, want ErrNoBuildID", err)
	}
}
