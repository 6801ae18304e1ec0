package main

import (
	"encoding/base64"
	"encoding/json"
	"html"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// speedscopeVersion is the speedscope scripts/test.sh installs with npm.
const speedscopeVersion = "1.25.0"

// needSpeedscope returns the directory of the npm package speedscope:
// $PERFCHECK_SPEEDSCOPE, else where scripts/test.sh installs it
// ($XDG_CACHE_HOME/perfcheck/npm). The test skips where it is absent.
func needSpeedscope(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("PERFCHECK_SPEEDSCOPE")
	if dir == "" {
		if c, err := os.UserCacheDir(); err == nil {
			dir = filepath.Join(c, "perfcheck", "npm", "node_modules", "speedscope")
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "dist", "release", "index.html")); dir == "" || err != nil {
		t.Skip("speedscope not installed: scripts/test.sh installs it (npm install speedscope@" + speedscopeVersion + ")")
	}
	return dir
}

// speedscopeLoader is the script speedscope's page loads when opened with
// "#localProfilePath=FILE", as its own command line does: it calls
// speedscope.loadFileFromBase64. Before that it counts what speedscope's
// importer of perf script text parses: it wraps RegExp.prototype.exec and
// counts the matches of the four expressions the importer (version
// speedscopeVersion) reads a sample with — the sample line, its time, its
// event, each frame line with its "(DSO)" — and once the profile is drawn
// it writes the counts, as JSON, into <pre id="perfcheck-counts">. A
// speedscope whose expressions differ counts nothing, and the test fails.
const speedscopeLoader = `(function () {
  var kinds = {
    "^(\\S.+?)\\s+(\\d+)(?:\\/?(\\d+))?\\s+": "samples",
    "\\s+(\\d+\\.\\d+):\\s+": "times",
    "(\\S+):\\s*$": "events",
    "^\\s*(\\w+)\\s*(.+) \\((\\S*)\\)": "frames"
  };
  var counts = {samples: 0, times: 0, events: 0, frames: 0, by_event: {}, by_dso: {}};
  var exec = RegExp.prototype.exec;
  RegExp.prototype.exec = function (s) {
    var m = exec.call(this, s), k = kinds[this.source];
    if (m && k) {
      counts[k]++;
      if (k === "events") counts.by_event[m[1]] = (counts.by_event[m[1]] || 0) + 1;
      if (k === "frames") counts.by_dso[m[3]] = (counts.by_dso[m[3]] || 0) + 1;
    }
    return m;
  };
  speedscope.loadFileFromBase64("perfcheck-script.txt", PROFILE);
  var polls = 0;
  (function report() {
    if (!(counts.samples > 0 && document.querySelector("canvas")) && ++polls < 400) {
      setTimeout(report, 50);
      return;
    }
    var pre = document.createElement("pre");
    pre.id = "perfcheck-counts";
    pre.textContent = JSON.stringify(counts);
    document.body.appendChild(pre);
  })();
})();
`

// speedscopeCounts is what speedscopeLoader reports.
type speedscopeCounts struct {
	Samples int            `json:"samples"`
	Times   int            `json:"times"`
	Events  int            `json:"events"`
	Frames  int            `json:"frames"`
	ByEvent map[string]int `json:"by_event"`
	ByDSO   map[string]int `json:"by_dso"`
}

// speedscope, the npm package, imports perfcheck script's default text
// with every sample: opened in its page in headless chromium (it has no
// importer that runs outside a browser), as its command line opens a
// file, with the network cut off, its importer reads as many samples (each
// with its time and event) and frame lines as the text holds — among them
// the mismatched library's, "[mismatch] libhot.so+0xOFF (DSO)" — and the
// recording holds (check's count).
func TestSpeedscopeImportsEverySample(t *testing.T) {
	t.Parallel()
	needChromium(t)
	ss := needSpeedscope(t)
	args := append([]string{"--symfs", mismatchSymFS(t)}, ckHermetic(t)...)
	data := ckFixture(t, "cshared-fp.data")
	text, errs, code := ckRun(t, append(append([]string{"script"}, args...), data)...)
	require.Equal(t, exitOK, code, errs)
	checkOut, _, _ := ckRun(t, append(append([]string{"check", "--json"}, args...), data)...)
	samples := ckParseReport(t, checkOut).Samples

	ps := parseDefaultScript(t, text)
	require.Len(t, ps, int(samples), "perfcheck script prints every sample")
	byDSO := map[string]int{}
	frames := 0
	for _, p := range ps {
		require.Equal(t, "cpu-clock", p.event)
		for _, f := range p.frames {
			byDSO[f.dso]++
			frames++
		}
	}
	require.NotZero(t, byDSO[recordedBin+"/libhot.so"])

	loader := filepath.Join(t.TempDir(), "load.js")
	js := strings.Replace(speedscopeLoader, "PROFILE", `"`+base64.StdEncoding.EncodeToString([]byte(text))+`"`, 1)
	require.NoError(t, os.WriteFile(loader, []byte(js), 0o644))
	dom := headless(t, filepath.Join(ss, "dist", "release", "index.html"), "localProfilePath="+loader,
		"--dump-dom", "--allow-file-access-from-files", "--virtual-time-budget=60000")
	var got speedscopeCounts
	require.NoError(t, json.Unmarshal([]byte(html.UnescapeString(elementText(t, dom, "perfcheck-counts"))), &got))
	assert.Equal(t, int(samples), got.Samples, "sample lines speedscope parsed")
	assert.Equal(t, int(samples), got.Times, "sample times")
	assert.Equal(t, map[string]int{"cpu-clock": int(samples)}, got.ByEvent, "sample events")
	assert.Equal(t, frames, got.Frames, "frame lines")
	assert.Equal(t, byDSO, got.ByDSO, "frame lines per DSO")
	t.Logf("speedscope %s read %d samples and %d frames, %d in the mismatched libhot.so", speedscopeVersion,
		got.Samples, got.Frames, got.ByDSO[recordedBin+"/libhot.so"])
}
