package addrspace_test

import (
	"fmt"
	"log"

	"github.com/perfcheck/perfcheck/addrspace"
	"github.com/perfcheck/perfcheck/perfdata"
)

// Print the DSO, file offset and recorded identity of the first samples of
// a recording: feed every record to a Tracker in time order, and look each
// sample's IP up in its process at that moment.
func Example() {
	f, err := perfdata.Open("../testdata/perf/forkexec.data")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	t := addrspace.New()
	n := 0
	rs := f.Records(perfdata.RecordsOptions{Ordered: true})
	for rs.Next() && n < 5 {
		s, ok := rs.Record().(*perfdata.Sample)
		if !ok {
			t.Update(rs.Record())
			continue
		}
		n++
		m := t.Lookup(s.PID(), s.CPUMode(), s.IP)
		if m == nil {
			fmt.Printf("pid %d %#x: no mapping\n", s.PID(), s.IP)
			continue
		}
		id := ""
		switch {
		case len(m.BuildID) > 0:
			id = " build-id " + m.BuildID.String()
		case m.HasDevIno:
			id = fmt.Sprintf(" inode %d:%d/%d", m.Maj, m.Min, m.Ino)
		}
		fmt.Printf("pid %d: %s %s+%#x%s\n", s.PID(), m.Kind, m.Path, m.Offset(s.IP), id)
	}
	if err := rs.Err(); err != nil {
		log.Fatal(err)
	}
	// perf script -G -F pid,ip,dso -i forkexec.data names the same DSOs.

	// Output:
	// pid 7507: kernel [kernel.kallsyms]_text+0xffffffff81bb8818
	// pid 7507: kernel [kernel.kallsyms]_text+0xffffffff8225fd19
	// pid 7509: file /usr/lib/x86_64-linux-gnu/libc.so.6+0xd4361 inode 254:0/326269
	// pid 7507: file /work/main/testdata/perf/bin/forkparent+0x11f6 inode 254:0/5308752
	// pid 7509: kernel [kernel.kallsyms]_text+0xffffffff816ac5b1
}
