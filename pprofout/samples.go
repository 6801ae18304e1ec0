package pprofout

import "github.com/perfcheck/perfcheck/check"

// sample is one pprof sample: what one thread (comm, pid, tid) took with
// one stack, each event's sample count and period side by side.
type sample struct {
	stack    *check.Stack
	comm     string
	pid, tid uint32
	values   []int64 // 2 per event: samples, period
}

// threadKey is what tells the samples of one stack apart.
type threadKey struct {
	comm     string
	pid, tid uint32
}

// linearRun is how many samples of one stack are searched one by one
// before they are indexed by a map: most stacks are one thread's.
const linearRun = 8

// eachSample calls fn for each pprof sample of res, in the order of the
// check's aggregates (by stack, then the thread's first aggregate), and
// stops at fn's first error. The *sample and its values are valid only
// until fn returns. Aggregates come ordered by stack first, so only one
// stack's samples are held at a time: what eachSample keeps grows with the
// threads of one stack, not with the profile.
func eachSample(res *check.Result, nev int, fn func(*sample) error) error {
	var (
		run   []sample // the current stack's samples, in order of first aggregate
		vals  []int64  // their values, 2*nev each, in run's order
		index = map[threadKey]int{}
	)
	aggs := res.Aggregates()
	for i := 0; i < len(aggs); {
		id := aggs[i].Stack.ID
		run, vals = run[:0], vals[:0]
		clear(index)
		for ; i < len(aggs) && aggs[i].Stack.ID == id; i++ {
			ag := &aggs[i]
			k := threadKey{ag.Comm, ag.PID, ag.TID}
			n := findThread(run, index, k)
			if n < 0 {
				n = len(run)
				run = append(run, sample{stack: ag.Stack, comm: k.comm, pid: k.pid, tid: k.tid})
				vals = append(vals, make([]int64, 2*nev)...)
				if n >= linearRun {
					index[k] = n
				}
			}
			vals[2*nev*n+2*ag.Event] += int64(ag.Samples)
			vals[2*nev*n+2*ag.Event+1] += int64(ag.Period)
		}
		for n := range run {
			run[n].values = vals[2*nev*n : 2*nev*(n+1)]
			if err := fn(&run[n]); err != nil {
				return err
			}
		}
	}
	return nil
}

// findThread returns the index in run of the sample of thread k, or -1:
// the first linearRun samples are compared, the rest found in index.
func findThread(run []sample, index map[threadKey]int, k threadKey) int {
	for n := range min(len(run), linearRun) {
		s := &run[n]
		if s.pid == k.pid && s.tid == k.tid && s.comm == k.comm {
			return n
		}
	}
	if len(run) <= linearRun {
		return -1
	}
	if n, ok := index[k]; ok {
		return n
	}
	return -1
}
