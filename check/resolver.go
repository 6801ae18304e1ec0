package check

import (
	"context"
	"errors"
	"fmt"

	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/dso"
)

// resolverLocator is the locator Analyze uses: a buildidcache.Resolver
// (perf's cache, debug directories, debuginfod, the recorded path, the
// running kernel and vdso). The identity comes from the first verified
// candidate, the file to symbolize with from the one with the most debug
// information.
type resolverLocator struct {
	r *buildidcache.Resolver
}

// Locate implements locator.
func (l *resolverLocator) Locate(ctx context.Context, q query) (*located, error) {
	res, err := l.r.Resolve(ctx, lookupQuery(q))
	if err != nil {
		if errors.Is(err, buildidcache.ErrNotFound) {
			// Wrapped, not flattened, so that errors.As reaches the
			// *buildidcache.NotFoundError and its Tried and Rejected.
			return nil, fmt.Errorf("check: no binary with the recorded build-id found: %w", err)
		}
		return nil, err
	}
	return locatedOf(res), nil
}

// lookupQuery is q as buildidcache asks it.
func lookupQuery(q query) buildidcache.Query {
	bq := buildidcache.Query{BuildID: q.BuildID, Kind: q.Kind, Path: q.Path, PID: q.PID}
	switch q.Kind {
	case dso.Kernel, dso.Module, dso.VDSO:
	default:
		bq.Kind = dso.File // the lookup knows only binaries of these four kinds
	}
	return bq
}

// locatedOf is what a locator answers for buildidcache's res: the file that
// proves the identity, and the richest one to symbolize with.
func locatedOf(res *buildidcache.Result) *located {
	loc := &located{
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
