package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// endReport is what these tests read of check --json.
type endReport struct {
	RecordingEnd       *time.Time `json:"recording_end"`
	RecordingEndSource string     `json:"recording_end_source"`
	DSOs               []struct {
		Path, Verdict, Reason string
	} `json:"dsos"`
}

func (r *endReport) verdict(path string) string {
	for _, d := range r.DSOs {
		if d.Path == path {
			return d.Verdict
		}
	}
	return ""
}

// checkJSONIn runs check --json (stdin is the standard input, for "-")
// and decodes the report.
func checkJSONIn(t *testing.T, stdin *os.File, args ...string) *endReport {
	t.Helper()
	var in interface{ Read([]byte) (int, error) }
	if stdin != nil {
		in = stdin
	}
	out, errs, code := ckRunIn(t, in, append([]string{"check", "--json", "--buildid-dir", t.TempDir()}, args...)...)
	require.Contains(t, []int{exitOK, exitProblems}, code, errs)
	var r endReport
	require.NoError(t, json.Unmarshal([]byte(out), &r), out)
	return &r
}

// overwrite rewrites path in place with src's bytes, as `cat src > path`
// does: same inode, new contents, new mtime.
func overwrite(t *testing.T, src, path string) {
	t.Helper()
	b, err := os.ReadFile(src)
	require.NoError(t, err)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	require.NoError(t, err)
	_, err = f.Write(b)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// TestPipeOverwriteAfterRecording: perf record -o - > pipe.data, then the
// profiled binary overwritten in place (same inode): the pipe-format file's
// mtime is the end of the recording, so the overwrite is caught, whether
// the file is named or given as standard input, and top does not name the
// new binary's functions.
func TestPipeOverwriteAfterRecording(t *testing.T) {
	t.Parallel()
	fixtures.NeedTool(t, "perf")
	dir := t.TempDir()
	prog := fixtures.BuildC(t, dir, "prog")
	newer := fixtures.BuildC(t, dir, "newer", "-DTAG=\"newer \"", "-Dspin=newer_spin")
	data := filepath.Join(dir, "pipe.data")
	out, err := os.Create(data)
	require.NoError(t, err)
	rec := exec.Command("perf", "record", "-N", "-q", "-g", "-e", "cpu-clock:u", "-o", "-", "--", prog, "1")
	var errb strings.Builder
	rec.Env, rec.Stdout, rec.Stderr = fixtures.PerfEnv(dir), out, &errb
	err = rec.Run()
	require.NoError(t, out.Close())
	require.NoError(t, err, errb.String())
	overwrite(t, newer, prog)

	r := checkJSONIn(t, nil, data)
	require.NotNil(t, r.RecordingEnd, "a pipe-format file has a modification time")
	assert.Equal(t, "mtime", r.RecordingEndSource)
	assert.Equal(t, "replaced", r.verdict(prog))

	in, err := os.Open(data)
	require.NoError(t, err)
	defer in.Close()
	r = checkJSONIn(t, in, "-")
	require.NotNil(t, r.RecordingEnd, "standard input redirected from the file")
	assert.Equal(t, "replaced", r.verdict(prog))

	top, errs, code := runCmd(t, "top", "--buildid-dir", t.TempDir(), data)
	require.Equal(t, exitOK, code, errs)
	assert.NotContains(t, top, "newer_spin")
	assert.Contains(t, top, "[replaced]")
}

// TestCopiedRecordingTime: a copy (cp, scp, a CI artifact) gives the
// recording a new mtime, which would hide a binary modified after the
// recording; a recording with its own clock (perf record -k
// CLOCK_MONOTONIC writes CLOCK_DATA) keeps its end time, and the report
// says which time it used.
func TestCopiedRecordingTime(t *testing.T) {
	t.Parallel()
	fixtures.NeedTool(t, "perf")
	for _, c := range []struct {
		name    string
		clock   []string
		source  string
		verdict string
		text    string
	}{
		{"clock", []string{"-k", "CLOCK_MONOTONIC"}, "clock", "replaced", "(the last sample, by the recording's own clock)"},
		// The copy's mtime is later than the modification: the mtime
		// cannot show it, and the report says the time is the copy's.
		{"mtime", nil, "mtime", "unverified", "(the file's modification time; a copy resets it"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			prog := fixtures.BuildC(t, dir, "prog", "-Wl,--build-id=none")
			data := filepath.Join(dir, "perf.data")
			args := append(append([]string{"record", "-N", "-q", "-e", "cpu-clock:u"}, c.clock...), "-o", data, "--", prog, "1")
			fixtures.PerfHome(t, dir, args...)
			// After the recording: the binary is touched, then the
			// recording copied.
			now := time.Now()
			require.NoError(t, os.Chtimes(prog, now, now))
			cp := filepath.Join(t.TempDir(), "copy.data")
			fixtures.CopyFile(t, data, cp)
			later := now.Add(time.Second)
			require.NoError(t, os.Chtimes(cp, later, later))

			r := checkJSONIn(t, nil, cp)
			require.NotNil(t, r.RecordingEnd)
			assert.Equal(t, c.source, r.RecordingEndSource)
			assert.Equal(t, c.verdict, r.verdict(prog))
			if c.source == "clock" {
				assert.True(t, r.RecordingEnd.Before(now), "the clock's end %v is before the modification %v", r.RecordingEnd, now)
			}
			text, errs, _ := runCmd(t, "check", "--buildid-dir", t.TempDir(), cp)
			assert.Contains(t, strings.SplitN(text, "\n", 3)[1], c.text, errs)
		})
	}
}
