package check

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/perfcheck/perfcheck/perfdata"
	"github.com/perfcheck/perfcheck/unwind"
)

// A sample's frames can be named, and trusted, only once every DSO has its
// verdict, and a verdict can depend on the recording's last records (a
// replacement mapped late, a build-id table after the samples). So a
// command printing every sample (perfcheck script) reads the recording
// twice: Analyze checks it, keeping nothing per sample, then EachSample
// reads it again and hands each sample over with its resolved stack as it
// is read. Memory stays bounded by what is distinct (locations, DSOs),
// whatever the number of samples. A stream cannot be read twice, so with
// Options.Replay Analyze first copies one whole into a temporary file
// (disk, not memory, grows with the input), unless it is a regular file
// it can read again in place.

// replaySource is what EachSample reads again: the recording and the
// session that checked it, whose DSOs and locations the second reading
// finds again.
type replaySource struct {
	s    *session
	name string
	// open returns the recording from its beginning.
	open func() (recording, error)
	// closer releases what open reads (the file kept open, the spool);
	// nil when the caller owns it.
	closer io.Closer
}

// spoolStream copies the stream r whole to a temporary file, removed from
// its directory at once (nothing is left behind however the process
// ends), and opens the copy as a file: seekable, so that it can be read
// twice, and its features are known before its samples.
func spoolStream(r io.Reader) (*perfdata.File, *os.File, error) {
	spool, err := os.CreateTemp("", "perfcheck-stream-*")
	if err != nil {
		return nil, nil, fmt.Errorf("copy of the stream for a second reading: %w", err)
	}
	os.Remove(spool.Name())
	n, err := io.Copy(spool, r)
	if err != nil {
		spool.Close()
		return nil, nil, fmt.Errorf("copy of the stream for a second reading (in %s): %w", os.TempDir(), err)
	}
	f, err := perfdata.NewFile(spool, n)
	if err != nil {
		spool.Close()
		return nil, nil, err
	}
	return f, spool, nil
}

// EachSample reads the recording again and calls fn for every sample the
// check counted (those Options.Filter keeps), in delivery order (perf's
// time order), its frames resolved into the check's locations. The
// *Sample, its Stack, IPs and Record are reused: valid only until fn
// returns. It needs
// Options.Replay; an error from fn stops the reading and is returned. A
// partial result replays the records before its read error, and then
// returns nil: the error is the Result's ReadErr.
func (r *Result) EachSample(ctx context.Context, fn func(*Sample) error) error {
	if r.replay == nil {
		return errors.New("check: EachSample needs Options.Replay")
	}
	rec, err := r.replay.open()
	if err != nil {
		return err
	}
	n, err := r.replay.s.replay(ctx, rec, r, fn)
	if err != nil {
		if errors.Is(err, errStop) {
			return err.(stopError).err
		}
		if r.Partial && ctx.Err() == nil {
			return nil
		}
		return nameError(r.replay.name, err)
	}
	if n != r.Samples {
		return fmt.Errorf("%s: %d samples on the second reading, %d on the first: the recording changed while it was read", r.replay.name, n, r.Samples)
	}
	return nil
}

// Close releases what Options.Replay kept for EachSample: the recording's
// file, or the copy of a stream, and the kernel's symbols
// (DSO.KernelSymbol). A Result without it has nothing to close.
func (r *Result) Close() error {
	for _, d := range r.DSOs {
		if d.kernelNames != nil {
			d.kernelNames.Close()
			d.kernelNames = nil
		}
	}
	if r.replay == nil || r.replay.closer == nil {
		return nil
	}
	err := r.replay.closer.Close()
	r.replay.closer = nil
	return err
}

// errStop marks the error of EachSample's fn, which is returned as is.
var errStop = errors.New("stopped by the caller")

type stopError struct{ err error }

func (e stopError) Error() string   { return e.err.Error() }
func (e stopError) Is(t error) bool { return t == errStop }

// replay is the second reading: the address spaces are rebuilt from
// nothing, so that each sample resolves under the maps of its time, into
// the locations the first reading interned. It returns the
// number of samples handed to fn.
func (s *session) replay(ctx context.Context, f recording, res *Result, fn func(*Sample) error) (uint64, error) {
	defer s.unwindContext(ctx)()
	s.replaying = true
	defer func() { s.replaying = false }()
	s.resetMaps()
	var (
		smp  Sample
		ss   = newSampleStack()
		refs []int32
		ips  []uint64
		brs  []BranchLocation
		n    uint64
	)
	feats := f.Features() // one value, which a stream fills as it goes
	err := s.readSerial(ctx, f, func(se *sampleEvent, r *perfdata.Sample) error {
		pg, kg := s.tracker.Generation(se.PID)
		refs = s.locsOf(se, s.userFrames(se), pg, kg, refs[:0])
		if len(s.locs) > len(res.Locations) {
			return fmt.Errorf("sample at byte offset %d: an address the first reading did not see: the recording changed while it was read", r.Header().Offset)
		}
		ips = s.sampleAddrs(se, len(refs), ips[:0])
		addrLoc, ok := s.replayAddr(se, r.Addr, res)
		if !ok {
			return fmt.Errorf("sample at byte offset %d: a data address the first reading did not see: the recording changed while it was read", r.Header().Offset)
		}
		if brs, ok = s.replayBranches(se, r, res, brs[:0]); !ok {
			return fmt.Errorf("sample at byte offset %d: a branch address the first reading did not see: the recording changed while it was read", r.Header().Offset)
		}
		smp = Sample{Event: se.Event, PID: se.PID, TID: se.TID, CPU: se.CPU, Time: se.Time, Period: se.Period,
			Comm: s.tracker.ThreadComm(se.TID), Stack: ss.of(refs, res.Locations), IPs: ips, Addr: r.Addr, AddrLocation: addrLoc, Branches: brs, Record: r, Events: f.Events(), Features: feats}
		n++
		if err := fn(&smp); err != nil {
			return stopError{err}
		}
		return nil
	})
	return n, err
}

// readSerial reads f's records in time order one at a time, as the first
// reading's batches deliver them (feed.go), and hands each sample the
// filter keeps to fn, with its record, valid until fn returns; an error
// from fn stops the reading and is returned. A stream's build-id records
// prove binaries as they pass, as in the first reading.
func (s *session) readSerial(ctx context.Context, f recording, fn func(*sampleEvent, *perfdata.Sample) error) error {
	_, stream := f.(*perfdata.Reader)
	rs := f.Records(perfdata.RecordsOptions{Ordered: true})
	var (
		se sampleEvent
		us unwind.UserStack
	)
	for i := 0; rs.Next(); i++ {
		if i%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		switch r := rs.Record().(type) {
		case *perfdata.Sample:
			// A stream describes its events (attrs, names) as it
			// goes: they are asked per sample.
			replayEvent(&se, &us, r, f.Events())
			if s.filter != nil && !s.filter.keep(s, &se) {
				continue
			}
			if err := fn(&se, r); err != nil {
				return err
			}
		case *perfdata.BuildIDRecord:
			if stream && !s.replaying {
				s.streamBuildID(r.Entry)
			}
		default:
			s.update(r)
		}
	}
	return rs.Err()
}

// sampleStack is the Stack EachSample hands over, reused from sample to
// sample: the Result keeps no stacks (the first reading counted samples by
// their DSO signature), so each sample's is made of its locations as it is
// read.
type sampleStack struct {
	set stackSet
	st  Stack
}

func newSampleStack() *sampleStack {
	ss := new(sampleStack)
	ss.set.once.Do(func() {}) // its ptrs are set per sample, never expanded
	return ss
}

// of returns the stack of the locations refs (the session's location ids,
// which index locs), leaf first, with its trust.
func (ss *sampleStack) of(refs []int32, locs []*Location) *Stack {
	ptrs := ss.set.ptrs[:0]
	ss.st = Stack{Trusted: true, LeafTrusted: true, n: int32(len(refs)), set: &ss.set}
	for i, r := range refs {
		l := locs[r]
		ptrs = append(ptrs, l)
		if !l.Trusted() {
			ss.st.Trusted = false
			ss.st.LeafTrusted = ss.st.LeafTrusted && i > 0
		}
	}
	ss.set.ptrs = ptrs
	return &ss.st
}

// resetMaps forgets the address spaces, and what was keyed by their
// generations, before the recording is read again; the DSOs and locations
// stay, so the second reading finds them again.
func (s *session) resetMaps() {
	s.tracker = s.newTracker()
	s.mapDSO = s.mapDSO[:0]
	s.fm = nil
	s.locMemo = [len(s.locMemo)]locMemo{}
}

// replayEvent fills e from the sample record r as the first reading's
// batches carry it (feed.go's addSample and apply), with the user stack
// copy in us.
func replayEvent(e *sampleEvent, us *unwind.UserStack, r *perfdata.Sample, events []perfdata.Event) {
	*e = sampleEvent{Event: max(r.EventIndex, 0), PID: r.PID(), TID: r.TID(), CPU: r.CPU(), Time: r.Time(),
		Period: samplePeriod(r, events), Mode: r.CPUMode(), IP: r.IP, Callchain: r.Callchain, StackUser: len(r.StackUser) > 0}
	if mask, regs, stack, ok := userStack(r, events); ok {
		*us = unwind.UserStack{Mask: mask, Regs: regs, Stack: stack}
		e.User = us
	}
}

// sampleAddrs appends to f the runtime address of each of the n
// locations of e's resolved stack, in its order: the sample IP, the
// callchain frames (sampleEvent.chainFrames, as stackOf resolves them),
// then the user frames unwound from a stack copy, which the session's
// buffer holds for the sample stackOf just resolved.
func (s *session) sampleAddrs(e *sampleEvent, n int, f []uint64) []uint64 {
	f = append(f, e.IP)
	for _, ip := range e.chainFrames {
		f = append(f, ip)
	}
	if rem := n - len(f); rem > 0 && e.User != nil {
		u := s.userBuf
		if len(u) > rem {
			u = u[len(u)-rem:]
		}
		f = append(f, u...)
	}
	for len(f) < n {
		f = append(f, 0) // not expected: an address that could not be recovered
	}
	return f[:n]
}
