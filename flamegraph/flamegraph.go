// Package flamegraph draws perfcheck's stacks as a flame graph in one
// self-contained file: an SVG (WriteSVG) or an HTML page (WriteHTML), or a
// part of a larger page (WriteFragment). Nothing is fetched when the file
// is opened: the style and the script that zooms and searches are written
// into it.
//
// A Graph is built by Add, one stack (root first) and its weight at a
// time. Frames are coloured by the kind of DSO their code is in; frames of
// a DSO whose verdict refuses names (mismatch, missing, replaced) are
// hatched grey with a red outline, and their label carries the verdict,
// so that untrusted weight is seen where it lies.
//
// # Security
//
// Every name is escaped for the markup it lands in; the script reads names
// only as text (textContent), so a function name cannot inject markup.
package flamegraph

import (
	"cmp"
	"slices"

	"github.com/perfcheck/perfcheck/check"
	"github.com/perfcheck/perfcheck/dso"
)

// Frame is one frame of a stack as drawn.
type Frame struct {
	Name string   // the label
	Kind dso.Kind // the kind of DSO the code is in: the colour
	// Verdict is the DSO's; a verdict that refuses names draws the frame
	// hatched. 0 marks a frame that is not code (a process's root frame).
	Verdict check.Verdict
}

func (f Frame) untrusted() bool { return f.Verdict != 0 && !f.Verdict.Trusted() }

// Note is a line of the summary drawn above the graph.
type Note struct {
	Text      string
	Untrusted bool // drawn as a warning
}

// Graph is a flame graph under construction. The zero value is an empty
// graph.
type Graph struct {
	Title string
	Unit  string // what the weights count ("nanoseconds", "samples")
	Notes []Note // the verdict summary, drawn under the title
	root  node
}

// node is a frame in its stack's context: every stack that passes through
// the same frames from the root shares it.
type node struct {
	Frame
	total    uint64 // the weight of the stacks through this node
	children []*node
	index    map[Frame]*node
}

// Add adds weight to stack, root first.
func (g *Graph) Add(stack []Frame, weight uint64) {
	n := &g.root
	n.total += weight
	for _, f := range stack {
		c := n.index[f]
		if c == nil {
			if n.index == nil {
				n.index = map[Frame]*node{}
			}
			c = &node{Frame: f}
			n.index[f] = c
			n.children = append(n.children, c)
		}
		c.total += weight
		n = c
	}
}

// Total is the weight of every stack added.
func (g *Graph) Total() uint64 { return g.root.total }

// box is a node placed: its weight before it among its siblings' (offset
// from the left, in weight units) and its depth (0: the root).
type box struct {
	n      *node
	offset uint64
	depth  int
}

// layout places every node whose width is at least minWeight, root first,
// each node's children in name order (as flamegraph.pl sorts folded
// stacks), so that a frame's place does not depend on the order stacks
// came in. A narrower node is left out with its subtree: it could not be
// seen or pointed at; its weight stays in its parent's width.
func (g *Graph) layout(minWeight uint64) (boxes []box, depth int) {
	var walk func(n *node, offset uint64, d int)
	walk = func(n *node, offset uint64, d int) {
		boxes = append(boxes, box{n, offset, d})
		depth = max(depth, d)
		slices.SortFunc(n.children, func(a, b *node) int {
			return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Verdict, b.Verdict))
		})
		for _, c := range n.children {
			if c.total >= minWeight && c.total > 0 {
				walk(c, offset, d+1)
			}
			offset += c.total
		}
	}
	walk(&g.root, 0, 0)
	return boxes, depth
}
