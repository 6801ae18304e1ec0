package check_test

import (
	"context"
	"fmt"
	"log"

	"github.com/perfcheck/perfcheck/check"
)

// Check a recording, print each DSO's verdict and the hottest trusted
// leaf functions; frames of untrusted binaries print as dso+0xoffset.
func ExampleAnalyze() {
	// The zero Options look where perfcheck check does: perf's cache,
	// /usr/lib/debug, $DEBUGINFOD_URLS, the path.
	res, err := check.Analyze(context.Background(), check.Path("perf.data"), check.Options{})
	if err != nil {
		log.Fatal(err)
	}
	rep := res.Report()
	for _, d := range rep.DSOs {
		fmt.Printf("%-10s %6d %6d %s (%s)\n", d.Verdict, d.HitsLeaf, d.HitsAny, d.Path, d.Reason)
	}
	fmt.Println(rep.Summary())

	self := map[string]uint64{}
	for _, a := range res.Aggregates() {
		self[a.Stack.Locations()[0].String()] += a.Samples
	}
	for name, n := range self {
		fmt.Println(n, name)
	}
	if rep.Failed(false) {
		for _, a := range rep.Advice {
			fmt.Println("advice:", a.Text, a.Paths)
		}
	}
}
