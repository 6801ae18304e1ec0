package check

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/perfcheck/perfcheck/perfdata"
)

// Analyze checks the recording in the perf.data file (or pipe-format file)
// name: it reads every record in perf's time order, rebuilds the address
// spaces, resolves every sampled address, gives each DSO a verdict and
// symbolizes what may be. RecordingEnd defaults to the file's mtime.
//
// When reading stops at an error inside the records (a truncated or corrupt
// recording, whose error names the file and the byte offset), Analyze
// returns both: the Result of every record delivered before the error,
// with Partial set and ReadErr the error, and the error itself. A nil
// Result comes only with errors that leave nothing to report (the file
// cannot be opened, its header is malformed, ctx was cancelled). The same
// holds for AnalyzeFile and AnalyzeReader.
func Analyze(ctx context.Context, name string, opts Options) (*Result, error) {
	f, err := perfdata.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if opts.RecordingEnd.IsZero() && !f.IsPipe() {
		// perf record rewrites the header when it stops, so the file's
		// mtime is the end of the recording.
		if st, err := os.Stat(name); err == nil {
			opts.RecordingEnd = st.ModTime()
		}
	}
	res, err := AnalyzeFile(ctx, f, opts)
	if res != nil {
		res.File = name
	}
	return res, err
}

// AnalyzeFile is Analyze on an opened file.
func AnalyzeFile(ctx context.Context, f *perfdata.File, opts Options) (*Result, error) {
	return analyze(ctx, f, f.Name(), opts)
}

// AnalyzeReader checks a pipe-mode stream (perf record -o -) read from r.
// No recording time is known unless opts.RecordingEnd is set.
func AnalyzeReader(ctx context.Context, r io.Reader, name string, opts Options) (*Result, error) {
	pr, err := perfdata.NewReader(r)
	if err != nil {
		return nil, err
	}
	return analyze(ctx, pr, name, opts)
}

// Recording is what the check reads from a perf.data: *perfdata.File and
// *perfdata.Reader are Recordings.
type Recording interface {
	Events() []perfdata.Event
	Features() *perfdata.Features
	Records(perfdata.RecordsOptions) *perfdata.Records
}

func analyze(ctx context.Context, f Recording, name string, opts Options) (*Result, error) {
	if opts.Clock == nil {
		if cd, err := f.Features().ClockData(); err == nil && cd.WallClockNS != 0 {
			opts.Clock = &cd
		} else if err != nil && !errors.Is(err, perfdata.ErrNoFeature) {
			return nil, fmt.Errorf("%s: clock data: %w", name, err)
		}
	}
	if opts.KernelRelease == "" {
		if rel, err := f.Features().OSRelease(); err == nil {
			opts.KernelRelease = rel
		}
	}
	var pre *preopener
	if !opts.NoSymbols {
		// The kernel's symbols are opened while the records are read
		// (prefetch.go); the locator remembers its answers so that the
		// verdicts reuse the lookup this makes.
		if opts.Locator == nil {
			opts.Locator = &PathLocator{BuildIDDir: opts.BuildIDDir, SymFS: opts.SymFS}
		}
		opts.Locator = newMemoLocator(opts.Locator)
		pre = newPreopener(opts.Symbolizer)
		opts.Symbolizer = pre
		defer pre.close()
	}
	s := NewSession(opts)
	s.fm = firstMaps{}
	// A file's build-id table is a header feature, known before the
	// records (the unwinder checks binaries against it); a pipe's comes as
	// HEADER_BUILD_ID records at its end, which the reader gathers into
	// the same Features.
	var early int
	if _, ok := f.(*perfdata.File); ok {
		if ids, err := f.Features().BuildIDs(); err == nil {
			s.AddBuildIDs(ids)
			early = len(ids)
			if pre != nil {
				pre.wg.Add(1)
				go func() {
					defer pre.wg.Done()
					prefetchKernel(ctx, ids, opts.Locator, pre)
				}()
			}
		}
	}
	// A read error (a truncated or corrupt recording) ends the reading but
	// not the check: the records before it are real, and a user wants
	// their report, marked partial, with the error. Only cancellation
	// returns nothing.
	var readErr error
	var ips *sampleIPs
	if opts.KeepSamples {
		ips = newSampleIPs()
	}
	if err := s.feed(ctx, f, ips); err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		readErr = nameError(name, err)
	}
	// A pipe's feature sections arrive as HEADER_FEATURE records after
	// its attrs, so they are known only once reading has begun: ask again
	// now, before the verdicts (which compare the recording's kernel
	// release and clock with this machine's) are given.
	if s.opts.KernelRelease == "" {
		if rel, err := f.Features().OSRelease(); err == nil {
			s.opts.KernelRelease = rel
		}
	}
	if s.opts.Clock == nil {
		if cd, err := f.Features().ClockData(); err == nil && cd.WallClockNS != 0 {
			s.opts.Clock = &cd
		}
	}
	ids, err := f.Features().BuildIDs()
	if err != nil && !errors.Is(err, perfdata.ErrNoFeature) && readErr == nil {
		// Without the table the verdicts rest on weaker evidence; the
		// records are still whole, so the result is partial, not lost.
		readErr = fmt.Errorf("%s: build-id table: %w", name, err)
	}
	if len(ids) > early {
		s.AddBuildIDs(ids[early:])
	}
	if fn := phaseOf(ctx); fn != nil {
		fn(PhaseSymbolize, len(s.locs), len(s.dsos))
	}
	res, err := s.Finish(ctx)
	if err != nil {
		return nil, err
	}
	res.File = name
	res.ips = ips
	res.firstMaps = s.fm
	res.EventInfo = f.Events()
	for _, e := range res.EventInfo {
		res.Events = append(res.Events, e.Name)
	}
	if readErr != nil {
		res.Partial = true
		res.ReadErr = readErr
		return res, readErr
	}
	return res, nil
}

// nameError makes sure a read error names its input: a pipe reader's
// FormatError does not know the stream's name.
func nameError(name string, err error) error {
	var fe *perfdata.FormatError
	if name != "" && name != "-" && errors.As(err, &fe) && fe.File == "" {
		return fmt.Errorf("%s: %w", name, err)
	}
	return err
}

// Feed reads every record of f in time order (perf's ordered delivery)
// and feeds the session.
func (s *Session) Feed(ctx context.Context, f Recording) error {
	return s.feed(ctx, f, nil)
}
