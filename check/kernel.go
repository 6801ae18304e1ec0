package check

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync"
)

var (
	kallsymsOnce sync.Once
	kallsymsRefs map[string]uint64
)

// runningKernelSymbol returns the address of one of perf's reference
// symbols (_text, _stext) in this boot's /proc/kallsyms; false when absent
// or hidden (all zero under kptr_restrict).
func runningKernelSymbol(name string) (uint64, bool) {
	kallsymsOnce.Do(func() {
		kallsymsRefs = map[string]uint64{}
		f, err := os.Open("/proc/kallsyms")
		if err != nil {
			return
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// "ffffffff81000000 T _text"
			fs := strings.Fields(sc.Text())
			if len(fs) < 3 || len(fs) > 3 {
				continue
			}
			switch fs[2] {
			case "_text", "_stext", "_etext", "startup_64":
				if a, err := strconv.ParseUint(fs[0], 16, 64); err == nil && a != 0 {
					kallsymsRefs[fs[2]] = a
				}
			}
		}
	})
	a, ok := kallsymsRefs[name]
	return a, ok
}

// kernelRelease returns the running kernel's release (uname -r).
func kernelRelease() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return ""
	}
	return string(bytes.TrimSpace(b))
}
