package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/check"
	"github.com/perfcheck/perfcheck/dso"
)

// cacheSubcommands are cache's subcommands, in the order its usage gives
// them: runCache dispatches on these names, and the completion scripts and
// man pages offer them (command.subcommands).
var cacheSubcommands = []struct {
	name string
	run  func(args []string, stdout, stderr io.Writer) int
}{
	{"add", runCacheAdd},
	{"fill", runCacheFill},
	{"list", runCacheList},
	{"prune", runCachePrune},
}

func init() {
	var names []string
	for _, s := range cacheSubcommands {
		names = append(names, s.name)
	}
	register(&command{
		name:        "cache",
		usage:       "perfcheck cache add FILE... | fill perf.data | list | prune --max-size SIZE [--older-than AGE]",
		summary:     "fill, list and prune perf's build-id cache (~/.debug) in the layout perf reads",
		run:         runCache,
		subcommands: names,
	})
}

func cacheUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: perfcheck cache add [--buildid-dir DIR] [--hardlink] [--json] FILE...")
	fmt.Fprintln(w, "       perfcheck cache fill [lookup flags] [--json] perf.data")
	fmt.Fprintln(w, "       perfcheck cache list [--buildid-dir DIR] [--json]")
	fmt.Fprintln(w, "       perfcheck cache prune --max-size SIZE [--older-than AGE] [--dry-run] [--buildid-dir DIR] [--json]")
	fmt.Fprintln(w, "The cache is perf's (default $PERF_BUILDID_DIR, else buildid.dir in ~/.perfconfig, else ~/.debug);")
	fmt.Fprintln(w, "perf report and perf annotate read what these commands write.")
}

func runCache(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		names := commands["cache"].subcommands
		fmt.Fprintf(stderr, "perfcheck cache: a subcommand is required: %s or %s\n",
			strings.Join(names[:len(names)-1], ", "), names[len(names)-1])
		cacheUsage(stderr)
		return exitError
	}
	for _, s := range cacheSubcommands {
		if args[0] == s.name {
			return s.run(args[1:], stdout, stderr)
		}
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		cacheUsage(stdout)
		return exitOK
	}
	fmt.Fprintf(stderr, "perfcheck cache: unknown subcommand %q\n", args[0])
	cacheUsage(stderr)
	return exitError
}

// cacheEntryJSON is one cache entry in the cache commands' JSON.
type cacheEntryJSON struct {
	BuildID  string    `json:"build_id"`
	Name     string    `json:"name"`
	Dir      string    `json:"dir"`
	Files    []string  `json:"files"`
	Size     int64     `json:"size"`
	LastUsed time.Time `json:"last_used"`
	OldStyle bool      `json:"old_style,omitempty"`
}

func entryJSON(e *buildidcache.Entry) cacheEntryJSON {
	files := e.Files
	if files == nil {
		files = []string{}
	}
	return cacheEntryJSON{BuildID: e.BuildID.String(), Name: e.Name, Dir: e.Dir, Files: files,
		Size: e.Size, LastUsed: e.LastUsed.UTC(), OldStyle: e.OldStyle}
}

// cacheAddJSON is one file of cache add (and one DSO of cache fill).
type cacheAddJSON struct {
	Path    string `json:"path"`
	BuildID string `json:"build_id,omitempty"`
	// Status is "added", "cached" (already there), "skipped" or "error".
	Status string          `json:"status"`
	Reason string          `json:"reason,omitempty"`
	Entry  *cacheEntryJSON `json:"entry,omitempty"`
}

type cacheAddReportJSON struct {
	CacheDir string         `json:"cache_dir"`
	File     string         `json:"file,omitempty"` // cache fill's perf.data
	Results  []cacheAddJSON `json:"results"`
	Added    int            `json:"added"`
	Cached   int            `json:"cached"`
	Skipped  int            `json:"skipped"`
	Errors   int            `json:"errors"`
}

func (r *cacheAddReportJSON) add(a cacheAddJSON) {
	switch a.Status {
	case "added":
		r.Added++
	case "cached":
		r.Cached++
	case "skipped":
		r.Skipped++
	default:
		r.Errors++
	}
	r.Results = append(r.Results, a)
}

func (r *cacheAddReportJSON) print(stdout io.Writer, jsonOut bool) error {
	if jsonOut {
		return writeJSON(stdout, r)
	}
	for _, a := range r.Results {
		bid := a.BuildID
		if bid == "" {
			bid = "-"
		}
		line := fmt.Sprintf("%-8s %-40s %s", a.Status, bid, a.Path)
		if a.Reason != "" {
			line += ": " + a.Reason
		}
		fmt.Fprintln(stdout, line)
	}
	return nil
}

func (r *cacheAddReportJSON) exitCode() int {
	switch {
	case r.Errors > 0:
		return exitError
	case r.Skipped > 0:
		return exitProblems
	}
	return exitOK
}

// unsharedReason explains a "cached" entry whose hard links were replaced
// by copies (buildidcache.Entry.Unshared).
const unsharedReason = "was a hard link, as perf makes them; now a private copy that rewriting the original in place cannot change"

func runCacheAdd(args []string, stdout, stderr io.Writer) int {
	const name = "cache add"
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("buildid-dir", "", "perf's build-id cache (default $PERF_BUILDID_DIR, else ~/.perfconfig's buildid.dir, else ~/.debug)")
	hard := fs.Bool("hardlink", false, "hard-link binaries into the cache as perf does, instead of copying (see docs/buildidcache.md)")
	jsonOut := fs.Bool("json", false, "print JSON")
	fs.Usage = func() { cacheUsage(stderr); fs.PrintDefaults() }
	files, code := interspersed(fs, args)
	if code >= 0 {
		return code
	}
	if len(files) == 0 {
		return usageError(fs, stderr, "no FILE given: name the binaries to add")
	}
	c := &buildidcache.Cache{Dir: cacheDirFlag(*dir, stderr), HardLink: *hard}
	rep := &cacheAddReportJSON{CacheDir: c.Dir, Results: []cacheAddJSON{}}
	for _, f := range files {
		a := cacheAddJSON{Path: f}
		e, err := c.Add(f)
		switch {
		case errors.Is(err, buildidcache.ErrNoBuildID):
			a.Status, a.Reason = "skipped", "no GNU build-id (see perfcheck buildid)"
		case err != nil:
			a.Status, a.Reason = "error", err.Error()
		default:
			a.Status, a.BuildID = "cached", e.BuildID.String()
			if e.Added {
				a.Status = "added"
			}
			if e.Unshared {
				a.Reason = unsharedReason
			}
			ej := entryJSON(e)
			a.Entry = &ej
		}
		rep.add(a)
	}
	if err := rep.print(stdout, *jsonOut); err != nil {
		return errorf(stderr, name, "%v", err)
	}
	return rep.exitCode()
}

// cacheDirFlag is the perf build-id cache that --buildid-dir (dir)
// selects, else the configured one; configuration ignored because
// another user owns it is reported on stderr.
func cacheDirFlag(dir string, stderr io.Writer) string {
	if dir != "" {
		return dir
	}
	dir, warnings := buildidcache.ConfiguredBuildIDDir()
	for _, w := range warnings {
		fmt.Fprintf(stderr, "perfcheck: warning: %s\n", w)
	}
	return dir
}

func runCacheList(args []string, stdout, stderr io.Writer) int {
	const name = "cache list"
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("buildid-dir", "", "perf's build-id cache")
	jsonOut := fs.Bool("json", false, "print JSON")
	fs.Usage = func() { cacheUsage(stderr); fs.PrintDefaults() }
	pos, code := interspersed(fs, args)
	if code >= 0 {
		return code
	}
	if len(pos) != 0 {
		return usageError(fs, stderr, "takes no arguments, got %q", pos)
	}
	c := &buildidcache.Cache{Dir: cacheDirFlag(*dir, stderr)}
	entries, err := c.List()
	if err != nil {
		return errorf(stderr, name, "%v", err)
	}
	if *jsonOut {
		out := struct {
			CacheDir string           `json:"cache_dir"`
			Entries  []cacheEntryJSON `json:"entries"`
			Size     int64            `json:"size"`
		}{CacheDir: c.Dir, Entries: []cacheEntryJSON{}}
		for i := range entries {
			out.Entries = append(out.Entries, entryJSON(&entries[i]))
			out.Size += entries[i].Size
		}
		if err := writeJSON(stdout, out); err != nil {
			return errorf(stderr, name, "%v", err)
		}
		return exitOK
	}
	// "<build-id> <name>" first, as perf buildid-cache -l prints, then
	// what pruning decides on.
	for _, e := range entries {
		fmt.Fprintf(stdout, "%-40s %s %s %s\n", e.BuildID, e.Name, humanSize(e.Size), e.LastUsed.UTC().Format("2006-01-02"))
	}
	return exitOK
}

func runCachePrune(args []string, stdout, stderr io.Writer) int {
	const name = "cache prune"
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("buildid-dir", "", "perf's build-id cache")
	maxSize := fs.String("max-size", "", "keep at most this much (e.g. 2G, 500M; K/M/G/T are powers of 1024; 0 empties the cache)")
	olderThan := fs.String("older-than", "", "also remove entries unused for this long (e.g. 30d, 2w, 12h)")
	dry := fs.Bool("dry-run", false, "only say what would be removed")
	jsonOut := fs.Bool("json", false, "print JSON")
	fs.Usage = func() { cacheUsage(stderr); fs.PrintDefaults() }
	pos, code := interspersed(fs, args)
	if code >= 0 {
		return code
	}
	if len(pos) != 0 {
		return usageError(fs, stderr, "takes no arguments, got %q", pos)
	}
	if *maxSize == "" {
		return usageError(fs, stderr, "--max-size is required")
	}
	limit, err := parseSize(*maxSize)
	if err != nil {
		return errorf(stderr, name, "--max-size: %v", err)
	}
	var age time.Duration
	if *olderThan != "" {
		if age, err = parseAge(*olderThan); err != nil {
			return errorf(stderr, name, "--older-than: %v", err)
		}
	}
	c := &buildidcache.Cache{Dir: cacheDirFlag(*dir, stderr)}
	rep, err := c.Prune(limit, age, time.Now(), *dry)
	if err != nil {
		return errorf(stderr, name, "%v", err)
	}
	if *jsonOut {
		out := struct {
			CacheDir   string           `json:"cache_dir"`
			DryRun     bool             `json:"dry_run"`
			Removed    []cacheEntryJSON `json:"removed"`
			Kept       int              `json:"kept"`
			SizeBefore int64            `json:"size_before"`
			SizeAfter  int64            `json:"size_after"`
			StaleTemps int              `json:"stale_temps"`
			Orphans    []cacheEntryJSON `json:"orphans"`
			OrphanSize int64            `json:"orphan_size"`
			Warnings   []string         `json:"warnings"`
		}{CacheDir: c.Dir, DryRun: *dry, Removed: []cacheEntryJSON{}, Kept: rep.Kept,
			SizeBefore: rep.SizeBefore, SizeAfter: rep.SizeAfter, StaleTemps: rep.StaleTemps,
			Orphans: []cacheEntryJSON{}, OrphanSize: rep.OrphanSize, Warnings: append([]string{}, rep.Warnings...)}
		for i := range rep.Removed {
			out.Removed = append(out.Removed, entryJSON(&rep.Removed[i]))
		}
		for i := range rep.Orphans {
			out.Orphans = append(out.Orphans, entryJSON(&rep.Orphans[i]))
		}
		if err := writeJSON(stdout, out); err != nil {
			return errorf(stderr, name, "%v", err)
		}
		return pruneExit(rep)
	}
	verb := "removed"
	if *dry {
		verb = "would remove"
	}
	for _, e := range rep.Removed {
		fmt.Fprintf(stdout, "%s %s %s %s\n", verb, e.BuildID, e.Name, humanSize(e.Size))
	}
	fmt.Fprintf(stdout, "%d entries %s, %d kept; %s -> %s\n", len(rep.Removed), verb, rep.Kept, humanSize(rep.SizeBefore), humanSize(rep.SizeAfter))
	for _, e := range rep.Orphans {
		fmt.Fprintf(stdout, "%s orphan %s %s %s (no .build-id link leads to it)\n", verb, e.BuildID, e.Dir, humanSize(e.Size))
	}
	if len(rep.Orphans) > 0 {
		fmt.Fprintf(stdout, "%d orphaned entry directories %s, %s\n", len(rep.Orphans), verb, humanSize(rep.OrphanSize))
	}
	for _, w := range rep.Warnings {
		fmt.Fprintf(stderr, "perfcheck %s: warning: %s\n", name, w)
	}
	return pruneExit(rep)
}

// pruneExit is exitProblems when prune left something undone (its
// warnings: orphans not looked for because a .build-id link could not be
// read, or one left because it changed), so that a script notices.
func pruneExit(rep *buildidcache.PruneReport) int {
	if len(rep.Warnings) > 0 {
		return exitProblems
	}
	return exitOK
}

// parseSize reads "2G", "500M", "1.5GiB", "4096": K, M, G, T are powers of
// 1024 as in du -h and perf's own size options.
func parseSize(s string) (int64, error) {
	t := strings.TrimSuffix(strings.TrimSuffix(strings.ToUpper(strings.TrimSpace(s)), "B"), "I")
	mult := int64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		}
		if mult > 1 {
			t = t[:n-1]
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 || v*float64(mult) > 1<<62 {
		return 0, fmt.Errorf("bad size %q (want e.g. 2G, 500M, 4096)", s)
	}
	return int64(v * float64(mult)), nil
}

// parseAge reads a Go duration or a whole number of days ("30d") or weeks
// ("2w").
func parseAge(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	for suffix, unit := range map[string]time.Duration{"d": 24 * time.Hour, "w": 7 * 24 * time.Hour} {
		if n, ok := strings.CutSuffix(s, suffix); ok {
			v, err := strconv.ParseFloat(n, 64)
			if err != nil || v < 0 {
				return 0, fmt.Errorf("bad age %q (want e.g. 30d, 2w, 12h)", s)
			}
			return time.Duration(v * float64(unit)), nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("bad age %q (want e.g. 30d, 2w, 12h)", s)
	}
	return d, nil
}

func humanSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%dB", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f%c", float64(n)/float64(div), "KMGTPE"[exp])
}

// runCacheFill adds every DSO that the recording's samples touch (leaf or
// anywhere in a callchain) whose binary on this machine still has the
// recorded build-id: the step to run before binaries are replaced.
func runCacheFill(args []string, stdout, stderr io.Writer) int {
	const name = "cache fill"
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	lf := lookupFlags{fills: true}
	lf.register(fs)
	var in inputFlag
	in.register(fs)
	hard := fs.Bool("hardlink", false, "hard-link binaries into the cache as perf does, instead of copying")
	jsonOut := fs.Bool("json", false, "print JSON")
	fs.Usage = func() { cacheUsage(stderr); fs.PrintDefaults() }
	pos, code := interspersed(fs, args)
	if code >= 0 {
		return code
	}
	file, err := in.file(pos, nil)
	if err != nil {
		return usageError(fs, stderr, "%v", err)
	}
	opts := lf.options(stderr)
	c := &buildidcache.Cache{Dir: opts.BuildIDDir, HardLink: *hard, DebugDirs: opts.DebugDirs}
	// The check finds the DSOs samples touch; symbols are not needed.
	// The lookup is perf's cache and the path alone, as fill's own
	// lookups below come after: nothing is downloaded twice.
	res, err := check.Analyze(context.Background(), check.Path(file), check.Options{NoSymbols: true,
		Lookup: buildidcache.Options{BuildIDDir: c.Dir, SymFS: lf.symfs, DebugDirs: []string{}, DebuginfodURLs: []string{}}})
	if err != nil {
		return errorf(stderr, name, "%v", err)
	}
	r := buildidcache.New(opts)
	defer r.Close()
	rep := &cacheAddReportJSON{CacheDir: c.Dir, File: file, Results: []cacheAddJSON{}}
	dsos := append([]*check.DSO(nil), res.DSOs...)
	sort.SliceStable(dsos, func(i, j int) bool { return dsos[i].Path < dsos[j].Path })
	// A pid names this machine's process only in a recording made here
	// in this boot; otherwise no /proc/PID/root is looked under.
	var pids map[*check.DSO][]int
	if res.ThisBoot {
		pids = dsoPIDs(res)
	}
	for _, d := range dsos {
		if a, ok := fillOne(c, r, d, pids[d]); ok {
			rep.add(a)
		}
	}
	if err := rep.print(stdout, *jsonOut); err != nil {
		return errorf(stderr, name, "%v", err)
	}
	return rep.exitCode()
}

// dsoPIDs lists, for each DSO, the processes whose samples touch it, in
// ascending order: fill looks for a containerized process's binaries
// through /proc/PID/root while it runs.
func dsoPIDs(res *check.Result) map[*check.DSO][]int {
	sets := map[*check.DSO]map[int]bool{}
	for _, a := range res.Aggregates() {
		for _, l := range a.Stack.Locations() {
			if sets[l.DSO] == nil {
				sets[l.DSO] = map[int]bool{}
			}
			sets[l.DSO][int(int32(a.PID))] = true
		}
	}
	out := make(map[*check.DSO][]int, len(sets))
	for d, set := range sets {
		for pid := range set {
			if pid > 0 {
				out[d] = append(out[d], pid)
			}
		}
		sort.Ints(out[d])
	}
	return out
}

// fillOne caches one DSO; ok is false for mappings that have no binary to
// cache (anonymous memory, JIT code, [vsyscall]).
func fillOne(c *buildidcache.Cache, r *buildidcache.Resolver, d *check.DSO, pids []int) (cacheAddJSON, bool) {
	a := cacheAddJSON{Path: d.Path, BuildID: d.BuildID.String()}
	switch d.Kind {
	case dso.File, dso.Module, dso.Kernel, dso.VDSO:
	default:
		return a, false
	}
	bid := d.BuildID
	if bid.IsZero() {
		a.Status, a.Reason = "skipped", "no build-id recorded: nothing to file it under"
		return a, true
	}
	done := func(e *buildidcache.Entry, err error) (cacheAddJSON, bool) {
		if err != nil {
			a.Status, a.Reason = "error", err.Error()
			if errors.Is(err, buildidcache.ErrMismatch) || errors.Is(err, buildidcache.ErrNoBuildID) || errors.Is(err, buildidcache.ErrNotELF) {
				a.Status = "skipped"
			}
			return a, true
		}
		a.Status = "cached"
		if e.Added {
			a.Status = "added"
		}
		if e.Unshared {
			a.Reason = unsharedReason
		}
		ej := entryJSON(e)
		a.Entry = &ej
		return a, true
	}
	switch d.Kind {
	case dso.Kernel, dso.VDSO:
		if e, ok := c.Has(bid); ok {
			return done(e, nil)
		}
	}
	switch d.Kind {
	case dso.Kernel:
		kid, err := buildidcache.KernelBuildID()
		if err != nil || !kid.Matches(bid) {
			a.Status, a.Reason = "skipped", "recorded on another kernel than the running one ("+kid.String()+")"
			return a, true
		}
		return done(c.AddKernel())
	case dso.VDSO:
		_, id, err := buildidcache.VDSO()
		if err != nil || !id.BuildID.Matches(bid) {
			a.Status, a.Reason = "skipped", "the running vDSO has another build-id"
			return a, true
		}
		return done(c.AddVDSO())
	}
	// The recorded device and inode, when MMAP2 gave them, are what a
	// file under a process's /proc/PID/root must also be to be cached.
	var mapped *buildidcache.FileID
	if d.Dev != nil {
		mapped = &buildidcache.FileID{Maj: d.Dev.Maj, Min: d.Dev.Min, Ino: d.Dev.Ino}
	}
	e, err := c.AddRecordedMapping(r, d.Path, pids, bid, mapped)
	switch {
	case errors.Is(err, buildidcache.ErrNotFound):
		a.Status, a.Reason = "skipped", "no file at the recorded path"
		return a, true
	case errors.Is(err, buildidcache.ErrMismatch):
		a.Status, a.Reason = "skipped", "the binary at the path has changed since the recording: "+err.Error()
		return a, true
	}
	return done(e, err)
}
