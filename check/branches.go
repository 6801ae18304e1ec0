package check

import (
	"context"

	"github.com/perfcheck/perfcheck/perfdata"
)

// BranchLocation is where one entry of a sample's branch stack leads
// from and to, each as perf script -F brstacksym finds it
// (thread__find_symbol_fb in tools/perf/util/event.c): in the address
// space of the sample's CPU mode, else in the one the address belongs
// to, named from the DSO's code and data symbols when its verdict
// allows.
type BranchLocation struct {
	From, To *Location
}

// With Options.Branches, the first reading keeps where every branch
// address lies (resolveAddr), so that the DSOs they lie in are judged and
// the locations named before the second reading finds them again, as it
// does the addresses of Sample.AddrLocation. The reader copies each
// sample's addresses into its batch (appendBranchAddrs), because the
// reader's storage is reused before the batch is applied.

// appendBranchAddrs appends to b the number of r's branch entries, then
// the from and to address of each.
func appendBranchAddrs(b []uint64, r *perfdata.Sample) []uint64 {
	b = append(b, uint64(len(r.Branches)))
	for _, e := range r.Branches {
		b = append(b, e.From, e.To)
	}
	return b
}

// nextBranchAddrs returns the addresses appendBranchAddrs put in b at at,
// and where the next sample's begin.
func nextBranchAddrs(b []uint64, at int) (addrs []uint64, next int) {
	if at >= len(b) {
		return nil, at
	}
	end := at + 1 + 2*int(b[at])
	return b[at+1 : end], end
}

// resolveBranches keeps where each of e's branch addresses lies.
func (s *session) resolveBranches(e *sampleEvent, addrs []uint64) {
	for _, a := range addrs {
		s.resolveAddr(e, a)
	}
}

// foundAddr returns the location of addr, one of e's addresses the first
// reading located; ok is false when it did not (the recording changed).
func (s *session) foundAddr(e *sampleEvent, addr uint64, res *Result) (_ *Location, ok bool) {
	i, ok := s.addrIdx[s.addrRef(e, addr)]
	if !ok || int(i) >= len(res.addrLocs) {
		return nil, false
	}
	return &res.addrLocs[i], true
}

// replayBranches appends to out the locations of r's branch entries,
// found again among those the first reading located; ok is false when
// one is not there.
func (s *session) replayBranches(e *sampleEvent, r *perfdata.Sample, res *Result, out []BranchLocation) (_ []BranchLocation, ok bool) {
	if !s.opts.Branches {
		return out, true
	}
	for _, b := range r.Branches {
		from, okFrom := s.foundAddr(e, b.From, res)
		to, okTo := s.foundAddr(e, b.To, res)
		if !okFrom || !okTo {
			return out, false
		}
		out = append(out, BranchLocation{From: from, To: to})
	}
	return out, true
}

// branchLocations appends to out the locations of r's branch entries,
// each DSO judged when first met, as addrLocation does.
func (lv *live) branchLocations(ctx context.Context, s *session, e *sampleEvent, r *perfdata.Sample, out []BranchLocation) []BranchLocation {
	if !s.opts.Branches {
		return out
	}
	for _, b := range r.Branches {
		out = append(out, BranchLocation{From: lv.locateAddr(ctx, s, e, b.From), To: lv.locateAddr(ctx, s, e, b.To)})
	}
	return out
}
