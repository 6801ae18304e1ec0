package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/perfcheck/perfcheck/perfdata"
	"github.com/perfcheck/perfcheck/pprofout"
)

func init() {
	register(&command{
		name:    "pprof",
		usage:   "perfcheck pprof -o out.pb.gz [flags] perf.data|-",
		summary: "convert to a pprof profile with build-ids on mappings; untrusted frames left unnamed",
		run:     runPprof,
	})
}

// pprofJSON is what `perfcheck pprof --json` prints about the profile it
// wrote.
type pprofJSON struct {
	File         string   `json:"file"`
	Output       string   `json:"output"`
	SampleTypes  []string `json:"sample_types"`    // "type/unit"
	Samples      uint64   `json:"samples"`         // samples read from the recording
	Stacks       int      `json:"distinct_stacks"` // pprof samples: one per distinct stack of each thread (comm, pid, tid)
	Locations    int      `json:"locations"`
	Functions    int      `json:"functions"`
	Mappings     int      `json:"mappings"`
	Unsymbolized []string `json:"unsymbolized_mappings"` // mappings left for pprof to symbolize by build-id
	// Partial and Error: reading stopped at Error; the profile holds the
	// samples before it.
	Partial bool   `json:"partial,omitempty"`
	Error   string `json:"error,omitempty"`
	// Notes are the check's notes, also written as the profile's comments.
	Notes []string `json:"notes,omitempty"`
}

func runPprof(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, af := newAnalyzeFlagSet("pprof", "usage: perfcheck pprof -o out.pb.gz [flags] perf.data|-",
		"Writes a pprof profile; frames of untrusted binaries keep their addresses and build-ids, never a name (docs/pprof.md).", stderr)
	out := fs.String("o", "", "write the profile to `FILE` (gzipped protobuf; \"-\" for stdout)")
	jsonOut := fs.Bool("json", false, "print a JSON summary of the profile written")
	file, code := outputArgs(fs, af, args, stdin, stderr, out, "- for stdout")
	if code >= 0 {
		return code
	}
	if *out == "-" && *jsonOut {
		return errorf(stderr, "pprof", "-o - and --json both write to stdout")
	}
	// Refuse to overwrite the recording itself: nothing the user owns is
	// modified by accident.
	if *out != "-" && file != "-" && sameFile(*out, file) {
		return errorf(stderr, "pprof", "-o %s is the input file", *out)
	}
	copts, done := af.options(stderr)
	defer done()
	a, readErr := analyze(context.Background(), file, copts, stdin, stderr)
	if a == nil {
		return errorf(stderr, "pprof", "%v", readErr)
	}
	rep := a.res.Report()
	notes := a.notes(rep)
	opts := pprofout.Options{Comments: recordingComments(file)}
	for _, n := range notes {
		opts.Comments = append(opts.Comments, "note: "+n)
	}
	if readErr != nil {
		// The profile of what was read is still written (and says it is
		// partial, in its comments); the exit status is 2.
		opts.Comments = append(opts.Comments, "partial: "+readErr.Error())
	}
	// The profile is encoded as it is written: the command never holds it
	// (pprofout.Write).
	var sum pprofout.Summary
	if err := writeFile(*out, stdout, func(w io.Writer) (err error) {
		sum, err = pprofout.Write(w, a.res, opts)
		return err
	}); err != nil {
		return errorf(stderr, "pprof", "%v", err)
	}
	if *jsonOut {
		j := pprofJSON{File: a.res.File, Output: *out, Samples: a.res.Samples, SampleTypes: sum.SampleTypes, Stacks: sum.Samples,
			Locations: sum.Locations, Functions: sum.Functions, Mappings: sum.Mappings, Unsymbolized: sum.Unsymbolized, Notes: notes}
		if j.Unsymbolized == nil {
			j.Unsymbolized = []string{}
		}
		if readErr != nil {
			j.Partial, j.Error = true, readErr.Error()
		}
		if err := writeJSON(stdout, j); err != nil {
			return errorf(stderr, "pprof", "%v", err)
		}
	}
	if rep.UntrustedAnySamples > 0 {
		fmt.Fprintf(stderr, "perfcheck pprof: %s; frames of %d untrusted DSO%s are left unnamed (see `perfcheck check %s`)\n",
			rep.Summary(), rep.Problems, plural(rep.Problems), file)
	}
	if readErr != nil {
		return errorf(stderr, "pprof", "partial profile written: %v", readErr)
	}
	return exitOK
}

// recordingComments are the profile's comments: where it came from, as
// perf_data_converter records the perf version and command line.
func recordingComments(name string) []string {
	c := []string{"perfcheck pprof " + name}
	if name == "-" {
		return c
	}
	f, err := perfdata.Open(name)
	if err != nil {
		return c
	}
	defer f.Close()
	if v, err := f.Features().Version(); err == nil && v != "" {
		c = append(c, "perf-version:"+v)
	}
	if cl, err := f.Features().CmdLine(); err == nil && len(cl) > 0 {
		c = append(c, "perf-command:"+strings.Join(cl, " "))
	}
	return c
}

func sameFile(a, b string) bool {
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	if err1 == nil && err2 == nil {
		return os.SameFile(sa, sb)
	}
	aa, _ := filepath.Abs(a)
	bb, _ := filepath.Abs(b)
	return aa == bb
}
