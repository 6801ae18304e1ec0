package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// perfHeaderLine matches the lines of perf report --header-only -I that
// info's "header features" section prints: CPU and NUMA topology, PMU
// mappings, groups, caches, the clock, hybrid topology, PMU capabilities.
var perfHeaderLine = regexp.MustCompile(`^# (sibling |CPU \d+: |Core ID|node\d+ |pmu mappings: |group: |CPU cache info:| L\d |clockid|reference time: |hybrid cpu system:|\S+ cpu list : |\S+ pmu capabilities: )`)

// infoHeaderLines is info's "header features" section, unindented.
func infoHeaderLines(t *testing.T, file string) []string {
	t.Helper()
	// A read error after the header still prints it.
	out, errs, code := runCmd(t, "info", file)
	require.Contains(t, []int{exitOK, exitError}, code, errs)
	_, section, ok := strings.Cut(out, "header features (as perf report --header-only -I):\n")
	if !ok {
		return nil
	}
	var lines []string
	for _, l := range strings.Split(section, "\n") {
		rest, ok := strings.CutPrefix(l, "  ")
		if !ok {
			break
		}
		lines = append(lines, rest)
	}
	return lines
}

// TestInfoHeaderAgainstPerf: on every corpus file and fixture perf reads,
// info's header features are perf report --header-only -I's lines, in
// its order (perf run with TZ=UTC, since it prints the reference time in
// local time and info in UTC).
func TestInfoHeaderAgainstPerf(t *testing.T) {
	t.Parallel()
	perf, err := exec.LookPath("perf")
	if err != nil {
		t.Skip("perf is not installed")
	}
	files, _ := filepath.Glob(filepath.Join(fixturesDir, "*.data"))
	if _, err := os.Stat(corpusDir); err == nil {
		for _, c := range corpusCases(t) {
			files = append(files, c.data)
		}
		modern, _ := filepath.Glob(filepath.Join(corpusDir, "modern", "*.data"))
		files = append(files, modern...)
	}
	// Where perf 6.1 reads less of a feature than is there. perfcheck
	// prints what the file holds; the test compares the rest.
	perfReadsLess := map[string]*regexp.Regexp{
		// A 3.8-era file: perf stops at its empty CPUDESC and prints
		// no topology and no PMU mappings.
		"perf.data.armv7.perf_3.14-3.8": regexp.MustCompile(`^(sibling|CPU \d|Core ID|pmu mappings)`),
		// A pipe-mode file of perf 5.17 whose CPU_TOPOLOGY record perf
		// 6.1 sizes without its per-CPU ids ("not available").
		"perf.data.weight_struct": regexp.MustCompile(`^(CPU \d+:|Core ID)`),
	}
	drop := func(re *regexp.Regexp, lines []string) []string {
		var out []string
		for _, l := range lines {
			if re == nil || !re.MatchString(l) {
				out = append(out, l)
			}
		}
		return out
	}
	compared := map[string]int{}
	for _, file := range files {
		cmd := exec.Command(perf, "report", "--header-only", "-I", "-i", file)
		cmd.Env = append(os.Environ(), "TZ=UTC", "HOME="+t.TempDir())
		out, err := cmd.Output()
		if err != nil || !strings.Contains(string(out), "# ========") {
			continue // perf cannot read it; the conformance tests cover those
		}
		var want []string
		for _, l := range strings.Split(string(out), "\n") {
			if perfHeaderLine.MatchString(l) {
				want = append(want, strings.TrimPrefix(l, "# "))
			}
		}
		got := infoHeaderLines(t, file)
		re := perfReadsLess[filepath.Base(file)]
		want, got = drop(re, want), drop(re, got)
		assert.Equal(t, want, got, "%s", file)
		for _, l := range want {
			compared[strings.SplitN(l, " ", 2)[0]]++
		}
	}
	// The corpus holds every kind; without it the fixtures hold some.
	if _, err := os.Stat(corpusDir); err == nil {
		fixtures.Corpus(t, "perf.data.hybrid_topology")
		for _, k := range []string{"sibling", "CPU", "node0", "pmu", "group:", "clockid:", "reference", "hybrid", "cpu_core", "cpu"} {
			assert.Positive(t, compared[k], "no %q line was compared", k)
		}
	}
}
