package check

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/internal/fixtures"
	"github.com/perfcheck/perfcheck/perfdata"
	"github.com/perfcheck/perfcheck/symbolize"
	"github.com/perfcheck/perfcheck/unwind"
)

// A hostile recording (or --symfs tree) may name a FIFO that exists on the
// host. Opening one for reading blocks until a writer comes, so every open
// of a recorded path must refuse it instead of hanging the check. These
// tests run the work in a goroutine and fail, rather than hang the suite,
// when it has not returned after a generous wait: the wait is a guard
// against a regression, not a measure of speed.

// mkfifo makes a FIFO at dir/name.
func mkfifo(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	fixtures.Mkfifo(t, p)
	return p
}

// hangGuard is how long mustReturn waits: far beyond what the work takes
// (milliseconds) even under -race on a loaded machine.
var hangGuard = 30 * time.Second

// mustReturn runs f and fails the test if it is still blocked after
// hangGuard; it then unblocks a reader waiting in open(2) on fifo, so the
// goroutine ends with the test.
func mustReturn(t *testing.T, fifo, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(hangGuard):
		t.Errorf("%s blocked on the FIFO %s", what, fifo)
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		<-done
	}
}

// A module recorded without a build-id whose path is a FIFO: judge must
// not plan to name it from the "ko" there, and Finish must return.
func TestFinishModulePathIsFIFO(t *testing.T) {
	t.Parallel()
	ko := mkfifo(t, t.TempDir(), "evil.ko")
	finishNotSymbolized(t, ko, notLoaded(t),
		mmapRec(-1, modBase, 0x4000, 0, ko),
		&sampleEvent{PID: 7, TID: 7, Time: 1, Period: 1, Mode: perfdata.CPUModeKernel, IP: modBase + 0x10})
}

// A user DSO recorded without a build-id whose path is a FIFO.
func TestFinishFilePathIsFIFO(t *testing.T) {
	t.Parallel()
	p := mkfifo(t, t.TempDir(), "evil.so")
	finishNotSymbolized(t, p, hostRoots{},
		mmapRec(7, 0x400000, 0x4000, 0, p),
		&sampleEvent{PID: 7, TID: 7, Time: 1, Period: 1, Mode: perfdata.CPUModeUser, IP: 0x400010})
}

// finishNotSymbolized feeds one mapping of the FIFO at fifo and one sample
// in it to a session with host as /sys and /proc: Finish must return, and
// not symbolize the FIFO.
func finishNotSymbolized(t *testing.T, fifo string, host hostRoots, m perfdata.Record, smp *sampleEvent) {
	t.Helper()
	var res *Result
	var err error
	mustReturn(t, fifo, "Finish", func() {
		s := newTestSession(t, Options{Lookup: buildidcache.Options{BuildIDDir: t.TempDir()}, host: host})
		s.update(m)
		s.sample(smp)
		res, err = s.finish(context.Background())
	})
	if err != nil {
		t.Fatal(err)
	}
	if res == nil {
		return
	}
	for _, d := range res.DSOs {
		if d.Path == fifo && d.Symbolized {
			t.Errorf("%s: a FIFO is to be symbolized (%v: %s)", d.Path, d.Verdict, d.Reason)
		}
	}
}

// Each reader of a recorded path refuses a FIFO on its own: the checks
// before them (judge's, the locator's) stat the path, and the file there
// can be swapped between that stat and the open.
func TestOpenersRefuseFIFO(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, open := range map[string]func(p string) error{
		"unwind.ReadTable": func(p string) error { _, err := unwind.ReadTable(p, nil); return err },
		"symbolize.ReadModule": func(p string) error {
			_, err := symbolize.ReadModule(p, nil, 0x1000, nil)
			return err
		},
		"symbolize.ReadSegments": func(p string) error { _, err := symbolize.ReadSegments(p, nil); return err },
		"symbolize.ReadLoadedModule": func(p string) error {
			_, err := symbolize.ReadLoadedModule(p, "m", 0, 0x1000)
			return err
		},
		"symbolize.Open": func(p string) error {
			b, err := symbolize.Open(p, symbolize.Options{})
			if err == nil {
				b.Close()
			}
			return err
		},
	} {
		fifo := mkfifo(t, dir, name)
		var err error
		mustReturn(t, fifo, name, func() { err = open(fifo) })
		if err == nil {
			t.Errorf("%s accepted a FIFO", name)
		}
	}
}
