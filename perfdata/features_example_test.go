package perfdata_test

import (
	"errors"
	"fmt"
	"log"

	"github.com/perfcheck/perfcheck/perfdata"
)

// ExampleFeatures reads where and how a recording was made, and its
// build-id table. Each accessor decodes its section on first use and
// returns an error rather than a zero value when the section is absent
// (ErrNoFeature) or malformed (*FormatError).
func ExampleFeatures() {
	f, err := perfdata.Open("../testdata/perf/twoevents.data")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	fs := f.Features()

	version, err := fs.Version()
	if err != nil {
		log.Fatal(err)
	}
	avail, online, err := fs.NrCPUs()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("perf %s, %d of %d CPUs online\n", version, online, avail)

	if _, err := fs.DirFormat(); errors.Is(err, perfdata.ErrNoFeature) {
		fmt.Println("not a perf.data directory")
	}

	ids, err := fs.BuildIDs()
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range ids[:2] {
		fmt.Println(e.CPUMode, e.BuildID, e.Filename)
	}
	// Output:
	// perf 6.1.187, 2 of 2 CPUs online
	// not a perf.data directory
	// kernel 85c7e4e2ed76f4417e8aaad7c6b040d2bb897a26 [kernel.kallsyms]
	// user ad8b5c79a49d3fe78a633a20251339808292bf79 /work/main/testdata/perf/bin/cshared
}
