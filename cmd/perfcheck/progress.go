package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// progress draws a one-line progress bar on stderr while a recording is
// read. It is shown only when stderr is a terminal and the input is big
// enough to take a noticeable time; otherwise every method is a no-op, so
// scripts and tests never see it.
//
// The reading loop only stores the byte offset it reached (an atomic store,
// called by the check package every few thousand records); a separate
// goroutine redraws at most 10 times a second. Nothing is formatted or
// written from the hot path.
type progress struct {
	w     io.Writer
	total int64
	label string

	off  atomic.Int64
	stop chan struct{}
	done sync.WaitGroup

	// phase, once set, replaces the bar: reading is over and the check
	// is locating binaries and symbolizing, which has no byte offset to
	// show; the line says what and for how long.
	phase      atomic.Pointer[string]
	phaseStart atomic.Int64 // unix nanoseconds
}

// progressMinSize is the input size below which no bar is drawn: smaller
// files are read in well under a second.
const progressMinSize = 16 << 20

// newProgress returns a progress bar for reading total bytes of name, or nil
// when none should be drawn (stderr not a terminal, input small or of
// unknown size). A nil *progress is valid and does nothing.
func newProgress(stderr io.Writer, name string, total int64) *progress {
	f, ok := terminalFile(stderr)
	if !ok || total < progressMinSize {
		return nil
	}
	return startProgress(f, name, total)
}

// startProgress starts drawing unconditionally (tests call it with a buffer).
func startProgress(w io.Writer, name string, total int64) *progress {
	p := &progress{w: w, total: total, label: name, stop: make(chan struct{})}
	p.done.Add(1)
	go p.loop()
	return p
}

// set records the byte offset reached (progressCallback calls it for the
// check's Options.Progress).
func (p *progress) set(off int64) {
	if p == nil {
		return
	}
	// Ordered delivery hands records back slightly out of file order;
	// keep the furthest offset so the bar never goes backwards.
	for {
		cur := p.off.Load()
		if off <= cur || p.off.CompareAndSwap(cur, off) {
			return
		}
	}
}

func (p *progress) loop() {
	defer p.done.Done()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.draw(p.off.Load())
		}
	}
}

// setPhase switches the bar to its second phase, described by text (e.g.
// "symbolizing 12345 locations").
func (p *progress) setPhase(text string) {
	if p == nil {
		return
	}
	p.phaseStart.Store(time.Now().UnixNano())
	p.phase.Store(&text)
}

func (p *progress) draw(off int64) {
	if ph := p.phase.Load(); ph != nil {
		label := p.label
		if len(label) > 40 {
			label = "…" + label[len(label)-39:]
		}
		el := time.Duration(time.Now().UnixNano() - p.phaseStart.Load()).Seconds()
		fmt.Fprintf(p.w, "\r%s: read %s; %s… %.0fs\x1b[K", label, mib(p.total), *ph, el)
		return
	}
	if off > p.total {
		off = p.total
	}
	const width = 30
	frac := float64(off) / float64(p.total)
	n := int(frac * width)
	label := p.label
	if len(label) > 40 {
		label = "…" + label[len(label)-39:]
	}
	fmt.Fprintf(p.w, "\r%s [%s%s] %3.0f%% %s/%s", label, strings.Repeat("=", n), strings.Repeat(" ", width-n),
		frac*100, mib(off), mib(p.total))
}

// finish stops the bar and erases its line, so the report starts on a
// clean line.
func (p *progress) finish() {
	if p == nil {
		return
	}
	close(p.stop)
	p.done.Wait()
	fmt.Fprint(p.w, "\r\x1b[K")
}

func mib(n int64) string { return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20)) }
