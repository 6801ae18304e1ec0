// Command readfloor reads a file to its end in 1 MiB reads and does nothing
// else: the least time any Go program reading the file (not mapping it;
// docs/perfdata.md says why perfcheck reads) can take, its own start-up
// included. bench/run.sh compares it with the time budget of a speed goal,
// to tell a goal perfcheck misses from one no reader can meet on that file.
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: readfloor FILE")
		os.Exit(2)
	}
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// A loop of its own: io.Copy to io.Discard would read in io.Discard's
	// 8 KiB blocks whatever buffer it is given.
	buf := make([]byte, 1<<20)
	var n int64
	for {
		k, err := f.Read(buf)
		n += int64(k)
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	fmt.Println(n)
}
