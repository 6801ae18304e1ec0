package buildidcache_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/perfcheck/perfcheck/buildidcache"
)

// The binaries that the committed recordings profiled.
const fixtureBin = "../testdata/perf/bin"

// A file's identities, read from its notes: the GNU build-id that perf
// records, the Go toolchain's own build-id, and how much a symbolizer can
// learn from it.
func ExampleReadFileIdentity() {
	for _, name := range []string{"cshared", "goprog"} {
		id, err := buildidcache.ReadFileIdentity(filepath.Join(fixtureBin, name))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: gnu %v, %d-bit, debug %v\n", name, id.BuildID, id.Class, id.Debug)
		if id.GoBuildID != "" {
			fmt.Printf("%s: go %s\n", name, id.GoBuildID)
		}
	}
	// Output:
	// cshared: gnu ad8b5c79a49d3fe78a633a20251339808292bf79, 64-bit, debug dwarf
	// goprog: gnu 3bbcdd27d9d1f692b3b6e2511771de5156b990a7, 64-bit, debug dwarf
	// goprog: go rC3y6fPNFoQCQ1hy5-9O/vfqa_Tb2lAJM-ug2wMrT/bI_R1Qq_dtMUcH2JFGe3/cKBCYCPYM8e4otj5CAqj
}

// Adding a binary writes perf's layout: the binary under its path and
// build-id, and a relative link under .build-id that perf follows.
func ExampleCache_Add() {
	dir, err := os.MkdirTemp("", "example-cache")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	c := &buildidcache.Cache{Dir: dir, DebugDirs: []string{}}
	e, err := c.Add(filepath.Join(fixtureBin, "libhot.so"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(e.BuildID, e.Files, e.Added)

	id := e.BuildID.String()
	link, err := os.Readlink(filepath.Join(dir, ".build-id", id[:2], id[2:]))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("link is relative:", !filepath.IsAbs(link))
	fmt.Println("link leads to the entry:", filepath.Join(dir, ".build-id", id[:2], link) == e.Dir)

	again, err := c.Add(filepath.Join(fixtureBin, "libhot.so"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("added again:", again.Added)
	// Output:
	// aebfba490ca2999a3556d11af444f9c41b7d8ac9 [elf] true
	// link is relative: true
	// link leads to the entry: true
	// added again: false
}

// Resolving a recorded build-id: the binary that ran was rebuilt or
// deleted since, but perf's cache kept a copy; another build-id is found
// nowhere, and the error says where it was looked for.
func ExampleResolver_Resolve() {
	dir, err := os.MkdirTemp("", "example-resolve")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	cache := &buildidcache.Cache{Dir: dir, DebugDirs: []string{}}
	e, err := cache.Add(filepath.Join(fixtureBin, "forkchild"))
	if err != nil {
		log.Fatal(err)
	}
	other, err := buildidcache.ReadFileIdentity(filepath.Join(fixtureBin, "forkparent"))
	if err != nil {
		log.Fatal(err)
	}

	// Only this cache: no debug directory, no debuginfod server.
	r := buildidcache.New(buildidcache.Options{BuildIDDir: dir, DebugDirs: []string{}, DebuginfodURLs: []string{}})
	res, err := r.Resolve(context.Background(), buildidcache.Query{BuildID: e.BuildID, Path: "/gone/forkchild"})
	if err != nil {
		log.Fatal(err)
	}
	rel, _ := filepath.Rel(dir, res.Identity.Path)
	fmt.Println("found by", res.Identity.Locator, "verified by", res.Identity.Verified+":", rel)

	_, err = r.Resolve(context.Background(), buildidcache.Query{BuildID: other.BuildID, Path: "/gone/forkparent"})
	var nf *buildidcache.NotFoundError
	if errors.As(err, &nf) {
		fmt.Println("not found:", errors.Is(err, buildidcache.ErrNotFound))
		for _, t := range nf.Tried {
			fmt.Println("  tried", strings.ReplaceAll(t, dir, "CACHE"))
		}
	}
	// Output:
	// found by perf-cache verified by build-id: .build-id/30/0344e1b5921a4c9eb45803d30e4f3a8b5bd13c/elf
	// not found: true
	//   tried perf-cache: CACHE/.build-id/14/d340559a557555cf28c520ede1c5714c0e005b
	//   tried debuginfod debuginfo: no file with this build-id found: no debuginfod URL configured
	//   tried path: /gone/forkparent
	//   tried debuginfod executable: no file with this build-id found: no debuginfod URL configured
}
