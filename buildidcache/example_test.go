package buildidcache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/perfcheck/perfcheck/buildid"
)

// A file's identity, read from its notes; tinyELF is a minimal ELF file
// built in memory by the tests.
func ExampleReadIdentity() {
	b := tinyELF()
	id, err := ReadIdentity(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("gnu:", id.BuildID, "go:", id.GoBuildID, "debuglink:", id.DebugLink)
	// Output: gnu: 0102030405060708 go: abc/def debuglink: x.debug
}

// Adding a binary writes perf's layout: the binary under its path and
// build-id, and a relative link under .build-id.
func ExampleCache_Add() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "bin", "app")
	os.MkdirAll(filepath.Dir(bin), 0o755)
	os.WriteFile(bin, tinyELF(), 0o755)

	c := &Cache{Dir: filepath.Join(dir, "cache"), DebugDirs: []string{}}
	e, err := c.Add(bin)
	if err != nil {
		fmt.Println(err)
		return
	}
	link, _ := os.Readlink(filepath.Join(c.Dir, ".build-id", "01", "02030405060708"))
	rel, _ := filepath.Rel(dir, e.Name)
	fmt.Println(e.BuildID, rel, e.Files)
	fmt.Println(filepath.Base(link) == e.BuildID.String(), filepath.IsAbs(link))
	// Output:
	// 0102030405060708 bin/app [elf]
	// true false
}

// Resolving a recorded build-id: where the file is, how it was verified,
// and what was refused on the way.
func ExampleResolver_Resolve() {
	r := New(Options{}) // perf's cache, /usr/lib/debug, $DEBUGINFOD_URLS
	res, err := r.Resolve(context.Background(), Query{
		BuildID: buildid.ID{0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08},
		Path:    "/usr/bin/app",
	})
	var nf *NotFoundError
	switch {
	case errors.As(err, &nf):
		for _, c := range nf.Rejected {
			fmt.Println("refused", c.Path, c.Reason())
		}
	case err != nil:
		fmt.Println(err)
	default:
		fmt.Println("identity:", res.Identity.Locator, res.Identity.Path)
		fmt.Println("symbols from:", res.Best.Path, res.Best.Debug)
	}
}
