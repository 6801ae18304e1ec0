package check

import (
	"context"
	"runtime"

	"github.com/perfcheck/perfcheck/perfdata"
)

// Reading a recording and checking its samples are two halves of similar
// cost (decoding and time-ordering the records; resolving and aggregating
// the stacks). Session.feed runs them on two goroutines, so that they
// overlap on two cores: the reader converts records into batches, which
// carry copies of what the perfdata iterator reuses (callchains, user
// registers and stack copies), and the session consumes the batches in the
// same order. The order of everything the session sees is exactly the
// serial one, so results are identical; with one CPU (GOMAXPROCS 1) or
// Options.Workers 1 each batch is consumed as soon as it is full, on the
// caller's goroutine.
//
// A few batches circulate between the two goroutines (feedBatches), so
// memory in flight is bounded (about feedBatches × (feedBatchWords × 8 +
// feedBatchOps × 100) bytes, ~1.5 MB) whatever the size of the recording.
const (
	feedBatches    = 4
	feedBatchOps   = 512
	feedBatchWords = 32 << 10 // callchain entries and user registers
	feedBatchBytes = 1 << 20  // user stack copies (--call-graph dwarf)
)

type feedKind uint8

const (
	feedSample feedKind = iota
	feedMmap
	feedComm
	feedFork
	feedExit
)

// feedOp is one record as the session takes it.
type feedOp struct {
	kind feedKind
	exec bool // feedComm: PERF_RECORD_MISC_COMM_EXEC
	// feedSample: the event with Callchain and User unset; they are
	// chain and the user* ranges of the batch's arenas.
	se                   SampleEvent
	chainLo, chainHi     int32
	userRegsLo, userRegs int32 // in words; userRegs < 0: no user stack
	userStackLo, userLen int32 // in bytes
	userMask             uint64
	m                    *MapEvent // feedMmap
	pid, tid, ppid, ptid int32     // feedComm, feedFork, feedExit
	comm                 string
}

// feedBatch is a run of consecutive records.
type feedBatch struct {
	ops   []feedOp
	words []uint64
	bytes []byte
}

func (b *feedBatch) reset() {
	b.ops = b.ops[:0]
	b.words = b.words[:0]
	b.bytes = b.bytes[:0]
}

// full reports whether the batch should be handed over before a sample
// needing nw words and nb bytes is added.
func (b *feedBatch) full(nw, nb int) bool {
	return len(b.ops) >= feedBatchOps ||
		len(b.ops) > 0 && (len(b.words)+nw > feedBatchWords || len(b.bytes)+nb > feedBatchBytes)
}

// feed reads every record of f in time order (perf's ordered delivery) and
// feeds the session, keeping each sample's addresses in ips when it is not
// nil.
func (s *Session) feed(ctx context.Context, f Recording, ips *sampleIPs) error {
	if runtime.GOMAXPROCS(0) < 2 || s.opts.Workers == 1 {
		var b feedBatch
		return s.read(ctx, f, &b, func(full *feedBatch) *feedBatch {
			s.apply(full, ips)
			full.reset()
			return full
		})
	}
	work := make(chan *feedBatch, feedBatches)
	free := make(chan *feedBatch, feedBatches)
	for range feedBatches {
		free <- new(feedBatch)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for b := range work {
			s.apply(b, ips)
			b.reset()
			free <- b
		}
	}()
	err := s.read(ctx, f, <-free, func(full *feedBatch) *feedBatch {
		work <- full
		return <-free
	})
	close(work)
	<-done
	return err
}

// read converts f's records into batches, handing each full one (and the
// last) to handoff, which returns an empty batch to go on with. It runs on
// its own goroutine when feed pipelines: it touches nothing of the session
// but its options.
func (s *Session) read(ctx context.Context, f Recording, b *feedBatch, handoff func(*feedBatch) *feedBatch) error {
	events := f.Events()
	rs := f.Records(perfdata.RecordsOptions{Ordered: true})
	n := 0
	for rs.Next() {
		if n++; n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				if len(b.ops) > 0 {
					handoff(b)
				}
				return err
			}
			if s.opts.Progress != nil {
				s.opts.Progress(rs.Record().Header().Offset)
			}
		}
		switch r := rs.Record().(type) {
		case *perfdata.Sample:
			var stack []byte
			var regs []uint64
			userOK := r.RegsUserABI == 2 && len(r.StackUser) > 0 && r.EventIndex >= 0 && r.EventIndex < len(events)
			if userOK {
				// A 64-bit user stack copy (--call-graph dwarf).
				stack = r.StackUser[:min(r.StackUserDynSize, uint64(len(r.StackUser)))]
				regs = r.RegsUser
			}
			if b.full(len(r.Callchain)+len(regs), len(stack)) {
				b = handoff(b)
			}
			op := feedOp{kind: feedSample, userRegs: -1}
			op.se = SampleEvent{
				Event:     r.EventIndex,
				PID:       int32(r.PID()),
				TID:       int32(r.TID()),
				CPU:       r.CPU(),
				Time:      r.Time(),
				Period:    r.Period,
				Mode:      r.CPUMode(),
				IP:        r.IP,
				StackUser: len(r.StackUser) > 0,
			}
			if r.Fields&perfdata.SamplePeriod == 0 && r.EventIndex >= 0 && r.EventIndex < len(events) {
				// Without PERF_SAMPLE_PERIOD perf uses attr.sample_period.
				op.se.Period = events[r.EventIndex].Attr.SamplePeriod
			}
			if op.se.Event < 0 {
				op.se.Event = 0
			}
			if r.Callchain != nil {
				op.chainLo = int32(len(b.words))
				b.words = append(b.words, r.Callchain...)
				op.chainHi = int32(len(b.words))
			} else {
				op.chainLo, op.chainHi = -1, -1
			}
			if userOK {
				op.userMask = events[r.EventIndex].Attr.SampleRegsUser
				op.userRegsLo = int32(len(b.words))
				b.words = append(b.words, regs...)
				op.userRegs = int32(len(regs))
				op.userStackLo = int32(len(b.bytes))
				b.bytes = append(b.bytes, stack...)
				op.userLen = int32(len(stack))
			}
			b.ops = append(b.ops, op)
			continue
		case *perfdata.Mmap:
			if b.full(0, 0) {
				b = handoff(b)
			}
			b.ops = append(b.ops, feedOp{kind: feedMmap, m: &MapEvent{
				PID: int32(r.PID), TID: int32(r.TID), Mode: r.CPUMode(),
				Start: r.Addr, Len: r.Len, Pgoff: r.PgOff, Path: r.Filename,
				Time: r.SampleID.Time, Exec: !r.IsData(),
			}})
		case *perfdata.Mmap2:
			e := &MapEvent{
				PID: int32(r.PID), TID: int32(r.TID), Mode: r.CPUMode(),
				Start: r.Addr, Len: r.Len, Pgoff: r.PgOff, Path: r.Filename,
				Time: r.SampleID.Time, Exec: !r.IsData(), Prot: r.Prot, Flags: r.Flags,
			}
			if r.HasBuildID() {
				e.BuildID = append(perfdata.BuildID(nil), r.BuildID...)
			} else {
				e.HasDevIno = true
				e.Maj, e.Min, e.Ino, e.InoGen = r.Maj, r.Min, r.Ino, r.InoGeneration
			}
			if b.full(0, 0) {
				b = handoff(b)
			}
			b.ops = append(b.ops, feedOp{kind: feedMmap, m: e})
		case *perfdata.Comm:
			if b.full(0, 0) {
				b = handoff(b)
			}
			b.ops = append(b.ops, feedOp{kind: feedComm, pid: int32(r.PID), tid: int32(r.TID), comm: r.Comm, exec: r.Exec()})
		case *perfdata.Fork:
			if b.full(0, 0) {
				b = handoff(b)
			}
			b.ops = append(b.ops, feedOp{kind: feedFork, pid: int32(r.PID), ppid: int32(r.PPID), tid: int32(r.TID), ptid: int32(r.PTID)})
		case *perfdata.Exit:
			if b.full(0, 0) {
				b = handoff(b)
			}
			b.ops = append(b.ops, feedOp{kind: feedExit, pid: int32(r.PID), tid: int32(r.TID)})
		}
	}
	if len(b.ops) > 0 {
		handoff(b)
	}
	return rs.Err()
}

// apply feeds a batch's records to the session, in order.
func (s *Session) apply(b *feedBatch, ips *sampleIPs) {
	var us UserStack
	for i := range b.ops {
		op := &b.ops[i]
		switch op.kind {
		case feedSample:
			se := &op.se
			if op.chainLo >= 0 {
				se.Callchain = b.words[op.chainLo:op.chainHi:op.chainHi]
			}
			if op.userRegs >= 0 {
				us = UserStack{Mask: op.userMask,
					Regs:  b.words[op.userRegsLo : op.userRegsLo+op.userRegs : op.userRegsLo+op.userRegs],
					Stack: b.bytes[op.userStackLo : op.userStackLo+op.userLen : op.userStackLo+op.userLen]}
				se.User = &us
			}
			s.Sample(se)
			if ips != nil {
				ips.add(s, se)
			}
		case feedMmap:
			s.Mmap(op.m)
		case feedComm:
			s.Comm(op.pid, op.tid, op.comm, op.exec)
		case feedFork:
			s.Fork(op.pid, op.ppid, op.tid, op.ptid)
		case feedExit:
			s.Exit(op.pid, op.tid)
		}
	}
}
