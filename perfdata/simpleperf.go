package perfdata

// SimpleperfCallchain is simpleperf's SIMPLE_PERF_RECORD_CALLCHAIN
// (32775, CallChainRecord in system/extras/simpleperf/record.h): the user
// callchain simpleperf unwound offline from the stack copy of the sample
// of thread TID at Time, written before that sample. simpleperf writes
// each chain twice: as unwound (ChainOriginalOffline) and after its
// CallChainJoiner completed it with the chains of earlier samples of the
// thread (ChainJoinedOffline). Records joins the joined one into its
// sample as simpleperf's record command does (UpdateUserCallChain): it
// replaces the sample's user callchain when it is longer, and leaves it
// otherwise; Records.Callchains counts what was used and skipped.
type SimpleperfCallchain struct {
	RecordHeader
	PID, TID  uint32
	ChainType uint64 // ChainOriginalOffline, ChainJoinedOffline, ...
	Time      uint64 // the sample's
	IPs       []uint64
	SPs       []uint64 // the stack pointer at each of IPs
}

// Chain types of SimpleperfCallchain (CallChainJoiner::ChainType in
// system/extras/simpleperf/CallChainJoiner.h).
const (
	ChainOriginalOffline uint64 = 0
	ChainOriginalRemote  uint64 = 1
	ChainJoinedOffline   uint64 = 2
	ChainJoinedRemote    uint64 = 3
)

func (p *parser) decodeSimpleperfCallchain(d *decoder, h RecordHeader) *SimpleperfCallchain {
	x := &p.ext.spChain
	ips, sps := x.IPs, x.SPs
	*x = SimpleperfCallchain{RecordHeader: h}
	x.PID = d.u32()
	x.TID = d.u32()
	x.ChainType = d.u64()
	x.Time = d.u64()
	n := d.u64()
	if d.err == nil && n > uint64(d.remaining())/16 {
		d.fail(errCount, "%d callchain entries and their stack pointers cannot fit in %d bytes", n, d.remaining())
	}
	x.IPs = d.u64s(ips, n, "callchain")
	x.SPs = d.u64s(sps, n, "stack pointers")
	return x
}

// Callchains counts what Records did with simpleperf's CALLCHAIN records
// (SimpleperfCallchain) it has read.
type Callchains struct {
	// Joined counts the joined chains met by their sample (the next one
	// of the same process, thread and time): used for its stack.
	Joined int
	// Lengthened counts the Joined chains longer than the user
	// callchain their sample held, which they replaced; the others held
	// nothing the sample lacked.
	Lengthened int
	// Originals counts the chains as unwound, before joining: skipped,
	// the joined ones supersede them.
	Originals int
	// Unmatched counts the joined chains no sample has met (so far: a
	// chain written after its sample, or with no sample, stays here):
	// skipped.
	Unmatched int
}

// Callchains returns the counts of simpleperf's CALLCHAIN records read so
// far (all of them once Next has returned false). Every count is zero
// for a recording perf wrote.
func (rs *Records) Callchains() Callchains {
	c := rs.p.join.counts
	c.Unmatched = len(rs.p.join.pending)
	return c
}

// chainKey identifies the sample a joined chain belongs to.
type chainKey struct {
	pid, tid uint32
	time     uint64
}

// callchainJoin holds simpleperf's joined chains until their samples come.
type callchainJoin struct {
	pending map[chainKey][]uint64
	words   int // in pending
	counts  Callchains
	buf     []uint64 // a lengthened sample's Callchain
}

// maxPendingWords bounds the addresses of the joined chains kept for
// samples still to come (32 MiB): simpleperf writes each chain just
// before its sample, and a time-ordered reading holds those of one round
// at most; past the bound a chain is counted as unmatched.
const maxPendingWords = 1 << 22

// take records what r, just decoded, means for the samples to come.
func (j *callchainJoin) take(r *SimpleperfCallchain) {
	switch r.ChainType {
	case ChainJoinedOffline, ChainJoinedRemote:
	default:
		j.counts.Originals++
		return
	}
	if j.pending == nil {
		j.pending = make(map[chainKey][]uint64)
	}
	k := chainKey{r.PID, r.TID, r.Time}
	old := j.pending[k]
	if j.words-len(old)+len(r.IPs) > maxPendingWords {
		j.counts.Unmatched++
		return
	}
	j.words += len(r.IPs) - len(old)
	j.pending[k] = append(old[:0], r.IPs...)
}

// apply gives s the joined chain written for it, if any, as simpleperf's
// SampleRecord::UpdateUserCallChain does: the callchain up to its
// PERF_CONTEXT_USER marker (the kernel part) is kept, and the user part
// becomes the joined chain when that makes the callchain longer. A sample
// read without its fields (RecordsOptions.SampleHeadersOnly) only counts
// it.
func (j *callchainJoin) apply(s *Sample, arrays bool) {
	k := chainKey{s.PID(), s.TID(), s.Time()}
	ips, ok := j.pending[k]
	if !ok {
		return
	}
	delete(j.pending, k)
	j.words -= len(ips)
	j.counts.Joined++
	if !arrays {
		return
	}
	kernel := len(s.Callchain)
	for i, ip := range s.Callchain {
		if ip == ContextUser {
			kernel = i
			break
		}
	}
	if kernel+1+len(ips) <= len(s.Callchain) {
		return
	}
	j.counts.Lengthened++
	j.buf = append(append(append(j.buf[:0], s.Callchain[:kernel]...), ContextUser), ips...)
	s.Callchain = j.buf
}
