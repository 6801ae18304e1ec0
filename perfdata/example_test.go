package perfdata_test

import (
	"fmt"
	"log"

	"github.com/perfcheck/perfcheck/perfdata"
)

// Count the samples of each event and the processes that ran, reading the
// records in time order.
func ExampleFile_Records() {
	f, err := perfdata.Open("../testdata/perf/twoevents.data")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	samples := map[string]int{}
	comms := 0
	rs := f.Records(perfdata.RecordsOptions{Ordered: true})
	for rs.Next() {
		switch r := rs.Record().(type) {
		case *perfdata.Sample:
			samples[rs.Events()[r.EventIndex].Name]++
		case *perfdata.Comm:
			comms++
		}
	}
	if err := rs.Err(); err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(f.Events()), "events,", comms, "COMM records")
	fmt.Println("cpu-clock:", samples["cpu-clock"])
	fmt.Println("page-faults:", samples["page-faults"])
	// Output:
	// 2 events, 2 COMM records
	// cpu-clock: 202
	// page-faults: 7
}

// Walk a sample's callchain without its context markers.
func ExampleSample_Frames() {
	f, err := perfdata.Open("../testdata/perf/cshared-fp.data")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	user, kernel := 0, 0
	rs := f.Records(perfdata.RecordsOptions{})
	for rs.Next() {
		if s, ok := rs.Record().(*perfdata.Sample); ok {
			for mode := range s.Frames() {
				switch mode {
				case perfdata.CPUModeUser:
					user++
				case perfdata.CPUModeKernel:
					kernel++
				}
			}
		}
	}
	if err := rs.Err(); err != nil {
		log.Fatal(err)
	}
	fmt.Println("user frames:", user)
	fmt.Println("kernel frames:", kernel)
	// perf script -F ip -i cshared-fp.data prints the same 1530 user and
	// 10 kernel addresses.

	// Output:
	// user frames: 1530
	// kernel frames: 10
}
