package check

import (
	"context"
	"errors"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"

	"github.com/perfcheck/perfcheck/addrspace"
	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/dso"
)

// openCounter counts the opens of one file, as the kernel reports them
// (inotify IN_OPEN, through any path or link to it).
type openCounter struct{ fd int }

func countOpens(t *testing.T, path string) *openCounter {
	t.Helper()
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		t.Skipf("inotify: %v", err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	// Closes are watched too: inotify merges an event with an identical
	// one still queued, so open, open would count once.
	if _, err := syscall.InotifyAddWatch(fd, path, syscall.IN_OPEN|syscall.IN_CLOSE); err != nil {
		t.Fatalf("inotify watch %s: %v", path, err)
	}
	return &openCounter{fd}
}

// opens returns the opens since the last call.
func (c *openCounter) opens(t *testing.T) int {
	t.Helper()
	n := 0
	buf := make([]byte, 4096)
	for {
		m, err := syscall.Read(c.fd, buf)
		if errors.Is(err, syscall.EAGAIN) {
			return n
		}
		if err != nil {
			t.Fatal(err)
		}
		// A watched file's events carry no name: each is the bare
		// struct inotify_event.
		for off := 0; off+syscall.SizeofInotifyEvent <= m; off += syscall.SizeofInotifyEvent {
			ev := (*syscall.InotifyEvent)(unsafe.Pointer(&buf[off]))
			if ev.Mask&syscall.IN_OPEN != 0 {
				n++
			}
		}
	}
}

// A compressed module verified by the lookup is named from the image the
// lookup decompressed to read its build-id: the file is opened, and
// decompressed, once on the whole check path (it was three opens and two
// decompressions: the lookup's, a sniff of its magic bytes, and
// buildidcache.ReadModule's).
func TestCompressedModuleReadOnce(t *testing.T) {
	t.Parallel()
	ko, id, funcs, cache, elfPath := staleCachedModule(t)
	var offs []uint64
	for _, vs := range funcs {
		offs = append(offs, vs[0]+vs[1]/2)
	}
	c := countOpens(t, elfPath)
	host := notLoaded(t)
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"lookup", Options{Lookup: buildidcache.Options{BuildIDDir: cache}, host: host}},
		{"resolver", Options{locator: &resolverLocator{r: buildidcache.New(buildidcache.Options{
			BuildIDDir: cache, DebugDirs: []string{}, DebuginfodURLs: []string{}})}, host: host}},
	} {
		c.opens(t)
		res := moduleSession(t, tc.opts, ko, id, offs)
		d := mustDSO(t, res, ko, Verified)
		got := moduleNames(res, d)
		for fn, vs := range funcs {
			if off := vs[0] + vs[1]/2; got[off] != fn {
				t.Errorf("%s: offset %#x named %q, want %s", tc.name, off, got[off], fn)
			}
		}
		if n := c.opens(t); n != 1 {
			t.Errorf("%s: %s opened %d times on the check path, want once", tc.name, elfPath, n)
		}
	}
}

// The lookup's image of a compressed module is released even when the
// module is named from /proc/kallsyms (loaded now at the recorded
// address) and the image is not needed: the lookup's answers are kept for
// the whole check, and with them any image not taken.
func TestCompressedModuleImageReleased(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ko := filepath.Join(dir, "perfcheck-test.ko")
	id := buildKO(t, ko, modSrc, "")
	cache := t.TempDir()
	cacheModule(t, cache, ko, id)
	host := fakeRunning(t, ko, "perfcheck_test", modBase)
	found, err := (&resolverLocator{r: buildidcache.New(isolated(cache))}).Locate(context.Background(), buildidcache.Query{Path: ko, Kind: dso.Module, BuildID: id})
	if err != nil || found.Identity.Module == nil {
		t.Fatalf("lookup: %v, image %v", err, found != nil && found.Identity.Module != nil)
	}
	s := newTestSession(t, Options{host: host})
	s.update(mmapRec(-1, modBase, 0x4000, 0, ko))
	d := s.dsoOf(s.tracker.Maps(addrspace.KernelPID)[0])
	d.BuildID = id
	s.planModuleNames(d, found)
	if d.modNames != "kallsyms" {
		t.Fatalf("named by %q (%s), want kallsyms", d.modNames, d.Reason)
	}
	if found.Identity.Module != nil || found.Best.Module != nil || found.Verified[0].Module != nil {
		t.Error("the image was kept by the lookup's answer")
	}
}
