package main

import (
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/perfcheck/perfcheck/internal/fixtures"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// periodShares are the total period of a perf script text and the shares
// of it whose leaf, or any frame, is in one DSO.
type periodShares struct {
	total         uint64
	leaf, through float64
}

// scriptShares reads text (perf's or perfcheck's default script output)
// with perf script's grammar alone (parseDefaultScript) and weighs dso.
func scriptShares(t *testing.T, text, dso string) periodShares {
	t.Helper()
	var s periodShares
	var leaf, through uint64
	for _, p := range parseDefaultScript(t, text) {
		s.total += p.period
		for i, f := range p.frames {
			if f.dso == dso {
				if i == 0 {
					leaf += p.period
				}
				through += p.period
				break
			}
		}
	}
	require.NotZero(t, s.total)
	s.leaf, s.through = float64(leaf)/float64(s.total), float64(through)/float64(s.total)
	return s
}

// proveShares checks, for a recording in which the library lib is
// untrusted (its frames labelled label), every output that weighs samples
// against perf script's own text of the same file:
//   - perfcheck script's total period, read with perf script's grammar,
//     equals perf's, and the library's share of the leaf period is within
//     1 point of perf's;
//   - script --folded sums to the same total;
//   - go tool pprof -top gives the library's group its leaf share (flat);
//   - the flame graph, opened in chromium, gives the library's frames the
//     width of the stacks through it, within 1 point of perf's share.
func (w *realWorld) proveShares(c proofCase, lib, label string) {
	t := w.t
	t.Helper()
	perf := scriptShares(t, w.run("perf", "script", "-i", c.data), lib)
	text, _, _ := w.pcOut(c, "script", c.data)
	pc := scriptShares(t, text, lib)
	assert.Equal(t, perf.total, pc.total, "total period: perf script's and perfcheck script's")
	assert.InDelta(t, perf.leaf, pc.leaf, 0.01, "%s's share of the leaf period", lib)
	assert.NotZero(t, perf.leaf, "the recording has samples in %s", lib)
	t.Logf("%s: perf script %.2f%% of %d leaf, %.2f%% through; perfcheck script %.2f%%, %.2f%%",
		filepath.Base(lib), 100*perf.leaf, perf.total, 100*perf.through, 100*pc.leaf, 100*pc.through)

	folded, _, _ := w.pcOut(c, "script", "--folded", c.data)
	through, total := foldedThrough(t, folded, label)
	assert.Equal(t, perf.total, total, "folded total, perf script's total period")
	assert.InDelta(t, perf.through, float64(through)/float64(total), 0.01, "folded stacks through %s", label)

	pb := filepath.Join(t.TempDir(), "p.pb.gz")
	w.pcOut(c, "pprof", "-o", pb, c.data)
	top := goToolPprof(t, "-top", "-nodecount=1000", pb)
	m := regexp.MustCompile(`(?m)^\s*\S+\s+([0-9.]+)%.*` + regexp.QuoteMeta(label) + `\s*$`).FindStringSubmatch(top)
	require.NotNil(t, m, "go tool pprof -top has no %q line:\n%s", label, top)
	flat, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	assert.InDelta(t, 100*perf.leaf, flat, 1, "go tool pprof -top's flat%% of %q", label)
	// The flame graph go tool pprof -http serves draws the library where
	// perf script has it: unnamed locations keep their label there too.
	st := fixtures.PprofFlameGraph(t, pb)
	pleaf, pthrough := st.Weight(label)
	require.NotZero(t, st.Total)
	assert.InDelta(t, perf.leaf, float64(pleaf)/float64(st.Total), 0.01, "/ui/flamegraph's leaf share of %q", label)
	assert.InDelta(t, perf.through, float64(pthrough)/float64(st.Total), 0.01, "/ui/flamegraph's share through %q", label)

	t.Run("flamegraph", func(t *testing.T) {
		needChromium(t)
		out := filepath.Join(t.TempDir(), "flame.html")
		w.pcOut(c, "flamegraph", "-o", out, c.data)
		_, share := checkFlameGraphDOM(t, out, label, through, total)
		assert.InDelta(t, perf.through, share, 0.01, "the flame graph's width for %q, perf's share", label)
		assert.False(t, math.IsNaN(share))
		screenshot(t, out, "", filepath.Join(artifactDir(t), strings.ReplaceAll(filepath.Base(lib), ".", "_")+".png"))
	})
}
