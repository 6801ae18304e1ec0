package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/perfcheck/perfcheck/buildidcache"
)

func init() {
	register(&command{
		name:    "buildid",
		usage:   "perfcheck buildid [--json] FILE...",
		summary: "GNU and Go build-ids of binaries; exit 1 if one lacks a GNU build-id",
		run:     runBuildID,
	})
}

// binaryBuildIDJSON is one file of perfcheck buildid --json.
type binaryBuildIDJSON struct {
	Path string `json:"path"`
	// GNUBuildID is the NT_GNU_BUILD_ID note in hex, "" when absent.
	GNUBuildID string `json:"gnu_build_id"`
	// GoBuildID is the Go toolchain's build-id, "" when absent.
	GoBuildID string `json:"go_build_id"`
	Class     int    `json:"class,omitempty"` // 32 or 64
	BigEndian bool   `json:"big_endian,omitempty"`
	// Debug is the richest symbol information: none, dynsym, symtab, dwarf.
	Debug string `json:"debug,omitempty"`
	// FromSegments is true when the build-id came from PT_NOTE because the
	// section headers were stripped.
	FromSegments bool `json:"from_segments,omitempty"`
	// Compression is xz, zstd or gzip for a compressed kernel module.
	Compression string `json:"compression,omitempty"`
	// Advice says how to get a GNU build-id, when there is none.
	Advice string `json:"advice,omitempty"`
	Error  string `json:"error,omitempty"`
}

type buildIDReportJSON struct {
	Files []binaryBuildIDJSON `json:"files"`
	// Missing counts files without a GNU build-id (exit status 1).
	Missing int `json:"missing"`
	// Errors counts files that could not be read (exit status 2).
	Errors int `json:"errors"`
}

// Advice for binaries without a GNU build-id. Go's linker derives one from
// the Go build-id by default since Go 1.24 (cmd/link's -B gobuildid); perf,
// gdb and debuginfod only know the GNU note.
const (
	adviceGo = "Go binary without a GNU build-id: since Go 1.24 the linker adds one derived from the Go build-id " +
		"unless it is linked with -ldflags=-B=none; on older Go build with -ldflags=-B=gobuildid"
	adviceC = "no GNU build-id: link with -Wl,--build-id (gcc, clang; lld's --build-id=fast is fine too)"
)

func runBuildID(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	const name = "buildid"
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	jsonOut := fs.Bool("json", false, "print JSON")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: perfcheck buildid [--json] FILE...")
		fmt.Fprintln(stderr, "Prints each file's GNU build-id (what perf, gdb and debuginfod match on) and Go build-id.")
		fmt.Fprintln(stderr, "Exit status: 0 all have a GNU build-id, 1 some lack one, 2 a file could not be read.")
		fs.PrintDefaults()
	}
	files, code := interspersed(fs, args)
	if code >= 0 {
		return code
	}
	if len(files) == 0 {
		return usageError(fs, stderr, "no FILE given: name the binaries to read")
	}
	rep := buildIDReportJSON{Files: []binaryBuildIDJSON{}}
	for _, f := range files {
		b := binaryBuildIDJSON{Path: f}
		id, err := buildidcache.ReadFileIdentity(f)
		if err != nil {
			b.Error = err.Error()
			rep.Errors++
			rep.Files = append(rep.Files, b)
			continue
		}
		b.GNUBuildID, b.GoBuildID = id.BuildID.String(), id.GoBuildID
		b.Class, b.BigEndian, b.Debug, b.FromSegments = id.Class, id.BigEndian, id.Debug.String(), id.FromSegments
		b.Compression = id.Compression
		if id.BuildID == nil {
			rep.Missing++
			b.Advice = adviceC
			if id.GoBuildID != "" {
				b.Advice = adviceGo
			}
		}
		rep.Files = append(rep.Files, b)
	}
	if *jsonOut {
		if err := writeJSON(stdout, rep); err != nil {
			return errorf(stderr, name, "%v", err)
		}
	} else {
		for _, b := range rep.Files {
			switch {
			case b.Error != "":
				fmt.Fprintf(stderr, "perfcheck buildid: %s\n", b.Error)
			default:
				gnu := b.GNUBuildID
				if gnu == "" {
					gnu = "-"
				}
				// "<gnu build-id> <path>" as perf buildid-list prints, the
				// Go build-id after it when there is one.
				fmt.Fprintf(stdout, "%-40s %s", gnu, b.Path)
				if b.GoBuildID != "" {
					fmt.Fprintf(stdout, " go:%s", b.GoBuildID)
				}
				fmt.Fprintln(stdout)
				if b.Advice != "" {
					fmt.Fprintf(stderr, "perfcheck buildid: %s: %s\n", b.Path, b.Advice)
				}
			}
		}
	}
	switch {
	case rep.Errors > 0:
		return exitError
	case rep.Missing > 0:
		return exitProblems
	}
	return exitOK
}
