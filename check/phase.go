package check

import "context"

// A PhaseFunc is told when the check moves from reading the recording to
// the work after it: finding each binary by build-id and symbolizing the
// distinct locations, which on a large recording takes seconds after the
// last byte is read. locations is the number of distinct (DSO, offset)
// pairs the samples touch (all of them are symbolized unless
// Options.NoSymbols), dsos the number of DSOs to locate.
type PhaseFunc func(phase string, locations, dsos int)

// Phase names passed to a PhaseFunc.
const (
	PhaseSymbolize = "symbolize" // reading is done; binaries are located and locations symbolized
)

type phaseKey struct{}

// WithPhase returns a context that makes Analyze, AnalyzeFile and
// AnalyzeReader call fn between reading and symbolizing (a progress bar's
// second phase). Options.Progress covers the reading itself.
func WithPhase(ctx context.Context, fn PhaseFunc) context.Context {
	return context.WithValue(ctx, phaseKey{}, fn)
}

func phaseOf(ctx context.Context) PhaseFunc {
	fn, _ := ctx.Value(phaseKey{}).(PhaseFunc)
	return fn
}
