package flamegraph

import (
	"io"
	"strconv"
	"testing"

	"github.com/perfcheck/perfcheck/check"
	"github.com/perfcheck/perfcheck/dso"
)

// benchGraph is a graph of 4096 distinct stacks 40 to 120 frames deep over
// 64 function names, the shape of bench/README.md's deep recording.
func benchGraph() *Graph {
	g := &Graph{Title: "bench", Unit: "nanoseconds"}
	var stack []Frame
	for s := 0; s < 4096; s++ {
		stack = append(stack[:0], Frame{Name: "deepstack"})
		depth := 40 + s%81
		for d := 0; d < depth; d++ {
			stack = append(stack, Frame{Name: "fn_" + strconv.Itoa((s>>uint(d%12)+d)%64), Kind: dso.File, Verdict: check.Verified})
		}
		g.Add(stack, uint64(1000+s))
	}
	return g
}

func BenchmarkWriteHTML(b *testing.B) {
	g := benchGraph()
	b.ReportAllocs()
	for b.Loop() {
		if err := g.WriteHTML(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}
