package main

import (
	"bytes"
	"fmt"
	"runtime/debug"
	"strings"
	"testing"
)

// gcPercentReader records the garbage collector's target percentage each
// time it is read from.
type gcPercentReader struct {
	r    *strings.Reader
	seen []int
}

func (g *gcPercentReader) Read(p []byte) (int, error) {
	pct := debug.SetGCPercent(100)
	debug.SetGCPercent(pct)
	g.seen = append(g.seen, pct)
	return g.r.Read(p)
}

// TestSymbolizeGCPercent checks that a batch runs with the collector at
// symbolizeGCPercent and restores it afterwards, and that a GOGC the user
// set is left alone.
func TestSymbolizeGCPercent(t *testing.T) {
	bin, work := buildSymbolizeProg(t)
	before := debug.SetGCPercent(100)
	debug.SetGCPercent(before)
	for _, tc := range []struct {
		gogc string
		want int
	}{{"", symbolizeGCPercent}, {"100", before}} {
		t.Setenv("GOGC", tc.gogc)
		in := &gcPercentReader{r: strings.NewReader(fmt.Sprintf("%x\n", work))}
		var out, errb bytes.Buffer
		code := runSymbolize([]string{"-e", bin}, in, &out, &errb)
		if code != exitOK {
			t.Fatalf("GOGC=%q: exit %d: %s", tc.gogc, code, errb.String())
		}
		if len(in.seen) == 0 || in.seen[0] != tc.want {
			t.Errorf("GOGC=%q: collector percentage during the batch %v, want %d", tc.gogc, in.seen, tc.want)
		}
		after := debug.SetGCPercent(100)
		debug.SetGCPercent(after)
		if after != before {
			t.Errorf("GOGC=%q: collector percentage %d after the command, %d before", tc.gogc, after, before)
		}
	}
}
