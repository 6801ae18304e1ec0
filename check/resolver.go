package check

import (
	"context"
	"errors"
	"fmt"

	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/dso"
)

// ResolverLocator adapts a buildidcache.Resolver (perf's cache, debug
// directories, debuginfod, the recorded path, the running kernel and vdso)
// to a Locator. The identity comes from the first verified candidate, the
// file to symbolize with from the one with the most debug information.
type ResolverLocator struct {
	R *buildidcache.Resolver
}

// NewResolverLocator returns a Locator backed by r.
func NewResolverLocator(r *buildidcache.Resolver) *ResolverLocator { return &ResolverLocator{R: r} }

// Locate implements Locator.
func (l *ResolverLocator) Locate(ctx context.Context, q Query) (*Located, error) {
	res, err := l.R.Resolve(ctx, lookupQuery(q))
	if err != nil {
		if errors.Is(err, buildidcache.ErrNotFound) {
			// Wrapped, not flattened, so that errors.As reaches the
			// *buildidcache.NotFoundError and its Tried and Rejected.
			return nil, fmt.Errorf("check: no binary with the recorded build-id found: %w", err)
		}
		return nil, err
	}
	return located(res), nil
}

// lookupQuery is q as buildidcache asks it.
func lookupQuery(q Query) buildidcache.Query {
	bq := buildidcache.Query{BuildID: q.BuildID, Kind: q.Kind, Path: q.Path, PID: q.PID}
	switch q.Kind {
	case dso.Kernel, dso.Module, dso.VDSO:
	default:
		bq.Kind = dso.File // the lookup knows only binaries of these four kinds
	}
	return bq
}

// located is what a Locator answers for buildidcache's res: the file that
// proves the identity, and the richest one to symbolize with.
func located(res *buildidcache.Result) *Located {
	loc := &Located{
		Path:    res.Identity.Path,
		Source:  res.Identity.Locator,
		BuildID: res.BuildID,
		SymPath: res.Best.Path,
		module:  newModuleImage(res.Identity.Module),
	}
	if res.Best.Image != nil || res.Best.Locator == "running-vdso" {
		// The running vdso lives in memory only; it has no file to open.
		loc.SymPath = ""
		for _, c := range res.Verified {
			if c.Image == nil && c.Locator != "running-vdso" {
				loc.SymPath = c.Path
				break
			}
		}
	}
	for _, c := range res.Rejected {
		loc.Rejected = append(loc.Rejected, c.Locator+" "+c.Path+": "+c.Reason())
	}
	return loc
}
