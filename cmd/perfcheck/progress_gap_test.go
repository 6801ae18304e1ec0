package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/perfcheck/perfcheck/check"
)

// After reading, the bar shows the second phase (locating and
// symbolizing) instead of sitting at the last read offset.
func TestProgressPhase(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	p := &progress{w: &b, total: 100 << 20, label: "big.data"}
	p.set(98 << 20)
	p.draw(p.off.Load())
	if !strings.Contains(b.String(), " 98%") {
		t.Fatalf("reading bar %q", b.String())
	}
	b.Reset()
	progressCallback(p, false)(check.Progress{Phase: check.PhaseSymbolize, Locations: 1234, DSOs: 7})
	p.draw(p.off.Load())
	got := b.String()
	if !strings.Contains(got, "symbolizing 1234 locations") || !strings.Contains(got, "locating 7 binaries") || strings.Contains(got, "%") {
		t.Errorf("second phase drawn as %q", got)
	}
	if !strings.HasPrefix(got, "\rbig.data: ") || !strings.HasSuffix(got, "\x1b[K") {
		t.Errorf("second phase line %q does not redraw its line", got)
	}
	b.Reset()
	q := &progress{w: &b, total: 100 << 20, label: "big.data"}
	progressCallback(q, true)(check.Progress{Phase: check.PhaseSymbolize, Locations: 1234, DSOs: 7})
	q.draw(0)
	if s := b.String(); strings.Contains(s, "symbolizing") || !strings.Contains(s, "locating 7 binaries") {
		t.Errorf("check (no symbols): %q", s)
	}
	var nilBar *progress
	nilBar.setPhase("x") // no-op, no panic
}
