package check

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/dso"
	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// recordPipe runs perf record -N --call-graph dwarf -o - on bin and
// analyzes perf's standard output as it is written (a pipe: no file, no
// modification time), copying the bytes to the file data as they pass,
// as `perf record -o - | tee data | perfcheck check -` would.
func (w *world) recordPipe(data, bin string, opts Options) *Result {
	w.t.Helper()
	var res *Result
	err := w.again("perf", func() error {
		f, err := os.Create(data)
		require.NoError(w.t, err)
		defer f.Close()
		cmd := exec.Command("perf", "record", "-N", "-q", "-e", "cpu-clock", "-F", "2000",
			"--call-graph", "dwarf", "-o", "-", "--", bin)
		cmd.Dir, cmd.Env = w.dir, fixtures.PerfEnv(w.home)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		require.NoError(w.t, err)
		require.NoError(w.t, cmd.Start())
		r, aerr := Analyze(context.Background(), Stream(io.TeeReader(out, f), "-"), withSystemSymbols(opts))
		io.Copy(f, out) // what the analysis left unread, so that perf finishes
		if err := cmd.Wait(); err != nil {
			w.t.Logf("perf record: %v\n%s", err, stderr.Bytes())
			return err
		}
		require.NoError(w.t, aerr, "analyzing perf's output as it streams")
		w.t.Cleanup(func() { r.Close() })
		res = r
		return nil
	})
	require.NoError(w.t, err)
	return res
}

// sampleStacks returns each kept sample's stack as "DSO-basename+0xOFF"
// frames, leaf first, by thread and time.
func sampleStacks(t *testing.T, res *Result) map[sampleKey][]string {
	t.Helper()
	out := map[sampleKey][]string{}
	require.NoError(t, res.EachSample(context.Background(), func(s *Sample) error {
		var frames []string
		for _, l := range s.Stack.Locations() {
			frames = append(frames, dso.BaseName(l.DSO.Path)+"+0x"+strconv.FormatUint(l.Offset, 16))
		}
		out[sampleKey{int32(s.TID), s.Time}] = frames
		return nil
	}))
	return out
}

// perf record --call-graph dwarf -o - | perfcheck: the stream unwinds as
// the same bytes read from a file do, frame for frame, whether they come
// from perf's pipe, from a regular file on standard input or by name; and
// as perf script unwinds the saved stream. (The stream learns its events
// from attr records after reading has begun: read once took the empty
// list, and every sample kept only its leaf.)
func TestRealDwarfUnwindPipe(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	lib, bin := w.path("libwork.so"), w.path("app")
	w.gcc(lib, libV1, "-shared", "-fPIC", "-fomit-frame-pointer")
	w.gcc(bin, libMain, "-L"+w.dir, "-lwork", "-Wl,-rpath,"+w.dir, "-fomit-frame-pointer")
	data := w.path("pipe.data")
	opts := Options{Replay: true}
	live := w.recordPipe(data, bin, opts)
	byName := w.analyze(data, opts)
	f, err := os.Open(data)
	require.NoError(t, err)
	defer f.Close()
	stdin, err := Analyze(context.Background(), Stream(f, "-"), withSystemSymbols(opts))
	require.NoError(t, err)
	defer stdin.Close()

	// No build-id table in a pipe from perf 6.1 and none in MMAP2
	// without --buildid-mmap: device and inode prove the binaries.
	mustDSO(t, live, bin, Unverified)
	mustDSO(t, live, lib, Unverified)
	require.Zero(t, live.StackUserSamples, "every stack copy is unwound")
	require.Zero(t, live.UnprovenUnwinds)

	want := sampleStacks(t, byName)
	require.NotEmpty(t, want)
	assert.Equal(t, want, sampleStacks(t, live), "perf's pipe against the saved file by name")
	assert.Equal(t, want, sampleStacks(t, stdin), "the saved file on standard input against it by name")

	// Against perf script of the saved stream: the user frames perfcheck
	// gives are perf's, and they go past the leaf.
	perfByKey := map[sampleKey][]string{}
	for _, s := range perfScriptStacks(t, w, data) {
		perfByKey[sampleKey{s.tid, s.time}] = s.frames
	}
	require.Len(t, perfByKey, len(want), "samples")
	same, compared, deep := 0, 0, 0
	require.NoError(t, live.EachSample(context.Background(), func(s *Sample) error {
		var got []string
		for _, l := range s.Stack.Locations() {
			if l.DSO.Kind != dso.Kernel && l.DSO.Kind != dso.Unknown {
				got = append(got, dso.BaseName(l.DSO.Path)+"+0x"+strconv.FormatUint(l.Offset, 16))
			}
		}
		wnt, ok := perfByKey[sampleKey{int32(s.TID), s.Time}]
		require.True(t, ok, "perf script has no sample of thread %d at %d", s.TID, s.Time)
		if len(wnt) == 0 {
			return nil // kernel only
		}
		compared++
		if len(got) > 1 {
			deep++
		}
		// perf walks to the end of the copy; perfcheck stops where the
		// CFI ends: compare what perfcheck gives.
		if len(got) >= min(len(wnt), 3) && len(got) <= len(wnt) && strings.Join(got, " ") == strings.Join(wnt[:len(got)], " ") {
			same++
		} else if compared-same <= 3 {
			t.Logf("thread %d at %d: perf %v\n\t\tperfcheck %v", s.TID, s.Time, wnt, got)
		}
		return nil
	}))
	t.Logf("%d of %d samples unwound as perf script does, %d past their leaf", same, compared, deep)
	require.NotZero(t, compared)
	assert.GreaterOrEqual(t, same, compared*95/100, "samples unwound as perf script does")
	assert.GreaterOrEqual(t, deep, compared*95/100, "samples unwound past their leaf")
}

// A stream's HEADER_BUILD_ID records (perf inject -b writes one before
// the first sample in each DSO) prove a binary for unwinding as they
// arrive, as a file's table does: with the library replaced on disk after
// the recording and the one that ran in perf's cache, the stream unwinds
// through it exactly as the same bytes read by name. (Before, the stream
// took them only at its end: its walks stopped at the library, judged by
// device and inode, while the file form unwound with the cached copy.)
func TestRealDwarfUnwindPipeBuildIDRecords(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	lib, bin := w.path("libwork.so"), w.path("app")
	w.gcc(lib, libV1, "-shared", "-fPIC", "-fomit-frame-pointer")
	w.gcc(bin, libMain, "-L"+w.dir, "-lwork", "-Wl,-rpath,"+w.dir, "-fomit-frame-pointer")
	raw := w.path("raw.data")
	w.recordPipe(raw, bin, Options{})
	data := w.path("inject.data")
	require.NoError(t, w.again("perf", func() error {
		in, err := os.Open(raw)
		require.NoError(t, err)
		defer in.Close()
		out, err := os.Create(data)
		require.NoError(t, err)
		defer out.Close()
		cmd := exec.Command("perf", "inject", "-b", "-o", "-")
		cmd.Dir, cmd.Env, cmd.Stdin, cmd.Stdout = w.dir, fixtures.PerfEnv(w.home), in, out
		return cmd.Run()
	}))
	w.run(nil, "perf", "buildid-cache", "-a", lib) // into the test's own HOME
	w.gcc(lib, libV2, "-shared", "-fPIC", "-fomit-frame-pointer")

	opts := Options{Replay: true, Lookup: buildidcache.Options{BuildIDDir: w.cache()}}
	byName := w.analyze(data, opts)
	f, err := os.Open(data)
	require.NoError(t, err)
	defer f.Close()
	// Through an io.Reader that is not the file: a pipe, no mtime.
	stream, err := Analyze(context.Background(), Stream(struct{ io.Reader }{f}, "-"), withSystemSymbols(opts))
	require.NoError(t, err)
	defer stream.Close()
	for _, res := range []*Result{byName, stream} {
		mustDSO(t, res, lib, Verified)
		require.Zero(t, res.UnprovenUnwinds, "no walk stops at the replaced library")
	}
	want := sampleStacks(t, byName)
	assert.Equal(t, want, sampleStacks(t, stream))
	through := 0
	for _, frames := range want {
		for i, fr := range frames[:max(len(frames)-1, 0)] {
			if strings.HasPrefix(fr, "libwork.so+") && strings.HasPrefix(frames[i+1], "app+") {
				through++
				break
			}
		}
	}
	t.Logf("%d of %d samples unwound from the library into the program", through, len(want))
	assert.Greater(t, through, 10, "samples unwound from the library into the program")
}
