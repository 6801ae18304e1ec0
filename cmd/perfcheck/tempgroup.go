package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/perfcheck/perfcheck/check"
)

// A recording of builds and test runs (go test ./..., go run, a build
// system's scratch directory) touches many binaries that lived for
// seconds in a temporary directory and are gone: each is missing, for
// the same reason, and listing them one by one buries what else the
// check found. check's text output prints each such group as one line
// with the count and the pattern their paths match; --json keeps every
// DSO.

// goBuildDir matches the go command's work directory (go-build followed
// by digits, os.MkdirTemp's suffix), where go run and go test link their
// binaries and which they remove when done.
var goBuildDir = regexp.MustCompile(`/go-build[0-9]+/`)

// tempDirs are the directories whose files are temporary.
func tempDirs() []string {
	dirs := []string{"/tmp", "/var/tmp", "/dev/shm"}
	if t := filepath.Clean(os.TempDir()); t != "/tmp" {
		dirs = append(dirs, t)
	}
	return dirs
}

// tempPattern is the pattern of d's path when d is a deleted temporary
// binary (missing: no file at its path; a go command work directory,
// a temporary directory, or perf's " (deleted)" suffix for a file
// removed while mapped), "" otherwise.
func tempPattern(d *check.DSO, tmp []string) string {
	if d.Verdict != check.Missing {
		return ""
	}
	p := d.Path
	if loc := goBuildDir.FindStringIndex(p); loc != nil {
		return p[:loc[0]] + "/go-build*/**"
	}
	if strings.HasSuffix(p, " (deleted)") {
		return "* (deleted)"
	}
	for _, t := range tmp {
		if strings.HasPrefix(p, t+"/") {
			return t + "/**"
		}
	}
	return ""
}

// tempGroup is the deleted temporary binaries whose paths match one
// pattern, as the text output prints them.
type tempGroup struct {
	pattern   string
	dsos      []*check.DSO
	leaf, any uint64 // sums of the members' hits
}

// tempGroups groups the deleted temporary binaries among dsos by pattern;
// a pattern that only one DSO matches makes no group (that DSO is listed
// as any other). The map gives each member its group.
func tempGroups(dsos []*check.DSO) map[*check.DSO]*tempGroup {
	tmp := tempDirs()
	byPattern := map[string]*tempGroup{}
	for _, d := range dsos {
		p := tempPattern(d, tmp)
		if p == "" {
			continue
		}
		g := byPattern[p]
		if g == nil {
			g = &tempGroup{pattern: p}
			byPattern[p] = g
		}
		g.dsos = append(g.dsos, d)
		g.leaf += d.HitsLeaf
		g.any += d.HitsAny
	}
	out := map[*check.DSO]*tempGroup{}
	for _, g := range byPattern {
		if len(g.dsos) < 2 {
			continue
		}
		for _, d := range g.dsos {
			out[d] = g
		}
	}
	return out
}

// label is the group as the table and the advice print it.
func (g *tempGroup) label() string {
	return g.pattern + " (" + strconv.Itoa(len(g.dsos)) + " deleted temporary binaries; --json lists each)"
}

// groupedPaths is paths (an advice's) with the members of each group
// replaced by the group's label, where its first member was.
func groupedPaths(paths []string, dsos []*check.DSO, groups map[*check.DSO]*tempGroup) []string {
	if len(groups) == 0 {
		return paths
	}
	byPath := map[string]*tempGroup{}
	for _, d := range dsos {
		if g := groups[d]; g != nil {
			byPath[d.Path] = g
		}
	}
	var out []string
	said := map[*tempGroup]bool{}
	for _, p := range paths {
		g := byPath[p]
		switch {
		case g == nil:
			out = append(out, p)
		case !said[g]:
			said[g] = true
			out = append(out, g.label())
		}
	}
	return out
}
