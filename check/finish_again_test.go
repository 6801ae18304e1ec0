package check

import (
	"context"
	"testing"

	"github.com/perfcheck/perfcheck/perfdata"
)

// TestFinishAgainAfterCancel: Finish with a cancelled context fails; a
// second Finish on the same session must give the counts one Finish gives.
func TestFinishAgainAfterCancel(t *testing.T) {
	t.Parallel()
	feed := func(s *session) {
		s.update(commRec(7, 7, "prog", true))
		s.update(mmapRec(7, 0x10000, 0x1000, 0, "/nonexistent/lib.so"))
		for range 5 {
			s.sample(&sampleEvent{PID: 7, TID: 7, Mode: perfdata.CPUModeUser, IP: 0x10100, Period: 1})
		}
	}
	ref := newTestSession(t, Options{NoSymbols: true})
	feed(ref)
	want, err := ref.finish(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s := newTestSession(t, Options{NoSymbols: true})
	feed(s)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.finish(ctx); err == nil {
		t.Fatal("no error from a cancelled Finish")
	}
	got, err := s.finish(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got.TrustedSamples+got.UntrustedAnySamples != want.TrustedSamples+want.UntrustedAnySamples {
		t.Errorf("samples by trust %d, want %d", got.TrustedSamples+got.UntrustedAnySamples, want.TrustedSamples+want.UntrustedAnySamples)
	}
	for i, d := range got.DSOs {
		if d.HitsLeaf != want.DSOs[i].HitsLeaf || d.HitsAny != want.DSOs[i].HitsAny {
			t.Errorf("%s: leaf %d any %d after a cancelled Finish, want %d %d", d.Path, d.HitsLeaf, d.HitsAny, want.DSOs[i].HitsLeaf, want.DSOs[i].HitsAny)
		}
	}
	var n uint64
	for _, a := range got.Aggregates() {
		n += a.Samples
	}
	if n != 5 {
		t.Errorf("aggregates hold %d samples, want 5", n)
	}
}
