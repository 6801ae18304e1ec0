package check_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/check"
	"github.com/perfcheck/perfcheck/perfdata"
)

// Check a committed recording, print each DSO's verdict and where its
// binary was found, the summary, and the hottest functions of the
// binaries that can be trusted. The lookup is made deterministic for the
// example: a private perf cache holding the two programs the recording
// profiled, an empty root for the recorded paths (so neither this
// machine's libraries nor its kernel answer) and no debuginfod. The zero
// Options would look where `perfcheck check` does instead.
func ExampleAnalyze() {
	cache, root := tempDir(), tempDir()
	defer os.RemoveAll(cache)
	defer os.RemoveAll(root)
	c := &buildidcache.Cache{Dir: cache}
	for _, bin := range []string{"cshared", "libhot.so"} {
		if _, err := c.Add(filepath.Join("../testdata/perf/bin", bin)); err != nil {
			log.Fatal(err)
		}
	}
	opts := check.Options{Lookup: buildidcache.Options{BuildIDDir: cache, SymFS: root, DebuginfodURLs: []string{}}}
	res, err := check.Analyze(context.Background(), check.Path("../testdata/perf/cshared-fp.data"), opts)
	if err != nil {
		log.Fatal(err)
	}
	rep := res.Report()
	for _, d := range rep.DSOs {
		fmt.Printf("%-10s %3d %s", d.Verdict, d.HitsAny, filepath.Base(d.Path))
		if d.Source != "" {
			fmt.Printf(" (found in %s)", d.Source)
		}
		fmt.Println()
	}
	fmt.Println(rep.Summary())
	for _, t := range check.Top(res, check.TopOptions{N: 3, TrustedOnly: true}) {
		for _, e := range t.Entries {
			fmt.Printf("%s %5.1f%% %s (%s)\n", t.Event, t.Percent(e.Self), e.Name, filepath.Base(e.DSO.Path))
		}
	}
	// Output:
	// missing    299 libc.so.6
	// verified   299 cshared (found in perf-cache)
	// verified   170 libhot.so (found in perf-cache)
	// mismatch     2 [kernel.kallsyms]
	// missing      1 ld-linux-x86-64.so.2
	// 301 samples, 0.3% fully trusted; 1% have an untrusted leaf; 99.7% an untrusted frame
	// cpu-clock  51.5% lib_mix (libhot.so)
	// cpu-clock  30.6% main_spin (cshared)
	// cpu-clock  12.3% main_sort_step (cshared)
}

func tempDir() string {
	d, err := os.MkdirTemp("", "check-example")
	if err != nil {
		log.Fatal(err)
	}
	return d
}

// Check a recording the caller has already opened, for instance to read
// its header first: the same result as check.Path on its name, the end of
// the recording being the file's modification time too. The caller keeps
// the file and closes it.
func ExampleFile() {
	cache, root := tempDir(), tempDir()
	defer os.RemoveAll(cache)
	defer os.RemoveAll(root)
	f, err := perfdata.Open("../testdata/perf/cshared-fp.data")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	fmt.Println(f.Events()[0].Name)
	opts := check.Options{Lookup: buildidcache.Options{BuildIDDir: cache, SymFS: root, DebuginfodURLs: []string{}}}
	res, err := check.Analyze(context.Background(), check.File(f), opts)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(filepath.Base(res.File), res.Report().Summary())
	// Output:
	// cpu-clock
	// cshared-fp.data 301 samples, 0% fully trusted; 100% have an untrusted leaf; 100% an untrusted frame
}
