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
	kallsymsMu   sync.Mutex
	kallsymsRefs = map[string]uint64{}
)

// runningKernelSymbol returns the address of one of perf's reference
// symbols (_text, _stext) in this boot's /proc/kallsyms; false when absent
// or hidden (all zero under kptr_restrict). The kernel generates
// /proc/kallsyms as it is read and lists the core kernel's text first, so
// the scan stops as soon as the symbol is found: a few kilobytes, not the
// whole listing.
func runningKernelSymbol(name string) (uint64, bool) {
	kallsymsMu.Lock()
	defer kallsymsMu.Unlock()
	if a, ok := kallsymsRefs[name]; ok {
		return a, a != 0
	}
	kallsymsRefs[name] = 0
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "ffffffff81000000 T _text"
		fs := strings.Fields(sc.Text())
		if len(fs) != 3 || fs[2] != name {
			continue
		}
		a, err := strconv.ParseUint(fs[0], 16, 64)
		if err != nil || a == 0 {
			return 0, false
		}
		kallsymsRefs[name] = a
		return a, true
	}
	return 0, false
}

// kernelRelease returns the running kernel's release (uname -r).
func kernelRelease() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return ""
	}
	return string(bytes.TrimSpace(b))
}
