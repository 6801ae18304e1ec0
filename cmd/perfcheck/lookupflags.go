package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/perfcheck/perfcheck/buildidcache"
)

// lookupFlags are the flags that say where binaries are looked up by
// build-id (docs/commands-check.md, docs/buildidcache.md). Every command
// that resolves binaries registers them with register and builds its
// Resolver from options, so that the flags mean the same everywhere.
type lookupFlags struct {
	// fills is set by the commands that write the cache, which create
	// a missing --buildid-dir instead of warning about it.
	fills      bool
	buildIDDir string
	symfs      string
	debugDirs  stringList
	debuginfod stringList
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string { return strings.Join(*s, " ") }
func (s *stringList) Set(v string) error {
	*s = append(*s, v)
	return nil
}

func (lf *lookupFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&lf.buildIDDir, "buildid-dir", "", "perf's build-id cache (default $PERF_BUILDID_DIR, else buildid.dir in ~/.perfconfig, else $HOME/.debug)")
	fs.Var(&lf.debugDirs, "debug-dir", "a debug directory to search (repeatable; default /usr/lib/debug)")
	fs.StringVar(&lf.symfs, "symfs", "", "look up recorded paths under this root, as perf's --symfs")
	fs.Var(&lf.debuginfod, "debuginfod", "a debuginfod server URL (repeatable; default $DEBUGINFOD_URLS; \"none\" disables)")
}

// options turns the flags into Resolver options. Download progress goes to
// stderr only when it is a terminal.
func (lf *lookupFlags) options(stderr io.Writer) buildidcache.Options {
	o := buildidcache.Options{BuildIDDir: cacheDirFlag(lf.buildIDDir, stderr), SymFS: lf.symfs}
	if len(lf.debugDirs) > 0 {
		o.DebugDirs = append([]string(nil), lf.debugDirs...)
	}
	if len(lf.debuginfod) > 0 {
		o.DebuginfodURLs = []string{}
		for _, v := range lf.debuginfod {
			if v == "none" {
				o.DebuginfodURLs = []string{}
				continue
			}
			o.DebuginfodURLs = append(o.DebuginfodURLs, strings.Fields(v)...)
		}
	}
	if f, ok := terminalFile(stderr); ok {
		o.Progress = f
	}
	for _, w := range lf.unusable(o) {
		fmt.Fprintln(stderr, "perfcheck: warning: "+w)
	}
	return o
}

// debuginfodProbeTimeout bounds the connection attempt that tells an
// unreachable debuginfod server before the lookups time out on it one by
// one.
const debuginfodProbeTimeout = 2 * time.Second

// unusable says, once each, which lookup sources the user named cannot be
// used: a --buildid-dir or --debug-dir that is missing or not a directory,
// a debuginfod server that cannot be connected to. Without the warning
// such a run looks like one where the binaries were simply not there.
func (lf *lookupFlags) unusable(o buildidcache.Options) []string {
	var out []string
	dir := func(flag, d string, mayBeMissing bool) {
		st, err := os.Stat(d)
		switch {
		case errors.Is(err, fs.ErrNotExist) && mayBeMissing:
		case err != nil:
			out = append(out, fmt.Sprintf("%s %s: %v; nothing is looked up there", flag, d, errors.Unwrap(err)))
		case !st.IsDir():
			out = append(out, fmt.Sprintf("%s %s: not a directory; nothing is looked up there", flag, d))
		}
	}
	if lf.buildIDDir != "" {
		dir("--buildid-dir", lf.buildIDDir, lf.fills)
	}
	for _, d := range lf.debugDirs {
		dir("--debug-dir", d, false)
	}
	urls := o.DebuginfodURLs
	if urls == nil {
		urls = buildidcache.DebuginfodURLsFromEnv()
	}
	for _, u := range urls {
		if err := probeDebuginfod(u); err != nil {
			out = append(out, fmt.Sprintf("debuginfod %s: %v; nothing is downloaded from it", u, err))
		}
	}
	return out
}

// probeDebuginfod connects to the server of URL u and hangs up.
func probeDebuginfod(u string) error {
	p, err := url.Parse(u)
	if err != nil {
		return err
	}
	port := p.Port()
	switch {
	case p.Scheme != "http" && p.Scheme != "https":
		return fmt.Errorf("not an http or https URL")
	case port == "" && p.Scheme == "http":
		port = "80"
	case port == "":
		port = "443"
	}
	c, err := net.DialTimeout("tcp", net.JoinHostPort(p.Hostname(), port), debuginfodProbeTimeout)
	if err != nil {
		return fmt.Errorf("unreachable (%w)", err)
	}
	return c.Close()
}

// interspersed parses fs over args with flags allowed before and after
// positional arguments ("perfcheck buildid a b --json" must work) and
// returns the positional ones, or a non-negative exit code when parsing
// ended the command (-h, a bad flag).
func interspersed(fs *flag.FlagSet, args []string) ([]string, int) {
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
