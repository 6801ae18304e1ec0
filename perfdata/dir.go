package perfdata

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// openDir opens the perf.data directory form (docs/perfdata-format.md,
// tools/perf/Documentation/perf.data-directory-format.txt): dir/data is a
// normal perf.data file and dir/data.N are bare record streams, one per
// recording thread, in the byte order of data.
func openDir(dir string) (*File, error) {
	main := filepath.Join(dir, "data")
	f, err := Open(main)
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		f.Close()
		return nil, err
	}
	var nums []int
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), "data.")
		if !ok || !e.Type().IsRegular() {
			continue
		}
		n, err := strconv.Atoi(rest)
		if err != nil || n < 0 || strconv.Itoa(n) != rest {
			continue
		}
		nums = append(nums, n)
	}
	sort.Ints(nums)
	for _, n := range nums {
		name := filepath.Join(dir, fmt.Sprintf("data.%d", n))
		pf, err := os.Open(name)
		if err != nil {
			f.Close()
			return nil, err
		}
		fi, err := pf.Stat()
		if err != nil {
			pf.Close()
			f.Close()
			return nil, err
		}
		f.closer = append(f.closer, pf)
		f.parts = append(f.parts, filePart{name: name, r: pf, size: fi.Size()})
	}
	f.name = dir
	return f, nil
}
