package buildidcache

import (
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// jailed is a static program blocked on its standard input inside a
// chroot (as a container runs its own root), with the genuine binary on
// the host.
type jailed struct {
	dir, jail, bin string
	id             *Identity
	prog           []byte // the genuine binary's bytes
	pid            int
}

// startJailed builds blockProg statically into dir/host/app and starts a
// copy as /bin/block inside dir/jail; the process runs until the test
// ends.
func startJailed(t *testing.T) *jailed {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("chroot needs root")
	}
	chroot := needTool(t, "chroot")
	needTool(t, "gcc")
	j := &jailed{dir: t.TempDir()}
	src := filepath.Join(j.dir, "block.c")
	os.WriteFile(src, []byte(blockProg), 0o644)
	j.bin = filepath.Join(j.dir, "host", "app")
	os.MkdirAll(filepath.Dir(j.bin), 0o755)
	if b, err := exec.Command("gcc", "-O1", "-static", "-Wl,--build-id", "-o", j.bin, src).CombinedOutput(); err != nil {
		t.Skipf("gcc -static (libc.a needed): %v\n%s", err, b)
	}
	var err error
	if j.id, err = ReadFileIdentity(j.bin); err != nil || j.id.BuildID == nil {
		t.Fatalf("build-id of %s: %v", j.bin, err)
	}
	j.prog, _ = os.ReadFile(j.bin)
	j.jail = filepath.Join(j.dir, "jail")
	os.MkdirAll(filepath.Join(j.jail, "bin"), 0o755)
	os.WriteFile(filepath.Join(j.jail, "bin", "block"), j.prog, 0o755)
	cmd := exec.Command(chroot, j.jail, "/bin/block")
	stdin, _ := cmd.StdinPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	j.pid = cmd.Process.Pid
	waitBlocked(t, j.pid, "block")
	return j
}

// waitBlocked waits until process pid, started through chroot(1), runs the
// program named base and sleeps in it (blockProg blocks reading its
// stdin): a wait, not a timed assertion. /proc/PID/exe alone is not
// enough: the kernel names the new program there when the exec begins
// (begin_new_exec in fs/exec.c), before load_elf_binary maps it, and a
// test that read /proc/PID/maps in between did not find the file mapped.
func waitBlocked(t *testing.T, pid int, base string) {
	t.Helper()
	proc := "/proc/" + strconv.Itoa(pid)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		exe, err := os.Readlink(proc + "/exe")
		stat, err2 := os.ReadFile(proc + "/stat")
		// "pid (comm) S ...": the state follows the last ')'.
		if i := bytes.LastIndexByte(stat, ')'); err == nil && err2 == nil && filepath.Base(exe) == base &&
			i >= 0 && i+2 < len(stat) && stat[i+2] == 'S' {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d never blocked in %s (exe %q, stat %q)", pid, base, exe, stat)
		}
	}
}

// plant writes b at the host path p inside the jail.
func (j *jailed) plant(t *testing.T, p string, b []byte) string {
	t.Helper()
	q := filepath.Join(j.jail, p)
	os.MkdirAll(filepath.Dir(q), 0o755)
	if err := os.WriteFile(q, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return q
}

func fileIDOf(t *testing.T, p string) FileID {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	id, ok := FileIDOf(st)
	if !ok {
		t.Fatalf("%s: stat gives no device and inode", p)
	}
	return id
}

// forge returns b with one byte of .text changed: other code under the
// same build-id note, as anyone who can write a file can make.
func forge(t *testing.T, path string, b []byte) []byte {
	t.Helper()
	ef, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	text := ef.Section(".text")
	out := bytes.Clone(b)
	out[text.Offset+text.Size/2] ^= 0xff
	return out
}

// TestAddRecordedPrefersHostFile: the recorded path holds the genuine
// binary on the host; a process (perhaps a reused pid) in a chroot holds,
// at the same path, other code carrying the same build-id note. Fill must
// cache the host's file, and the Resolver must answer with it too.
func TestAddRecordedPrefersHostFile(t *testing.T) {
	t.Parallel()
	j := startJailed(t)
	forged := forge(t, j.bin, j.prog)
	j.plant(t, j.bin, forged)
	r := New(Options{BuildIDDir: t.TempDir(), DebugDirs: []string{}, DebuginfodURLs: []string{}})
	defer r.Close()
	c := &Cache{Dir: filepath.Join(j.dir, "cache"), DebugDirs: []string{}}
	e, err := c.addRecorded(r, j.bin, []int{j.pid}, j.id.BuildID)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(e.Dir, "elf"))
	if bytes.Equal(got, forged) || !bytes.Equal(got, j.prog) {
		t.Errorf("cached the container's forged file (or neither) under build-id %v; the genuine one is at the host path", j.id.BuildID)
	}
	res, err := r.Resolve(context.Background(), Query{BuildID: j.id.BuildID, Path: j.bin, PID: j.pid, IdentityOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Identity.Locator != "path" || res.Identity.Path != j.bin {
		t.Errorf("resolver answered %s %s; want the host path %s", res.Identity.Locator, res.Identity.Path, j.bin)
	}
}

// TestAddRecordedProcRootNeedsMappedInode: a file found only under
// /proc/PID/root, with the recorded build-id, is cached only when it is
// the inode the recording mapped (or, with no inode recorded, one the
// process maps now), and always as a copy, even with HardLink: the
// container owns that inode and may rewrite it in place.
func TestAddRecordedProcRootNeedsMappedInode(t *testing.T) {
	t.Parallel()
	j := startJailed(t)
	// A path that names nothing on this host, only in the jail: the
	// genuine bytes, but a file the process does not map.
	inside := "/perfcheck-fill-" + strconv.Itoa(os.Getpid()) + "/app"
	if _, err := os.Stat(inside); err == nil {
		t.Skipf("%s exists on this host", inside)
	}
	planted := j.plant(t, inside, j.prog)
	r := New(Options{BuildIDDir: t.TempDir(), DebugDirs: []string{}, DebuginfodURLs: []string{}})
	defer r.Close()
	newCache := func(name string) *Cache {
		return &Cache{Dir: filepath.Join(j.dir, name), DebugDirs: []string{}, HardLink: true}
	}

	// No inode recorded and the process maps no such file: refused.
	if _, err := newCache("c1").addRecorded(r, inside, []int{j.pid}, j.id.BuildID); !errors.Is(err, ErrMismatch) {
		t.Errorf("unmapped file, no inode recorded: %v, want ErrMismatch", err)
	}
	// Another inode recorded: refused.
	other := fileIDOf(t, filepath.Join(j.jail, "bin", "block"))
	if _, err := newCache("c2").AddRecordedMapping(r, inside, []int{j.pid}, j.id.BuildID, &other); !errors.Is(err, ErrMismatch) {
		t.Errorf("other inode recorded: %v, want ErrMismatch", err)
	}
	// Its own inode recorded: cached, as a copy, under the recorded name.
	mine := fileIDOf(t, planted)
	c := newCache("c3")
	e, err := c.AddRecordedMapping(r, inside, []int{j.pid}, j.id.BuildID, &mine)
	if err != nil {
		t.Fatal(err)
	}
	if e.Name != inside {
		t.Errorf("cached under %s, want %s", e.Name, inside)
	}
	if cached := fileIDOf(t, filepath.Join(e.Dir, "elf")); cached == mine {
		t.Errorf("the container's inode was hard-linked into the cache")
	}
	// No inode recorded, but the process maps it now (its own program,
	// /bin/block, which is not on the host): cached, as a copy.
	c4 := newCache("c4")
	e, err = c4.addRecorded(r, "/bin/block", []int{j.pid}, j.id.BuildID)
	if err != nil {
		t.Fatalf("a file the process maps: %v", err)
	}
	if cached := fileIDOf(t, filepath.Join(e.Dir, "elf")); cached == other {
		t.Errorf("the container's inode was hard-linked into the cache")
	}
}
