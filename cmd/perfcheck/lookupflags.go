package main

import (
	"errors"
	"flag"
	"io"
	"strings"

	"github.com/perfcheck/perfcheck/buildidcache"
)

// lookupFlags are the flags that say where binaries are looked up by
// build-id (docs/commands-check.md, docs/buildidcache.md). Every command
// that resolves binaries registers them with register and builds its
// Resolver from options, so that the flags mean the same everywhere.
type lookupFlags struct {
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
	return o
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
