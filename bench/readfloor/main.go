// Command readfloor reads a file to its end in 1 MiB reads and does nothing
// else: the least time any Go program reading the file (not mapping it;
// docs/perfdata.md says why perfcheck reads) can take, its own start-up
// included. bench/run.sh compares it with the time budget of a speed goal,
// to tell a goal perfcheck misses from one no reader can meet on that file.
//
// With -ordered it reads the file as a perf.data recording, every record
// decoded and delivered in perf's time order (perfdata's ordered reading),
// and does nothing with them: the floor of a command that must see the
// samples in time order, as check does, however its own work is spread
// over the cores.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/perfcheck/perfcheck/perfdata"
)

func main() {
	ordered := flag.Bool("ordered", false, "read the records in time order with perfdata")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: readfloor [-ordered] FILE")
		os.Exit(2)
	}
	var n int64
	var err error
	if *ordered {
		n, err = readOrdered(flag.Arg(0))
	} else {
		n, err = readAll(flag.Arg(0))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(n)
}

// readAll reads the file and returns its size.
func readAll(name string) (int64, error) {
	f, err := os.Open(name)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	// A loop of its own: io.Copy to io.Discard would read in io.Discard's
	// 8 KiB blocks whatever buffer it is given.
	buf := make([]byte, 1<<20)
	var n int64
	for {
		k, err := f.Read(buf)
		n += int64(k)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// readOrdered reads the recording's records in time order and returns how
// many there were.
func readOrdered(name string) (int64, error) {
	f, err := perfdata.Open(name)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	rs := f.Records(perfdata.RecordsOptions{Ordered: true})
	var n int64
	for rs.Next() {
		n++
	}
	return n, rs.Err()
}
