package check

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/perfdata"
)

// A Source is a recording to analyze: a file by name (Path), a file
// already open (File) or a pipe-mode stream (Stream).
type Source struct {
	name   string
	file   *perfdata.File
	stream io.Reader
}

// Path is the perf.data file (or pipe-format file) name. The end of the
// recording is the file's modification time: perf rewrites the header
// when it stops.
func Path(name string) Source { return Source{name: name} }

// File is a recording already open. When f was opened by name, the end
// of the recording is that file's modification time, as for Path.
func File(f *perfdata.File) Source { return Source{name: f.Name(), file: f} }

// Stream is a pipe-mode recording (perf record -o -) read from r; name
// labels it in errors and in Result.File. When r is a regular file
// (perfcheck check - < pipe.data), its modification time is the end of the
// recording, as for Path; a pipe has none, so the end is known only from
// the recording's own clock.
func Stream(r io.Reader, name string) Source { return Source{name: name, stream: r} }

// recording is what the check reads from a perf.data: *perfdata.File and
// *perfdata.Reader are recordings.
type recording interface {
	Events() []perfdata.Event
	Features() *perfdata.Features
	Records(perfdata.RecordsOptions) *perfdata.Records
	Warnings() []string
}

// opened is a Source made ready for reading.
type opened struct {
	rec    recording
	info   recInfo   // when the recording ended (zero when unknown)
	closer io.Closer // what Analyze closes when done; nil: nothing
	// again, with Options.Replay, returns the recording from its
	// beginning for EachSample, and keep is what Result.Close closes.
	again func() (recording, error)
	keep  io.Closer
}

// open makes src ready for reading, and for reading again when replay is
// set.
func (src Source) open(replay bool) (o opened, err error) {
	switch {
	case src.stream != nil:
		if f, ok := src.stream.(*os.File); ok {
			if st, serr := f.Stat(); serr == nil && st.Mode().IsRegular() {
				pf, err := regularStdin(f, st.Size())
				if err != nil {
					return o, err
				}
				o.rec, o.info = pf, regularFileInfo(st, nil)
				break
			}
		}
		if !replay {
			o.rec, err = perfdata.NewReader(src.stream)
			return o, err
		}
		var spool *os.File
		if o.rec, spool, err = spoolStream(src.stream); err != nil {
			return o, err
		}
		o.keep = spool
	case src.file != nil:
		o.rec, o.info = src.file, fileInfo(src.file)
	default:
		f, err := perfdata.Open(src.name)
		if err != nil {
			return o, err
		}
		o.rec, o.info = f, fileInfo(f)
		if replay {
			o.keep = f
		} else {
			o.closer = f
		}
	}
	if replay {
		rec := o.rec
		o.again = func() (recording, error) { return rec, nil }
	}
	return o, nil
}

// regularStdin reads a regular file given as a stream (perfcheck check - <
// FILE) as a file, from where it stands: seekable, its header's features
// (the build-id table, after the samples of a perf.data) are known before
// its samples, as when it is named.
func regularStdin(f *os.File, size int64) (*perfdata.File, error) {
	start, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, err
	}
	return perfdata.NewFile(io.NewSectionReader(f, start, size-start), size-start)
}

// fileInfo is what a file's metadata tells of its recording: perf record
// rewrites the header when it stops, and writes the last bytes of a
// pipe-format file (perf record -o - > FILE) when it stops, so the file's
// mtime is the end of the recording.
func fileInfo(f *perfdata.File) recInfo {
	if f.Name() == "" {
		return recInfo{}
	}
	return regularFileInfo(os.Stat(f.Name()))
}

// regularFileInfo is fileInfo for a stat result: a regular file's mtime,
// nothing for a pipe or a device.
func regularFileInfo(st os.FileInfo, err error) recInfo {
	var info recInfo
	if err == nil && st.Mode().IsRegular() {
		info.end, info.endSource = st.ModTime(), EndFromMTime
	}
	return info
}

// Analyze checks the recording src: it reads every record in perf's time
// order, rebuilds the address spaces, resolves every sampled address,
// gives each DSO a verdict and symbolizes what may be.
//
// When reading stops at an error inside the records (a truncated or
// corrupt recording, whose error names the file and the byte offset),
// Analyze returns both: the Result of every record delivered before the
// error, with Partial set and ReadErr the error, and the error itself. A
// nil Result comes only with errors that leave nothing to report (the file
// cannot be opened, its header is malformed, ctx was cancelled), or with
// the error Options.OnSample returned.
func Analyze(ctx context.Context, src Source, opts Options) (*Result, error) {
	if opts.ReportOnly {
		if opts.Replay {
			return nil, errors.New("check: Options.ReportOnly and Options.Replay exclude each other")
		}
		opts.NoSymbols = true
	}
	if opts.OnSample != nil && (opts.Replay || opts.ReportOnly) {
		return nil, errors.New("check: Options.OnSample excludes Replay and ReportOnly")
	}
	if opts.OnSample != nil && !src.liveStream() {
		return analyzeThenReplay(ctx, src, opts)
	}
	o, err := src.open(opts.Replay)
	if err != nil {
		return nil, err
	}
	if o.closer != nil {
		defer o.closer.Close()
	}
	if opts.Resolver != nil {
		// One root for the lookup and the verdicts: the paths the
		// Resolver looked up are the ones judged on disk.
		opts.Lookup.SymFS = opts.Resolver.SymFS()
	}
	own := false
	if opts.locator == nil {
		r := opts.Resolver
		if r == nil {
			r = buildidcache.New(opts.Lookup)
			defer r.Close()
			own = true
		}
		opts.locator = &resolverLocator{r: r}
		opts.debugFiles = r
	}
	res, s, err := analyze(ctx, o.rec, src.name, opts, o.info)
	if res != nil && o.again != nil {
		res.replay = &replaySource{s: s, name: src.name, open: o.again, closer: o.keep}
	} else if o.keep != nil {
		o.keep.Close()
	}
	if own && res != nil {
		// Closing r removes what it downloaded to a scratch directory;
		// ExecSegment must not find those files gone.
		res.readDownloadedSegments()
	}
	return res, err
}

// analyze is Analyze on an open recording, with opts.locator set. It
// returns the session too, which EachSample reads the recording again
// with.
func analyze(ctx context.Context, f recording, name string, opts Options, info recInfo) (*Result, *session, error) {
	if err := info.fromFeatures(f, name); err != nil {
		return nil, nil, err
	}
	var pre *preopener
	if !opts.NoSymbols {
		// The kernel's symbols are opened while the records are read
		// (prefetch.go); the locator remembers its answers so that the
		// verdicts reuse the lookup this makes.
		opts.locator = newMemoLocator(opts.locator)
		pre = newPreopener(opts.opener())
		opts.symbolizer = pre
		defer pre.close()
	}
	s := newSession(opts)
	s.rec = info
	var err error
	if s.filter, err = newSampleFilter(opts.Filter, f, name); err != nil {
		return nil, nil, err
	}
	s.fm = firstMaps{}
	early := s.addEarlyBuildIDs(ctx, f, pre)
	// A read error (a truncated or corrupt recording) ends the reading but
	// not the check: the records before it are real, and a user wants
	// their report, marked partial, with the error. Only cancellation
	// returns nothing.
	var readErr error
	feed := s.feed
	if opts.OnSample != nil {
		feed = s.feedLive
	}
	if err := feed(ctx, f); err != nil {
		if ctx.Err() != nil {
			return nil, nil, err
		}
		if errors.Is(err, errStop) {
			return nil, nil, err.(stopError).err
		}
		readErr = nameError(name, err)
	}
	if _, ok := f.(*perfdata.Reader); ok {
		// A stream's build-id records were taken as they came
		// (streamBuildID), and its features hold them again.
		early = len(s.buildIDs)
	}
	if s.filter != nil && s.filter.err != nil {
		return nil, nil, s.filter.err
	}
	if err := s.addLateFeatures(f, name, early); err != nil && readErr == nil {
		readErr = err
	}
	s.rec.endFromClock(s.lastTime)
	if opts.Progress != nil {
		opts.Progress(Progress{Phase: PhaseSymbolize, Locations: len(s.locs), DSOs: len(s.dsos)})
	}
	res, err := s.finish(ctx)
	if err != nil {
		return nil, nil, err
	}
	caseAdvice(res.DSOs, readOrigin(f, fileName(f), s.rec.machine, opts.host), name)
	res.File = name
	if s.live != nil {
		res.Changed = s.live.changes()
	}
	res.firstMaps = s.fm
	res.EventInfo = f.Events()
	if (opts.Replay || opts.OnSample != nil) && slices.ContainsFunc(res.EventInfo, func(e perfdata.Event) bool { return tracepointRaw(&e.Attr) }) {
		res.TraceEvents, res.TraceErr = f.Features().TraceEvents()
		res.TracePrintk, res.TracePrintkErr = f.Features().TracePrintk()
	}
	res.ReadWarnings = f.Warnings()
	if readErr != nil {
		res.Partial = true
		res.ReadErr = readErr
		return res, s, readErr
	}
	return res, s, nil
}

// fromFeatures fills what the recording's header says of it: its clock
// data and kernel release.
func (info *recInfo) fromFeatures(f recording, name string) error {
	if info.clock == nil {
		if cd, err := f.Features().ClockData(); err == nil && cd.WallClockNS != 0 {
			info.clock = &cd
		} else if err != nil && !errors.Is(err, perfdata.ErrNoFeature) {
			return fmt.Errorf("%s: clock data: %w", name, err)
		}
	}
	if info.clock == nil {
		info.clock = realtimeClock(f.Features())
	}
	info.machine.fromFeatures(f.Features())
	return nil
}

// addEarlyBuildIDs adds a file's build-id table, a header feature known
// before the records (the unwinder checks binaries against it), and starts
// opening the kernel's symbols it names when pre is set. It returns the
// number of entries added. A pipe's table comes as HEADER_BUILD_ID records
// at its end (addLateFeatures).
func (s *session) addEarlyBuildIDs(ctx context.Context, f recording, pre *preopener) int {
	if _, ok := f.(*perfdata.File); !ok {
		return 0
	}
	ids, err := f.Features().BuildIDs()
	if err != nil {
		return 0
	}
	s.addBuildIDs(ids)
	if pre != nil {
		pre.wg.Add(1)
		go func() {
			defer pre.wg.Done()
			prefetchKernel(ctx, ids, s.opts.locator, pre)
		}()
	}
	return len(ids)
}

// addLateFeatures takes what a pipe delivers only after its attrs: its
// feature sections arrive as HEADER_FEATURE records, so they are known only
// once reading has begun. They are asked again now, before the verdicts
// (which compare the recording's kernel release and clock with this
// machine's) are given. early entries of the build-id table were added
// before reading. An error in the table is returned: without it the
// verdicts rest on weaker evidence, but the records are whole, so the
// result is partial, not lost.
func (s *session) addLateFeatures(f recording, name string, early int) error {
	s.rec.machine.fromFeatures(f.Features())
	if s.rec.clock == nil {
		if cd, err := f.Features().ClockData(); err == nil && cd.WallClockNS != 0 {
			s.rec.clock = &cd
		}
	}
	if s.rec.clock == nil {
		s.rec.clock = realtimeClock(f.Features())
	}
	ids, err := f.Features().BuildIDs()
	if len(ids) > early {
		s.addBuildIDs(ids[early:])
	}
	if err != nil && !errors.Is(err, perfdata.ErrNoFeature) {
		return fmt.Errorf("%s: build-id table: %w", name, err)
	}
	return nil
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
