package flamegraph

import (
	"bufio"
	"fmt"
	"io"
)

// WriteHTML writes the graph as an HTML page of its own: the title, the
// notes, then the graph as WriteFragment writes it.
func (g *Graph) WriteHTML(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>%s</title>\n</head>\n<body>\n", esc(g.Title))
	fmt.Fprintf(bw, "<h1 class=\"fg-title\">%s</h1>\n", esc(g.Title))
	if len(g.Notes) > 0 {
		bw.WriteString("<ul class=\"fg-notes\">\n")
		for _, n := range g.Notes {
			class := "fg-note"
			if n.Untrusted {
				class += " fg-bad"
			}
			fmt.Fprintf(bw, "<li class=\"%s\">%s</li>\n", class, esc(n.Text))
		}
		bw.WriteString("</ul>\n")
	}
	g.writeFragment(bw)
	bw.WriteString("</body>\n</html>\n")
	return bw.Flush()
}

// WriteFragment writes the graph as a part of an HTML page (a <div> with
// its style, controls and script), for pages that hold more than the
// graph. A page holds at most one: the parts have fixed ids.
func (g *Graph) WriteFragment(w io.Writer) error {
	bw := bufio.NewWriter(w)
	g.writeFragment(bw)
	return bw.Flush()
}

func (g *Graph) writeFragment(w *bufio.Writer) {
	boxes, depth := g.layout(minWeight(g.Total()))
	fmt.Fprintf(w, "<div class=\"fg\" id=\"fg\">\n<style>%s</style>\n", style)
	w.WriteString("<div class=\"fg-bar\">\n<span class=\"fg-legend\">")
	for _, l := range legend(boxes) {
		fmt.Fprintf(w, `<span class="fg-key"><svg width="12" height="12"><rect width="12" height="12" fill="%s"%s/></svg> %s</span> `,
			l.fill, l.attrs, esc(l.label))
	}
	w.WriteString("</span>\n")
	w.WriteString(`<span class="fg-controls"><button id="fg-reset" type="button">Reset zoom</button> ` +
		`<input id="fg-search" type="search" placeholder="search (regular expression)" size="28"> ` +
		`<span id="fg-matched"></span></span>` + "\n</div>\n")
	g.writeSVG(w, boxes, depth, svgOptions{})
	w.WriteString("<div id=\"fg-details\">&nbsp;</div>\n</div>\n")
	fmt.Fprintf(w, "<script>\n%s</script>\n", script)
}
