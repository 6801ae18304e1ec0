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
// information (symbolFile).
type resolverLocator struct {
	r *buildidcache.Resolver
}

// Locate implements locator.
func (l *resolverLocator) Locate(ctx context.Context, q buildidcache.Query) (*buildidcache.Result, error) {
	switch q.Kind {
	case dso.Kernel, dso.Module, dso.VDSO:
	default:
		q.Kind = dso.File // the lookup knows only binaries of these four kinds
	}
	res, err := l.r.Resolve(ctx, q)
	if err != nil {
		if errors.Is(err, buildidcache.ErrNotFound) {
			// Wrapped, not flattened, so that errors.As reaches the
			// *buildidcache.NotFoundError and its Tried and Rejected.
			return nil, fmt.Errorf("check: no binary with the recorded build-id found: %w", err)
		}
		return nil, err
	}
	return res, nil
}
