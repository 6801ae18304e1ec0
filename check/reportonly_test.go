package check

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/internal/fixtures"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReportOnlySameReport: counting samples by their DSOs
// (Options.ReportOnly) gives the report that counting them by stack gives,
// on every committed recording and every corpus recording with samples,
// under the default and the strict figures, with the raw-stack cache and
// with it turned off after the first sample (rawCacheOff); and it keeps
// no stacks.
func TestReportOnlySameReport(t *testing.T) {
	t.Parallel()
	files := feedFixtures(t)
	if dir := fixtures.CorpusDir(); dir != "" {
		more, err := filepath.Glob(filepath.Join(dir, "*", "*.data"))
		require.NoError(t, err)
		files = append(files, more...)
	}
	cache := fixtureCache(t)
	for _, name := range files {
		t.Run(filepath.Base(filepath.Dir(name))+"/"+filepath.Base(name), func(t *testing.T) {
			t.Parallel()
			var reports []string
			for _, o := range []Options{{}, {ReportOnly: true}, {ReportOnly: true, rawProbe: 1}} {
				only := o.ReportOnly
				o.Lookup, o.NoSymbols = buildidcache.Options{BuildIDDir: cache}, true
				res, err := Analyze(context.Background(), Path(name), o)
				if res == nil {
					t.Skipf("unreadable: %v", err)
				}
				if only {
					assert.Empty(t, res.Stacks)
					assert.Empty(t, res.Aggregates())
				}
				rep, err := json.Marshal(res.Report())
				require.NoError(t, err)
				reports = append(reports, string(rep))
			}
			assert.JSONEq(t, reports[0], reports[1], "with the raw-stack cache")
			assert.JSONEq(t, reports[0], reports[2], "without it")
		})
	}
	_, err := Analyze(context.Background(), Path(files[0]), Options{ReportOnly: true, Replay: true})
	require.ErrorContains(t, err, "exclude each other")
}
