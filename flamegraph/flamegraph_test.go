package flamegraph

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/check"
	"github.com/perfcheck/perfcheck/dso"
)

func testGraph() *Graph {
	g := &Graph{Title: "t <&>", Unit: "nanoseconds", Notes: []Note{{Text: "1 DSO mismatch", Untrusted: true}}}
	comm := Frame{Name: "app"}
	main := Frame{Name: "main", Kind: dso.File, Verdict: check.Verified}
	lib := Frame{Name: "[mismatch] libhot.so", Kind: dso.File, Verdict: check.Mismatch}
	k := Frame{Name: "do_syscall_64", Kind: dso.Kernel, Verdict: check.Verified}
	g.Add([]Frame{comm, main, lib}, 60)
	g.Add([]Frame{comm, main, lib, lib}, 15)
	g.Add([]Frame{comm, main}, 20)
	g.Add([]Frame{comm, k}, 5)
	return g
}

// Each node weighs the stacks through it, and sits after its earlier
// siblings (in name order), so that offsets add up to the parent's.
func TestLayout(t *testing.T) {
	t.Parallel()
	g := testGraph()
	require.Equal(t, uint64(100), g.Total())
	boxes, depth := g.layout(0)
	assert.Equal(t, 4, depth)
	got := map[string][2]uint64{}
	for _, b := range boxes {
		got[b.n.Name+"@"+string(rune('0'+b.depth))] = [2]uint64{b.offset, b.n.total}
	}
	assert.Equal(t, map[string][2]uint64{
		"@0": {0, 100}, "app@1": {0, 100},
		"do_syscall_64@2": {0, 5}, "main@2": {5, 95},
		"[mismatch] libhot.so@3": {5, 75}, "[mismatch] libhot.so@4": {5, 15},
	}, got)
	// A frame narrower than minWeight is left out with its subtree.
	boxes, _ = g.layout(6)
	for _, b := range boxes {
		assert.NotEqual(t, "do_syscall_64", b.n.Name)
	}
}

// Names that are markup, quotes, control characters or invalid UTF-8 stay
// text: the SVG is well-formed XML whose frames carry the names as given
// (control characters and invalid bytes as U+FFFD).
func TestSVGWellFormed(t *testing.T) {
	t.Parallel()
	g := testGraph()
	hostile := "<script>alert(\"x\")</script>&amp;]]>\x01\xff'"
	g.Add([]Frame{{Name: "app"}, {Name: hostile, Kind: dso.JIT, Verdict: check.Unverified}}, 50)
	var buf bytes.Buffer
	require.NoError(t, g.WriteSVG(&buf))
	d := xml.NewDecoder(&buf)
	var names []string
	scripts := 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		if se, ok := tok.(xml.StartElement); ok {
			for _, a := range se.Attr {
				if a.Name.Local == "data-n" {
					names = append(names, a.Value)
				}
			}
			if se.Name.Local == "script" {
				scripts++
			}
		}
	}
	assert.Equal(t, 1, scripts, "only the graph's own script")
	assert.Contains(t, names, "<script>alert(\"x\")</script>&amp;]]>\uFFFD\uFFFD'")
}

// The HTML page holds its style and script, and refers to nothing outside
// itself.
func TestHTMLSelfContained(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	require.NoError(t, testGraph().WriteHTML(&buf))
	s := buf.String()
	assert.Equal(t, 1, strings.Count(s, "<script>"))
	assert.Contains(t, s, "<style>")
	assert.NotContains(t, s, "<script src")
	assert.NotContains(t, s, "<link")
	assert.Contains(t, s, `class="f fg-untrusted"`)
	assert.Contains(t, s, "t &lt;&amp;&gt;")
}
