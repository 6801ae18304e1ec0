package check

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/perfdata"
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

// runningVDSOFile writes this process's vdso image, when its build-id is
// id, to a temporary file (mode 0600, removed by cleanup) so that the
// symbolizer can open it: perf does the same (vdso__findnew in
// tools/perf/util/vdso.c).
func runningVDSOFile(id perfdata.BuildID) (string, func(), error) {
	img, ident, err := buildidcache.VDSO()
	if err != nil {
		return "", nil, err
	}
	if !sameBuildID(ident.BuildID, id) {
		return "", nil, fmt.Errorf("running vdso has build-id %x, not %s", ident.BuildID, id)
	}
	f, err := os.CreateTemp("", "perfcheck-vdso-*.so")
	if err != nil {
		return "", nil, err
	}
	name := f.Name()
	cleanup := func() { os.Remove(name) }
	if _, err := f.Write(img); err != nil {
		f.Close()
		cleanup()
		return "", nil, err
	}
	if err := f.Close(); err != nil {
		cleanup()
		return "", nil, err
	}
	return name, cleanup, nil
}
