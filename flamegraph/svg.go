package flamegraph

import (
	"bufio"
	_ "embed"
	"fmt"
	"hash/fnv"
	"html"
	"io"
	"strconv"
	"strings"

	"github.com/perfcheck/perfcheck/dso"
)

// The drawing's geometry, in SVG user units (pixels at scale 1), as
// flamegraph.pl draws: 1200 wide, 16 per frame, 12-pixel labels.
const (
	width      = 1200
	pad        = 10
	frameH     = 16
	fontSize   = 12
	charW      = 7   // the average label character at fontSize, to cut labels without a browser
	minWidth   = 0.1 // narrower frames are left out (flamegraph.pl's --minwidth)
	headerLine = 18
)

//go:embed flamegraph.js
var script string

//go:embed flamegraph.css
var style string

// svgOptions choose what the <svg> element holds besides the frames.
type svgOptions struct {
	standalone bool // a file of its own: header, controls and script inside the SVG
}

// WriteSVG writes the graph as a standalone SVG file: the title, the
// notes and a legend above the frames, and a script that zooms into a
// frame on click and searches (the "Search" control, or "#s=REGEXP" at the
// end of the file's URL) where the viewer runs scripts.
func (g *Graph) WriteSVG(w io.Writer) error {
	bw := bufio.NewWriter(w)
	boxes, depth := g.layout(minWeight(g.Total()))
	g.writeSVG(bw, boxes, depth, svgOptions{standalone: true})
	return bw.Flush()
}

// writeSVG writes the <svg> element of the graph laid out in boxes.
func (g *Graph) writeSVG(w *bufio.Writer, boxes []box, depth int, o svgOptions) {
	top := 4
	if o.standalone {
		top = 2*headerLine + headerLine*len(g.Notes) + 2*headerLine
	}
	height := top + (depth+1)*frameH + 2*headerLine
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" version="1.1" id="fg-svg" class="fg-svg" viewBox="0 0 %d %d"`, width, height)
	if o.standalone {
		fmt.Fprintf(w, ` width="%d" height="%d"`, width, height)
	} else {
		w.WriteString(` width="100%"`)
	}
	fmt.Fprintf(w, ` data-width="%d" data-pad="%d" data-total="%d" data-unit="%s">`+"\n", width, pad, g.Total(), esc(g.unit()))
	w.WriteString(`<defs><pattern id="fg-hatch" patternUnits="userSpaceOnUse" width="6" height="6" patternTransform="rotate(45)">` +
		`<rect width="6" height="6" fill="#e4e4e4"/><rect width="2.5" height="6" fill="#8c8c8c"/></pattern></defs>` + "\n")
	if o.standalone {
		fmt.Fprintf(w, "<style>%s</style>\n", style)
		g.writeSVGHeader(w, boxes)
	}
	w.WriteString(`<g id="fg-frames">` + "\n")
	base := top + depth*frameH // the root's y: flames grow upwards
	for i, b := range boxes {
		g.writeFrame(w, i, b, base)
	}
	w.WriteString("</g>\n")
	if o.standalone {
		fmt.Fprintf(w, `<text id="fg-details" x="%d" y="%d"> </text>`+"\n", pad, height-headerLine/2)
		fmt.Fprintf(w, "<script><![CDATA[\n%s]]></script>\n", script)
	}
	w.WriteString("</svg>\n")
}

// writeSVGHeader writes the standalone SVG's title, notes, legend and
// controls (the HTML page has them as HTML).
func (g *Graph) writeSVGHeader(w *bufio.Writer, boxes []box) {
	y := headerLine + 6
	fmt.Fprintf(w, `<text class="fg-title" x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", width/2, y, esc(g.Title))
	for _, n := range g.Notes {
		y += headerLine
		class := "fg-note"
		if n.Untrusted {
			class += " fg-bad"
		}
		// An SVG text does not wrap: a long note is cut, whole in its
		// tooltip.
		fmt.Fprintf(w, `<text class="%s" x="%d" y="%d"><title>%s</title>%s</text>`+"\n",
			class, pad, y, esc(n.Text), esc(cutLabel(n.Text, (width-2*pad)*0.92)))
	}
	y += headerLine + 4
	x := pad
	for _, l := range legend(boxes) {
		fmt.Fprintf(w, `<rect x="%d" y="%d" width="12" height="12" fill="%s"%s/>`, x, y-10, l.fill, l.attrs)
		fmt.Fprintf(w, `<text class="fg-legend" x="%d" y="%d">%s</text>`+"\n", x+16, y, esc(l.label))
		x += 16 + len(l.label)*charW + 18
	}
	y += headerLine
	fmt.Fprintf(w, `<text id="fg-reset" class="fg-control" x="%d" y="%d">Reset zoom</text>`, pad, y)
	fmt.Fprintf(w, `<text id="fg-search-button" class="fg-control" x="%d" y="%d" text-anchor="end">Search</text>`, width-pad, y)
	fmt.Fprintf(w, `<text id="fg-matched" x="%d" y="%d" text-anchor="end"> </text>`+"\n", width-pad-60, y)
}

// writeFrame writes box i: a group with the full name and weight as its
// tooltip, the rectangle and the label (cut to fit; the script refits it
// when zooming). data-o and data-v are its offset and weight, which the
// search adds up exactly.
func (g *Graph) writeFrame(w *bufio.Writer, i int, b box, base int) {
	total := float64(g.Total())
	span := float64(width - 2*pad)
	x := pad + float64(b.offset)/total*span
	wd := float64(b.n.total) / total * span
	y := base - b.depth*frameH
	name := b.n.Name
	if b.depth == 0 {
		name = "all"
	}
	class := "f"
	if b.n.untrusted() {
		class += " fg-untrusted"
	}
	fmt.Fprintf(w, `<g id="f%d" class="%s" data-d="%d" data-o="%d" data-v="%d" data-n="%s">`,
		i, class, b.depth, b.offset, b.n.total, esc(name))
	fmt.Fprintf(w, "<title>%s</title>", esc(g.tooltip(b.n, name)))
	fmt.Fprintf(w, `<rect x="%.2f" y="%d" width="%.2f" height="%d" fill="%s"/>`, x, y, wd, frameH-1, fill(b.n))
	fmt.Fprintf(w, `<text x="%.2f" y="%d">%s</text></g>`+"\n", x+3, y+frameH-4, esc(cutLabel(name, wd)))
}

// tooltip is a frame's full description: name, weight and share, and the
// DSO's kind and verdict where it is code.
func (g *Graph) tooltip(n *node, name string) string {
	pct := strconv.FormatFloat(float64(n.total)*100/float64(g.Total()), 'f', 2, 64)
	s := name + " (" + strconv.FormatUint(n.total, 10) + " " + g.unit() + ", " + pct + "%)"
	if n.Verdict != 0 {
		s += " — " + n.Kind.String() + ", " + n.Verdict.String()
		if n.untrusted() {
			s += ": not the binary that ran, so not named"
		}
	}
	return s
}

func (g *Graph) unit() string {
	if g.Unit == "" {
		return "samples"
	}
	return g.Unit
}

// minWeight is the weight of a frame minWidth wide.
func minWeight(total uint64) uint64 {
	return uint64(float64(total) * minWidth / float64(width-2*pad))
}

// cutLabel cuts name to fit a frame wd wide, as flamegraph.pl does: ".."
// marks the cut, and a frame too narrow for three characters gets none.
func cutLabel(name string, wd float64) string {
	fit := int((wd - 6) / charW)
	r := []rune(name)
	if fit < 3 {
		return ""
	}
	if len(r) <= fit {
		return name
	}
	return string(r[:fit-2]) + ".."
}

// legendEntry is a swatch of the legend.
type legendEntry struct{ fill, attrs, label string }

// legend lists the colours the graph uses, in a fixed order.
func legend(boxes []box) []legendEntry {
	seen := map[string]bool{}
	for _, b := range boxes[1:] {
		seen[class(b.n.Frame)] = true
	}
	var out []legendEntry
	for _, c := range classes {
		if seen[c.name] {
			out = append(out, legendEntry{c.swatch, c.attrs, c.label})
		}
	}
	return out
}

// classes are the colour classes: what a frame is, then its colour.
var classes = []struct{ name, label, swatch, attrs string }{
	{"process", "process", "rgb(215,215,215)", ""},
	{"user", "user code", "rgb(230,110,30)", ""},
	{"kernel", "kernel", "rgb(110,150,230)", ""},
	{"vdso", "vdso", "rgb(200,120,210)", ""},
	{"jit", "JIT", "rgb(80,200,90)", ""},
	{"nofile", "no file", "rgb(200,195,150)", ""},
	{"untrusted", "untrusted: not the binary that ran, not named", "url(#fg-hatch)", ` stroke="#c00000" stroke-width="1"`},
}

func class(f Frame) string {
	switch {
	case f.untrusted():
		return "untrusted"
	case f.Verdict == 0:
		return "process"
	}
	switch f.Kind {
	case dso.File:
		return "user"
	case dso.Kernel, dso.Module:
		return "kernel"
	case dso.VDSO, dso.Vsyscall:
		return "vdso"
	case dso.JIT:
		return "jit"
	}
	return "nofile"
}

// fill is a frame's colour: its class's hue, varied by a hash of its name
// (as flamegraph.pl varies it) so that neighbours stand apart and a
// function keeps its colour across graphs.
func fill(n *node) string {
	h := fnv.New32a()
	h.Write([]byte(n.Name))
	s := h.Sum32()
	v1, v2 := float64(s&0xff)/255, float64(s>>8&0xff)/255
	c := func(base, span float64, v float64) int { return int(base + span*v) }
	switch class(n.Frame) {
	case "untrusted":
		return "url(#fg-hatch)"
	case "process":
		return fmt.Sprintf("rgb(%d,%d,%d)", c(200, 30, v1), c(200, 30, v1), c(200, 30, v1))
	case "user":
		return fmt.Sprintf("rgb(%d,%d,%d)", c(205, 50, v2), c(40, 190, v1), c(0, 55, v2))
	case "kernel":
		return fmt.Sprintf("rgb(%d,%d,%d)", c(80, 60, v1), c(120, 60, v1), c(200, 55, v2))
	case "vdso":
		return fmt.Sprintf("rgb(%d,%d,%d)", c(180, 50, v1), c(90, 50, v1), c(190, 55, v2))
	case "jit":
		return fmt.Sprintf("rgb(%d,%d,%d)", c(50, 60, v1), c(180, 60, v1), c(50, 60, v2))
	}
	return fmt.Sprintf("rgb(%d,%d,%d)", c(180, 40, v1), c(175, 40, v1), c(130, 40, v2))
}

// esc escapes s for XML and HTML text and attributes. XML admits no
// control characters, escaped or not: they become U+FFFD, as invalid
// UTF-8 does.
func esc(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' || r == 0x7f {
			return '\uFFFD'
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
	return html.EscapeString(s)
}
