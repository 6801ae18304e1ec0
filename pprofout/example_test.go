package pprofout_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/check"
	"github.com/perfcheck/perfcheck/pprofout"
)

// Convert a checked recording to a pprof profile and print its sample
// types and each mapping with its build-id. The lookup is a private perf
// cache holding the two profiled programs and an empty root for the
// recorded paths, so the output does not depend on this machine.
func ExampleConvert() {
	cache, err := os.MkdirTemp("", "pprofout-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(cache)
	c := &buildidcache.Cache{Dir: cache}
	for _, bin := range []string{"cshared", "libhot.so"} {
		if _, err := c.Add(filepath.Join("../testdata/perf/bin", bin)); err != nil {
			log.Fatal(err)
		}
	}
	opts := check.Options{Lookup: buildidcache.Options{BuildIDDir: cache, SymFS: filepath.Join(cache, "root"), DebuginfodURLs: []string{}}}
	res, err := check.Analyze(context.Background(), check.Path("../testdata/perf/cshared-fp.data"), opts)
	if err != nil {
		log.Fatal(err)
	}
	p, err := pprofout.Convert(res, pprofout.Options{})
	if err != nil {
		log.Fatal(err)
	}
	for _, st := range p.SampleType {
		fmt.Printf("sample type %s/%s\n", st.Type, st.Unit)
	}
	for _, m := range p.Mapping {
		fmt.Printf("mapping %s: build-id %q, functions %v\n", filepath.Base(m.File), m.BuildID, m.HasFunctions)
	}
	// Output:
	// sample type samples/count
	// sample type cpu-clock/nanoseconds
	// mapping cshared: build-id "ad8b5c79a49d3fe78a633a20251339808292bf79", functions true
	// mapping libc.so.6 [missing]: build-id "", functions false
	// mapping libhot.so: build-id "aebfba490ca2999a3556d11af444f9c41b7d8ac9", functions true
	// mapping [kernel.kallsyms] [mismatch]: build-id "85c7e4e2ed76f4417e8aaad7c6b040d2bb897a26", functions false
	// mapping ld-linux-x86-64.so.2 [missing]: build-id "7ebc65e52f2bbea498b4040fa92f7238377aaba9", functions false
}
