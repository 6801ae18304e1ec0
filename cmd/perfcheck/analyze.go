package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/perfcheck/perfcheck/check"
	"github.com/perfcheck/perfcheck/perfdata"
)

// analyzeFlags are the flags shared by the commands that run the check
// (check, script, top, pprof): where binaries are looked up and how far
// untrusted ones may be used.
type analyzeFlags struct {
	buildIDDir string
	symfs      string
	trustPaths bool
}

func (af *analyzeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&af.buildIDDir, "buildid-dir", "", "perf's build-id cache (default $PERF_BUILDID_DIR, else $HOME/.debug)")
	fs.StringVar(&af.symfs, "symfs", "", "look up recorded paths under this root, as perf's --symfs")
	fs.BoolVar(&af.trustPaths, "trust-paths", false, "name frames of mismatched/replaced binaries from the file at the path anyway (still marked untrusted)")
}

func (af *analyzeFlags) options() check.Options {
	dir := af.buildIDDir
	if dir == "" {
		dir = os.Getenv("PERF_BUILDID_DIR")
	}
	if dir == "" {
		if home, err := os.UserHomeDir(); err == nil {
			dir = home + "/.debug"
		}
	}
	return check.Options{BuildIDDir: dir, SymFS: af.symfs, TrustPaths: af.trustPaths}
}

// analysis is a checked recording with what the commands print beyond
// check.Result: the recording's events with their attrs (for units, and
// whether samples carry a CPU).
type analysis struct {
	res    *check.Result
	events []perfdata.Event
}

// analyze runs the check on name ("-" is standard input, read as a pipe-mode
// stream), with a progress bar on a terminal.
func analyze(ctx context.Context, name string, opts check.Options, stdin io.Reader, stderr io.Writer) (*analysis, error) {
	if name == "-" {
		return analyzeStream(ctx, stdin, "-", opts, stderr)
	}
	f, err := perfdata.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var size int64
	if st, err := os.Stat(name); err == nil {
		size = st.Size()
		if !f.IsPipe() && opts.RecordingEnd.IsZero() {
			// As check.Analyze: perf rewrites the header when it stops,
			// so the file's mtime is the end of the recording.
			opts.RecordingEnd = st.ModTime()
		}
	}
	bar := newProgress(stderr, name, size)
	opts.Progress = bar.callback()
	res, err := check.AnalyzeFile(ctx, f, opts)
	bar.finish()
	if err != nil {
		return nil, err
	}
	res.File = name
	return &analysis{res: res, events: f.Events()}, nil
}

// analyzeStream checks a pipe-mode stream. It does what check.AnalyzeReader
// does, but keeps the perfdata.Reader so that the events' attrs (known only
// once the stream's HEADER_ATTR records went past) can be read afterwards.
func analyzeStream(ctx context.Context, r io.Reader, name string, opts check.Options, stderr io.Writer) (*analysis, error) {
	pr, err := perfdata.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	s := check.NewSession(opts)
	if err := s.Feed(ctx, pr); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	// A pipe's build-id table and clock data arrive as records at its end.
	ids, err := pr.Features().BuildIDs()
	if err != nil && !errors.Is(err, perfdata.ErrNoFeature) {
		return nil, fmt.Errorf("%s: build-id table: %w", name, err)
	}
	s.AddBuildIDs(ids)
	res, err := s.Finish(ctx)
	if err != nil {
		return nil, err
	}
	res.File = name
	for _, e := range pr.Events() {
		res.Events = append(res.Events, e.Name)
	}
	return &analysis{res: res, events: pr.Events()}, nil
}

// parseArgs parses fs over args with flags allowed before and after the
// positional arguments (Go's flag package stops at the first non-flag;
// "perfcheck check perf.data --json" must work). "-" is a positional
// argument (standard input). It returns the positional arguments, or a
// non-negative exit code when parsing ended the command.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, int) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, exitOK
			}
			return nil, exitError
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, -1
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// stdinReader is where "-" reads from; tests replace it.
var stdinReader io.Reader = os.Stdin
