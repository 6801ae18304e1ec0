package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/check"
)

// analyzeFlags are the flags shared by the commands that run the check
// (check, script, top, pprof): where binaries are looked up (the shared
// lookup flags) and how far untrusted ones may be used.
type analyzeFlags struct {
	input      inputFlag
	filter     filterFlags
	lookup     lookupFlags
	trustPaths bool
}

// newAnalyzeFlagSet is the flag set of the commands that run the check
// (check, script, top, pprof): the shared lookup and trust flags, and a
// usage message of a usage line and a one-line summary. Each command adds
// its own flags to it.
func newAnalyzeFlagSet(name, usage, summary string, stderr io.Writer) (*flag.FlagSet, *analyzeFlags) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	af := new(analyzeFlags)
	af.register(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, usage)
		fmt.Fprintln(stderr, summary)
		fs.PrintDefaults()
	}
	return fs, af
}

func (af *analyzeFlags) register(fs *flag.FlagSet) {
	af.input.register(fs)
	af.filter.register(fs)
	af.lookup.register(fs)
	fs.BoolVar(&af.trustPaths, "trust-paths", false, "name frames of mismatched/replaced binaries from the file at the path anyway (loudly marked untrusted; never in pprof output)")
}

// file returns the recording the command line names (inputFlag.file) and
// checks the filter flags, so that every usage error is found before
// reading.
func (af *analyzeFlags) file(pos []string, stdin io.Reader) (string, error) {
	if _, err := af.filter.filter(); err != nil {
		return "", err
	}
	return af.input.file(pos, stdin)
}

// options builds the check's options. The caller must call done when the
// result is no longer needed: it closes the resolver, which removes the
// scratch directory that debuginfod downloads use when there is no cache
// directory (buildidcache.Resolver.Close), and the result may still read
// the binaries found (Result.ExecSegment).
func (af *analyzeFlags) options(stderr io.Writer) (opts check.Options, done func()) {
	r := buildidcache.New(af.lookup.options(stderr))
	filter, _ := af.filter.filter() // checked by file
	return check.Options{
		Resolver:   r,
		TrustPaths: af.trustPaths,
		Filter:     filter,
	}, func() { r.Close() }
}

// analysis is a checked recording with what the commands cache while
// printing it.
type analysis struct {
	res     *check.Result
	evWidth int // cached nameWidth
}

// analyze runs the check on name ("-" is standard input, read as a pipe-mode
// stream), with a progress bar on a terminal.
func analyze(ctx context.Context, name string, opts check.Options, stdin io.Reader, stderr io.Writer) (*analysis, error) {
	var res *check.Result
	var err error
	if name == "-" {
		res, err = check.Analyze(ctx, check.Stream(stdin, "-"), opts)
		if err != nil {
			err = fmt.Errorf("standard input: %w", err)
		}
	} else {
		var size int64
		if st, err := os.Stat(name); err == nil {
			size = st.Size()
		}
		bar := newProgress(stderr, name, size)
		opts.Progress = progressCallback(bar, opts.NoSymbols)
		res, err = check.Analyze(ctx, check.Path(name), opts)
		bar.finish()
	}
	if res == nil {
		return nil, err
	}
	// A read error with a result: the recording was read up to a
	// truncation or corruption. The commands print what was read, marked
	// partial, then the error, and exit 2.
	return &analysis{res: res}, err
}

// partialNote is the line the text outputs print about a partial result.
func partialNote(res *check.Result) string {
	return fmt.Sprintf("PARTIAL: reading stopped at an error; this covers only the records before it: %v", res.ReadErr)
}

// progressCallback is the check's Options.Progress for bar, nil for a nil
// bar (so the check skips the calls altogether): it moves the bar while
// the recording is read, then to its second phase: locating the binaries
// by build-id and, unless noSymbols, symbolizing every distinct location.
func progressCallback(bar *progress, noSymbols bool) func(check.Progress) {
	if bar == nil {
		return nil
	}
	return func(p check.Progress) {
		switch {
		case p.Phase == check.PhaseRead:
			bar.set(p.Offset)
		case noSymbols:
			bar.setPhase(fmt.Sprintf("locating %d binaries", p.DSOs))
		default:
			bar.setPhase(fmt.Sprintf("locating %d binaries, symbolizing %d locations", p.DSOs, p.Locations))
		}
	}
}

// notes are the limits the check met on this recording (Report.Notes) and
// on each DSO samples touch (DSO.Notes: where dwarf unwinding stopped,
// what a symbolizer skipped), each prefixed with its DSO's path, so that
// top, script and pprof say what check says.
func (a *analysis) notes(rep *check.Report) []string {
	out := append([]string(nil), rep.Notes...)
	for _, d := range rep.DSOs {
		for _, n := range d.Notes {
			out = append(out, d.Path+": "+n)
		}
	}
	return out
}
