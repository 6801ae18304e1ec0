package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/perfcheck/perfcheck/internal/fixtures"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestScriptPrintsPipeAsItComes: perfcheck script - on a pipe-format
// stream prints samples while the stream is still being written, and what
// it prints in the end is what script prints for the same bytes in a
// file. The stream is the committed pipe.data with its samples repeated in
// rounds (fixtures.RepeatSamples); the test writes its first two thirds,
// waits for output, and only then writes the rest.
func TestScriptPrintsPipeAsItComes(t *testing.T) {
	t.Parallel()
	rec := fixtures.RepeatSamples(t, filepath.Join(fixturesDir, "pipe.data"), 300)
	data, err := os.ReadFile(rec)
	require.NoError(t, err)
	cache := t.TempDir()
	var whole bytes.Buffer
	require.Equal(t, exitOK, run([]string{"script", "--buildid-dir", cache, rec}, nil, &whole, io.Discard))

	pr, pw := io.Pipe()
	out := &signalWriter{first: make(chan struct{})}
	done := make(chan int)
	go func() { done <- run([]string{"script", "--buildid-dir", cache, "-"}, pr, out, io.Discard) }()
	cut := len(data) * 2 / 3
	_, err = pw.Write(data[:cut])
	require.NoError(t, err)
	select {
	case <-out.first:
	case code := <-done:
		t.Fatalf("script exited (%d) before the stream ended", code)
	case <-time.After(2 * time.Minute):
		t.Fatal("nothing printed two minutes after two thirds of the stream were written")
	}
	_, err = pw.Write(data[cut:])
	require.NoError(t, err)
	require.NoError(t, pw.Close())
	assert.Equal(t, exitOK, <-done)
	assert.True(t, bytes.Equal(whole.Bytes(), out.bytes()), "the live output differs from the file's")
}

// signalWriter keeps what is written and closes first at the first write.
type signalWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	first chan struct{}
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.buf.Len() == 0 && len(p) > 0 {
		close(w.first)
	}
	return w.buf.Write(p)
}

func (w *signalWriter) bytes() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Bytes()
}
