package main

import (
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// foldedThrough is the folded stacks' total weight and the weight of
// those that pass through a frame named name.
func foldedThrough(t *testing.T, folded, name string) (through, total uint64) {
	t.Helper()
	for k, v := range parseFolded(t, folded) {
		total += v
		if slices.Contains(strings.Split(k, ";"), name) {
			through += v
		}
	}
	return through, total
}

// The flame graph of the recording with libhot.so mismatched, HTML and
// SVG, opened in chromium with the network cut off: it refers to nothing
// outside itself, its script runs, the library's frames are hatched and
// span its share of the width (the share of the folded stacks that pass
// through it), the search finds exactly that weight, a click's zoom
// widens a frame to the whole width, the verdict summary heads it, and
// its screenshot (kept) shows the hatching.
func TestFlameGraphInChromium(t *testing.T) {
	t.Parallel()
	needChromium(t)
	args := append([]string{"--symfs", mismatchSymFS(t)}, ckHermetic(t)...)
	data := ckFixture(t, "cshared-fp.data")
	folded, errs, code := ckRun(t, append(append([]string{"script", "--folded"}, args...), data)...)
	require.Equal(t, exitOK, code, errs)
	const lib = "[mismatch] libhot.so"
	through, total := foldedThrough(t, folded, lib)
	require.NotZero(t, through)
	dir, shots := t.TempDir(), artifactDir(t)
	for _, ext := range []string{"html", "svg"} {
		t.Run(ext, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(dir, "flame."+ext)
			_, errs, code := ckRun(t, append(append([]string{"flamegraph", "-o", out}, args...), data)...)
			require.Equal(t, exitOK, code, errs)
			noNetworkRefs(t, out)
			dom, _ := checkFlameGraphDOM(t, out, lib, through, total)
			assert.Contains(t, dom, "[mismatch] "+recordedBin+"/libhot.so: ", "the verdict summary names the library")
			img := screenshot(t, out, "", filepath.Join(shots, "flamegraph."+ext+".png"))
			// The hatching's dark stripes (#8c8c8c): over the library's
			// frames, far more than the legend's 12 by 12 swatch.
			assert.Greater(t, pixelsNear(img, [3]int{0x8c, 0x8c, 0x8c}), 2000, "hatched pixels in the screenshot")
		})
	}
}

// checkFlameGraphDOM opens the flame graph in file in chromium three
// times and checks the DOM its script leaves: as opened, the frames named
// name are hatched and the outermost of them weigh weight and span
// weight/total of the root's width; searched for name ("#s="), the script
// adds up exactly weight; zoomed on the widest of them ("#z="), that frame
// spans the whole width. It returns the DOM as opened and the share of
// the width the frames span.
func checkFlameGraphDOM(t *testing.T, file, name string, weight, total uint64) (string, float64) {
	t.Helper()
	dom := dumpDOM(t, file, "")
	require.Equal(t, "1", attr(dom, "data-ready"), "the graph's script ran")
	frames := domFrames(t, dom)
	require.Equal(t, total, frames[0].weight, "the root's weight")
	outer := outermost(frames, name)
	require.NotEmpty(t, outer, "no frame %q", name)
	var width float64
	var v uint64
	widest := outer[0]
	for _, f := range outer {
		width += f.width
		v += f.weight
		if f.width > widest.width {
			widest = f
		}
	}
	for _, f := range frames {
		if f.name == name {
			assert.Contains(t, f.class, "fg-untrusted", "frame %s", f.id)
			assert.Equal(t, "url(#fg-hatch)", f.fill, "frame %s", f.id)
		}
	}
	assert.Equal(t, weight, v, "weight of the outermost %q frames", name)
	share := float64(weight) / float64(total)
	// Widths are written to 0.01 of 1180 units: a few frames' rounding.
	assert.InDelta(t, share, width/frames[0].width, 0.001, "%q spans %.2f of %.2f units", name, width, frames[0].width)
	t.Logf("%s: %q spans %.2f%% of the width; its stacks weigh %.2f%%", filepath.Base(file), name, 100*width/frames[0].width, 100*share)

	searched := dumpDOM(t, file, "s="+url.QueryEscape("^"+regexp.QuoteMeta(name)+"$"))
	assert.Equal(t, strconv.FormatUint(weight, 10), attr(searched, "data-matched"), "the search's sum")
	assert.Contains(t, searched, "Matched: "+strconv.FormatFloat(100*share, 'f', 2, 64)+"%")

	zoomed := dumpDOM(t, file, "z="+widest.id)
	assert.Equal(t, widest.id, attr(zoomed, "data-zoom"))
	for _, f := range domFrames(t, zoomed) {
		if f.id == widest.id {
			assert.InDelta(t, frames[0].width, f.width, 0.01, "the zoomed frame spans the width")
			assert.False(t, f.hidden)
		}
	}
	return dom, width / frames[0].width
}

// The command's contract without a browser: -o is required and never the
// input; "-o -" writes the HTML page on stdout, a name ending in .svg an
// SVG; --event picks the event drawn (its unit in the title) and names the
// recording's events when it names none of them; report reads a file,
// not a stream.
func TestFlameGraphCommand(t *testing.T) {
	t.Parallel()
	args := append([]string{"--symfs", ckSymfs(t)}, ckHermetic(t)...)
	data := ckFixture(t, "twoevents.data")
	dir := t.TempDir()
	run := func(extra ...string) (string, string, int) {
		return ckRun(t, append(append(extra, args...), data)...)
	}
	_, _, code := run("flamegraph")
	assert.Equal(t, exitError, code, "no -o")
	_, errs, code := run("flamegraph", "-o", data)
	assert.Equal(t, exitError, code)
	assert.Contains(t, errs, "is the input file")
	out, errs, code := run("flamegraph", "-o", "-")
	require.Equal(t, exitOK, code, errs)
	assert.True(t, strings.HasPrefix(out, "<!DOCTYPE html>"))
	assert.Contains(t, out, ": cpu-clock, ")
	assert.Contains(t, errs, "drew the samples of cpu-clock only; --event names one of page-faults")
	svg := filepath.Join(dir, "g.SVG")
	_, errs, code = run("flamegraph", "--event", "page-faults", "-o", svg)
	require.Equal(t, exitOK, code, errs)
	b, err := os.ReadFile(svg)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(b), "<svg "))
	assert.Regexp(t, `: page-faults, \d+ count<`, string(b))
	_, errs, code = run("flamegraph", "--event", "cycles", "-o", svg)
	assert.Equal(t, exitError, code)
	assert.Contains(t, errs, "the recording's events are cpu-clock, page-faults")
	_, errs, code = ckRunIn(t, strings.NewReader(""), "report", "-o", filepath.Join(dir, "r.html"), "-")
	assert.Equal(t, exitError, code)
	assert.Contains(t, errs, "give a file")
}
