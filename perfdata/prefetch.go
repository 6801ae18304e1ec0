package perfdata

import (
	"io"
	"runtime"
)

// prefetcher reads a large input ahead on its own goroutine, so that the
// read system calls (and the kernel's copy out of the page cache) run on
// another core while the caller decodes the previous blocks. Blocks
// circulate between two channels: at most prefetchBlocks are in flight.
type prefetcher struct {
	full chan prefetchBlock
	free chan []byte
	done chan struct{}
	cur  []byte // unread part of the current block
	buf  []byte // the current block, returned to free when used up
	err  error  // the input's error, returned once cur is used up
}

type prefetchBlock struct {
	b   []byte
	err error
}

const (
	prefetchBlock1 = 1 << 20 // bytes per read
	prefetchBlocks = 3
)

// prefetchMin is the smallest input worth a goroutine.
const prefetchMin = 16 << 20

func newPrefetcher(r io.Reader) *prefetcher {
	p := &prefetcher{
		full: make(chan prefetchBlock, prefetchBlocks),
		free: make(chan []byte, prefetchBlocks),
		done: make(chan struct{}),
	}
	for range prefetchBlocks {
		p.free <- make([]byte, prefetchBlock1)
	}
	go p.run(r, p.full, p.free, p.done)
	return p
}

// run reads blocks until the input ends or fails, or done is closed. It
// does not refer to p, so that an abandoned iterator can be collected
// (its cleanup closes done).
func (*prefetcher) run(r io.Reader, full chan<- prefetchBlock, free <-chan []byte, done <-chan struct{}) {
	for {
		var b []byte
		select {
		case b = <-free:
		case <-done:
			return
		}
		n, err := io.ReadFull(r, b)
		if err == io.ErrUnexpectedEOF {
			err = io.EOF
		}
		select {
		case full <- prefetchBlock{b[:n], err}:
		case <-done:
			return
		}
		if err != nil {
			return
		}
	}
}

func (p *prefetcher) Read(b []byte) (int, error) {
	for len(p.cur) == 0 {
		if p.buf != nil {
			p.free <- p.buf[:cap(p.buf)]
			p.buf = nil
		}
		if p.err != nil {
			return 0, p.err
		}
		blk := <-p.full
		p.buf, p.cur, p.err = blk.b, blk.b, blk.err
	}
	n := copy(b, p.cur)
	p.cur = p.cur[n:]
	return n, nil
}

// stop ends the goroutine; Read must not be called after it.
func (p *prefetcher) stop() {
	select {
	case <-p.done:
	default:
		close(p.done)
	}
}

// readsAhead tells whether st is read ahead: its size must be known.
func (t readTuning) readsAhead(st *stream) bool {
	switch t.readAhead {
	case readAheadAlways:
		return st.limit >= 0
	case readAheadNever:
		return false
	}
	return st.limit >= 0 && st.limit-st.pos >= prefetchMin
}

// prefetchStreams puts a prefetcher under each large stream of a
// time-ordered rs and arranges for them to stop when rs is done with or
// collected. Time-ordered readers (perfcheck check, top, pprof) do much
// work per record, which the reading then overlaps; a file-order count
// (perfcheck stats) does little, and the extra copy would cost more than
// it saves.
func prefetchStreams(rs *Records) {
	if !rs.ordered {
		return
	}
	var ps []*prefetcher
	for _, st := range rs.streams {
		if rs.tune.readsAhead(st) {
			p := newPrefetcher(st.r)
			st.r = p
			ps = append(ps, p)
		}
	}
	if len(ps) == 0 {
		return
	}
	stop := func(ps []*prefetcher) {
		for _, p := range ps {
			p.stop()
		}
	}
	rs.stopPrefetch = func() { stop(ps) }
	runtime.AddCleanup(rs, stop, ps)
}
