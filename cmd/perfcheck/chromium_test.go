package main

import (
	"context"
	"html"
	"image"
	"image/png"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// needChromium returns Debian's chromium, which scripts/test.sh installs;
// the tests that open perfcheck's HTML and SVG in it skip where it is not
// installed.
func needChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("chromium not installed (Debian: chromium; scripts/test.sh installs it)")
	return ""
}

// headless runs chromium headless on the file name (with fragment, the
// escaped part after "#", if not empty) and returns its stdout. The network is cut
// off: every host name fails to resolve and every connection goes to a
// closed port, so a page that fetched anything would show it broken.
func headless(t *testing.T, name, fragment string, args ...string) string {
	t.Helper()
	bin := needChromium(t)
	abs, err := filepath.Abs(name)
	require.NoError(t, err)
	u := (&url.URL{Scheme: "file", Path: abs}).String()
	if fragment != "" {
		u += "#" + fragment // already escaped by the caller
	}
	full := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + t.TempDir(),
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND",
		"--window-size=1280,1000", "--hide-scrollbars"}, args...)
	// A guard against a browser that never exits, not a timed assertion.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(full, u)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	var errb strings.Builder
	cmd.Stderr = &errb
	out, err := cmd.Output()
	require.NoError(t, err, "chromium %s: %s", u, errb.String())
	return string(out)
}

// dumpDOM is the document as chromium holds it once the page's scripts
// have run.
func dumpDOM(t *testing.T, name, fragment string) string {
	t.Helper()
	return headless(t, name, fragment, "--dump-dom")
}

// screenshot renders name into png (args after the default window size
// may change it) and returns the image.
func screenshot(t *testing.T, name, fragment, pngPath string, args ...string) image.Image {
	t.Helper()
	headless(t, name, fragment, append([]string{"--screenshot=" + pngPath}, args...)...)
	f, err := os.Open(pngPath)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err, "%s", pngPath)
	return img
}

// artifactDir is where a test keeps what a person may want to look at
// after it (screenshots): a directory under the system's temporary one,
// kept after the test, named in its log.
func artifactDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "perfcheck-"+strings.ReplaceAll(t.Name(), "/", "-")+"-")
	require.NoError(t, err)
	t.Logf("screenshots kept in %s", d)
	return d
}

// domFrame is a frame of a flame graph as the browser's DOM holds it.
type domFrame struct {
	id, class, name, fill string
	depth                 int
	offset, weight        uint64
	x, width              float64
	hidden                bool
}

var domFrameRE = regexp.MustCompile(`<g id="(f\d+)" class="([^"]*)" data-d="(\d+)" data-o="(\d+)" data-v="(\d+)" data-n="([^"]*)"([^>]*)><title>[^<]*</title>` +
	`<rect x="([0-9.]+)" y="[0-9.]+" width="([0-9.]+)" height="[0-9.]+" fill="([^"]*)"`)

// domFrames reads the frames of the flame graph in dom.
func domFrames(t *testing.T, dom string) []domFrame {
	t.Helper()
	var out []domFrame
	for _, m := range domFrameRE.FindAllStringSubmatch(dom, -1) {
		f := domFrame{id: m[1], class: m[2], name: html.UnescapeString(m[6]), fill: m[10],
			hidden: strings.Contains(m[7], "display: none")}
		f.depth, _ = strconv.Atoi(m[3])
		f.offset, _ = strconv.ParseUint(m[4], 10, 64)
		f.weight, _ = strconv.ParseUint(m[5], 10, 64)
		f.x, _ = strconv.ParseFloat(m[8], 64)
		f.width, _ = strconv.ParseFloat(m[9], 64)
		out = append(out, f)
	}
	require.NotEmpty(t, out, "no flame graph frame in the DOM:\n%.2000s", dom)
	require.Equal(t, 0, out[0].depth, "the first frame is the root")
	return out
}

// outermost are the frames named name that no frame of that name holds
// (an ancestor: a frame at a lower depth whose weight spans theirs):
// together they span the weight of the stacks through name.
func outermost(frames []domFrame, name string) []domFrame {
	var matches, out []domFrame
	for _, f := range frames {
		if f.name == name && !f.hidden {
			matches = append(matches, f)
		}
	}
	for _, f := range matches {
		inside := false
		for _, o := range matches {
			inside = inside || o.depth < f.depth && f.offset >= o.offset && f.offset+f.weight <= o.offset+o.weight
		}
		if !inside {
			out = append(out, f)
		}
	}
	return out
}

// attr is the value of the first attribute name="..." in s.
func attr(s, name string) string {
	m := regexp.MustCompile(`\s` + regexp.QuoteMeta(name) + `="([^"]*)"`).FindStringSubmatch(s)
	if m == nil {
		return ""
	}
	return html.UnescapeString(m[1])
}

// pixelsNear counts the pixels of img within 24 of colour c in each
// channel.
func pixelsNear(img image.Image, c [3]int) int {
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			d := func(v uint32, want int) bool { return abs(int(v>>8)-want) <= 24 }
			if d(r, c[0]) && d(g, c[1]) && d(bl, c[2]) {
				n++
			}
		}
	}
	return n
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// noNetworkRefs fails when the file refers to anything outside itself: a
// src or href that is not a fragment, a url() that is not, an @import. The
// SVG namespace names a standard, not a resource.
func noNetworkRefs(t *testing.T, name string) {
	t.Helper()
	b, err := os.ReadFile(name)
	require.NoError(t, err)
	s := strings.ReplaceAll(string(b), `xmlns="http://www.w3.org/2000/svg"`, "")
	for _, re := range []string{`(?i)\b(src|href)\s*=\s*["']?[^"'#\s>]`, `(?i)url\(\s*["']?[^#"'\s]`, `(?i)@import`, `(?i)https?://`} {
		require.NotRegexp(t, re, s, "%s refers to something outside itself", name)
	}
}
