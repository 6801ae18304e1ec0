package pprofout

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/perfcheck/perfcheck/check"
	"github.com/perfcheck/perfcheck/internal/fixtures"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// isLabel reports whether l carries only the label pprofout gives a
// location that has no name: one line, a function named in brackets.
func isLabel(l *profile.Location) bool {
	return len(l.Line) == 1 && l.Line[0].Function != nil && strings.HasPrefix(l.Line[0].Function.Name, "[") &&
		!l.Mapping.HasFunctions
}

// mismatchSymFS is a --symfs root like fixtures.SymFS, except that the
// fixtures' libhot.so is another binary (cshared, whose build-id is not
// the recorded one): libhot.so is then mismatch, with an empty build-id
// cache, as a library replaced by a deploy after the recording.
func mismatchSymFS(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	dst := filepath.Join(root, recordedBin)
	require.NoError(t, os.MkdirAll(dst, 0o755))
	ents, err := os.ReadDir(filepath.Join(fixtures.Dir(), "bin"))
	require.NoError(t, err)
	for _, e := range ents {
		src := filepath.Join(fixtures.Dir(), "bin", e.Name())
		if e.Name() == "libhot.so" {
			src = filepath.Join(fixtures.Dir(), "bin", "cshared")
		}
		require.NoError(t, os.Symlink(src, filepath.Join(dst, e.Name())))
	}
	for _, d := range []string{"usr", "lib", "lib64"} {
		if _, err := os.Stat("/" + d); err == nil {
			require.NoError(t, os.Symlink("/"+d, filepath.Join(root, d)))
		}
	}
	return root
}

// Every location has a function: a refused one the label of its DSO and
// verdict, so that no view of pprof drops its weight; the mapping keeps its
// build-id and no Has* flag.
func TestUnnamedLocationsKeepALabel(t *testing.T) {
	res := analyze(t, "cshared-fp.data", mismatchSymFS(t))
	lib := dsoByPath(res, recordedBin+"/libhot.so")
	require.NotNil(t, lib)
	require.Equal(t, check.Mismatch, lib.Verdict)
	p, err := Convert(res, Options{})
	require.NoError(t, err)
	labelled := 0
	for _, l := range p.Location {
		require.NotEmpty(t, l.Line, "location %d at %#x has no function", l.ID, l.Address)
		if strings.HasPrefix(l.Mapping.File, lib.Path) {
			assert.Equal(t, "[mismatch] libhot.so", l.Line[0].Function.Name)
			assert.Equal(t, "[mismatch] "+lib.Path, l.Line[0].Function.SystemName)
			labelled++
		}
	}
	assert.NotZero(t, labelled)
	for _, m := range p.Mapping {
		if m.File == lib.Path+" [mismatch]" {
			assert.Equal(t, lib.BuildID.String(), m.BuildID)
			assert.False(t, m.HasFunctions || m.HasFilenames || m.HasLineNumbers || m.HasInlineFrames, "%+v", m)
		}
	}
}

// pprofRun runs go tool pprof with args on file, with an empty binary
// search path, and returns its output.
func pprofRun(t *testing.T, file string, args ...string) string {
	t.Helper()
	cmd := exec.Command(goTool(t), append(append([]string{"tool", "pprof"}, args...), file)...)
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "PPROF_BINARY_PATH="+home, "PPROF_TMPDIR="+home)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Run(), "go tool pprof %v: %s", args, errb.String())
	return out.String()
}

// go tool pprof itself shows the mismatched library's weight where it is:
// -top gives its label the library's share of self time (perfcheck's own
// count of leaf samples in it), -traces prints it as a frame of its own in
// every stack that went through it, with the stack's weight, never as its
// caller's self time, and -raw keeps each location's address.
func TestGoToolPprofKeepsUntrustedWeight(t *testing.T) {
	res, lib, file := mismatchedProfile(t)

	flat, raw := pprofTop(t, file)
	want := 100 * float64(lib.HitsLeaf) / float64(res.Samples)
	assert.InDelta(t, want, flat["[mismatch] libhot.so"], 0.011, raw)

	// -traces: one block per sample, "-----------+---" between them,
	// whose first frame line holds the weight and the leaf.
	traces := pprofRun(t, file, "-traces", "-sample_index=samples")
	var inLib, leafInLib int64
	for _, block := range strings.Split(traces, "-----------+-------------------------------------------------------") {
		// Labels (comm:, pid:, ...) come first, then "WEIGHT LEAF".
		m := regexp.MustCompile(`(?m)^\s*(\d+)\s+(\S.*)$`).FindStringSubmatch(block)
		if m == nil {
			continue
		}
		n, _ := strconv.ParseInt(m[1], 10, 64)
		if strings.TrimSpace(m[2]) == "[mismatch] libhot.so" {
			leafInLib += n
		}
		if strings.Contains(block, "[mismatch] libhot.so") {
			inLib += n
		}
	}
	assert.Equal(t, int64(lib.HitsLeaf), leafInLib, "samples whose leaf is the library\n%.3000s", traces)
	assert.Equal(t, int64(lib.HitsAny), inLib, "samples through the library\n%.3000s", traces)

	// -raw: the labelled locations keep their addresses, one per offset.
	rawOut := pprofRun(t, file, "-raw")
	addrs := regexp.MustCompile(`(?m)^\s*\d+: (0x[0-9a-f]+) M=\d+ \[mismatch\] libhot\.so `).FindAllStringSubmatch(rawOut, -1)
	seen := map[string]bool{}
	for _, a := range addrs {
		seen[a[1]] = true
	}
	assert.Greater(t, len(seen), 1, "distinct addresses of the library in -raw\n%.3000s", rawOut)
}

// The label does not stop pprof from naming the library later: with the
// binary that ran put where pprof looks by build-id
// (PPROF_BINARY_PATH=DIR, DIR/<build-id>/<any name>), google/pprof checks
// its build-id and symbolizes the mapping, which has no Has* flag, itself:
// the label gives way to the names perf report gives (lib_mix 51.50%,
// lib_hash_block 4.32%: TestGoToolPprofReadsIt). go tool pprof cannot:
// its object files report no build-id, so it refuses every candidate for
// a mapping that has one, and the label stays (docs/pprof.md).
func TestLabelledProfileResymbolizesByBuildID(t *testing.T) {
	_, lib, file := mismatchedProfile(t)

	dir := t.TempDir()
	bid := filepath.Join(dir, lib.BuildID.String())
	require.NoError(t, os.Mkdir(bid, 0o755))
	fixtures.CopyFile(t, filepath.Join(fixtures.Dir(), "bin", "libhot.so"), filepath.Join(bid, "libhot.so"))
	top := func(pprof ...string) string {
		cmd := exec.Command(pprof[0], append(pprof[1:], "-top", "-nodecount=1000", file)...)
		cmd.Env = append(os.Environ(), "PPROF_BINARY_PATH="+dir, "PPROF_TMPDIR="+t.TempDir())
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		return string(out)
	}
	out := top(goTool(t), "tool", "pprof")
	assert.Contains(t, out, "[mismatch] libhot.so", "go tool pprof reads no build-id and keeps the label")
	g := googlePprof(t)
	if g == "" {
		t.Skip("google/pprof could not be built here")
	}
	out = top(g)
	assert.NotContains(t, out, "[mismatch] libhot.so")
	assert.Regexp(t, `51\.50%.*lib_mix`, out)
	assert.Regexp(t, `4\.32%.*lib_hash_block`, out)
}

// googlePprof builds google/pprof's command, at the version this module
// requires, into a scratch directory and returns its path. It builds
// from the module cache first, offline (GOPROXY=off), inside pprof's own
// module, whose go.sum lists its command's dependencies (ours need not);
// then with `go install module@version`, which may download. Where
// neither works it returns "" (the caller skips), except under CI
// (CI=true), where the test fails: CI reaches the Go module proxy, so a
// failure there is a broken build, not a missing network.
func googlePprof(t *testing.T) string {
	t.Helper()
	const mod = "github.com/google/pprof"
	dir := t.TempDir()
	bin := filepath.Join(dir, "pprof")
	var why []string
	info, err := exec.Command(goTool(t), "list", "-m", "-f", "{{.Dir}}\n{{.Version}}", mod).Output()
	if err != nil {
		why = append(why, fmt.Sprintf("go list -m %s: %v", mod, err))
	} else {
		modDir, version, _ := strings.Cut(strings.TrimSpace(string(info)), "\n")
		if modDir != "" {
			cmd := exec.Command(goTool(t), "build", "-o", bin, ".")
			cmd.Dir = modDir
			cmd.Env = append(os.Environ(), "GOPROXY=off", "GOWORK=off", "GOFLAGS=-mod=readonly")
			b, err := cmd.CombinedOutput()
			if err == nil {
				return bin
			}
			why = append(why, fmt.Sprintf("go build in %s: %v\n%s", modDir, err, b))
		}
		cmd := exec.Command(goTool(t), "install", mod+"@"+version)
		cmd.Env = append(os.Environ(), "GOBIN="+dir)
		b, err := cmd.CombinedOutput()
		if err == nil {
			return bin
		}
		why = append(why, fmt.Sprintf("go install %s@%s: %v\n%s", mod, version, err, b))
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("google/pprof could not be built:\n%s", strings.Join(why, "\n"))
	}
	t.Logf("google/pprof not built:\n%s", strings.Join(why, "\n"))
	return ""
}

// mismatchedProfile writes the profile of cshared-fp.data with libhot.so
// mismatched (another binary at its path under a --symfs root) and
// returns the check's result, that DSO and the profile's file.
func mismatchedProfile(t *testing.T) (*check.Result, *check.DSO, string) {
	t.Helper()
	res := analyze(t, "cshared-fp.data", mismatchSymFS(t))
	lib := dsoByPath(res, recordedBin+"/libhot.so")
	require.NotNil(t, lib)
	file := filepath.Join(t.TempDir(), "out.pb.gz")
	f, err := os.Create(file)
	require.NoError(t, err)
	_, err = Write(f, res, Options{})
	require.NoError(t, err)
	require.NoError(t, f.Close())
	return res, lib, file
}
