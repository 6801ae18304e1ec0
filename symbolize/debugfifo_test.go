//go:build linux

package symbolize

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// A debug-file locator that answers with a FIFO (a path swapped after its
// stat, or a hostile --debug-dir): loading the binary's DWARF must not
// block on the open, and the refusal is a warning naming the file.
func TestDebugFileFIFODoesNotBlock(t *testing.T) {
	t.Parallel()
	bin := "/usr/bin/true"
	fifo := filepath.Join(t.TempDir(), "debug")
	fixtures.Mkfifo(t, fifo)
	b, err := Open(bin, Options{DebugFile: func(DebugQuery) (string, error) { return fifo, nil }})
	if err != nil {
		t.Skip(err)
	}
	defer b.Close()
	done := make(chan []string, 1)
	go func() { done <- b.Warnings() }()
	select {
	case w := <-done:
		if b.DebugFile() != "" {
			t.Errorf("debug file %q accepted", b.DebugFile())
		}
		if !strings.Contains(strings.Join(w, "\n"), fifo) {
			t.Errorf("warnings %q do not name the refused %s", w, fifo)
		}
	case <-time.After(30 * time.Second):
		// Unblock the open so the test binary can end.
		if f, err := openFIFOWriter(fifo); err == nil {
			f.Close()
		}
		t.Fatal("loading the debug file blocked on a FIFO")
	}
}

func openFIFOWriter(p string) (interface{ Close() error }, error) {
	fd, err := syscall.Open(p, syscall.O_WRONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	return closer(fd), nil
}

type closer int

func (c closer) Close() error { return syscall.Close(int(c)) }
