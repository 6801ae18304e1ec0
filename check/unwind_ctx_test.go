package check

import (
	"context"
	"sync"
	"testing"

	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/dso"
)

// ctxLocator records whether each lookup ran under the analysis' context.
type ctxLocator struct {
	locator
	mu             sync.Mutex
	calls, foreign int
}

type ctxKey struct{}

func (l *ctxLocator) Locate(ctx context.Context, q buildidcache.Query) (*buildidcache.Result, error) {
	l.mu.Lock()
	l.calls++
	if ctx.Value(ctxKey{}) == nil {
		l.foreign++
	}
	l.mu.Unlock()
	return l.locator.Locate(ctx, q)
}

// The lookups --call-graph dwarf unwinding makes while the records are
// read (cfiFor) run under Analyze's context, as judge's do, so cancelling
// an analysis cuts a debuginfod download short; a cancelled lookup is not
// reused as judge's answer.
func TestUnwindLookupsUseAnalyzeContext(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	bin := w.path("busy")
	w.gcc(bin, busyV1, "-fomit-frame-pointer")
	data := w.record("dwarf.data", []string{"--call-graph", "dwarf"}, bin, "20000000")
	loc := &ctxLocator{locator: &resolverLocator{r: buildidcache.New(isolated(w.cache()))}}
	ctx := context.WithValue(context.Background(), ctxKey{}, true)
	res, err := Analyze(ctx, Path(data), withSystemSymbols(Options{locator: loc}))
	if err != nil {
		t.Fatal(err)
	}
	d := mustDSO(t, res, bin, Verified)
	if d.cfiQuery == nil {
		t.Fatalf("unwinding made no lookup for %s: nothing tested", bin)
	}
	if loc.foreign > 0 {
		t.Errorf("%d of %d lookups ran without Analyze's context", loc.foreign, loc.calls)
	}

	// A lookup cancelled while unwinding is asked again by judge.
	s := newTestSession(t, Options{locator: loc})
	d = &DSO{Path: bin, Kind: dso.File, BuildID: d.BuildID, cfiQuery: d.BuildID, cfiErr: context.Canceled}
	s.judge(ctx, d, loc)
	if d.Verdict != Verified {
		t.Errorf("judge reused a cancelled lookup: %v (%s)", d.Verdict, d.Reason)
	}
}
