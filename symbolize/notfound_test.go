package symbolize

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/perfcheck/perfcheck/buildidcache"
)

// TestDefaultDebugFileNotFound checks that "no debug file" is the one
// not-found sentinel, buildidcache's, so a locator backed by buildidcache
// and the default one are told apart from real failures the same way.
func TestDefaultDebugFileNotFound(t *testing.T) {
	t.Parallel()
	_, err := defaultDebugFile(DebugQuery{
		Path: "/nonexistent/prog", BuildID: []byte{0xde, 0xad, 0xbe, 0xef}, DebugLink: "prog.debug"})
	assert.ErrorIs(t, err, buildidcache.ErrNotFound)
}
