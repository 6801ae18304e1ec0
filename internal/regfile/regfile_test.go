package regfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/perfcheck/perfcheck/internal/fixtures"
)

func TestOpen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := Open(dir); !errors.Is(err, ErrNotRegular) {
		t.Errorf("a directory: %v, want ErrNotRegular", err)
	}
	fifo := filepath.Join(dir, "fifo")
	fixtures.Mkfifo(t, fifo)
	done := make(chan error, 1)
	go func() { _, err := Open(fifo); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrNotRegular) {
			t.Errorf("a FIFO: %v, want ErrNotRegular", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("opening a FIFO with no writer blocked")
	}
}
