package buildidcache

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/buildid"
	"github.com/perfcheck/perfcheck/internal/regfile"
)

// The causes below sentinels stay reachable with errors.Is and errors.As,
// not flattened into the message, whose text does not change.

// A server that refuses the connection: ErrServer, and the dial error.
func TestDebuginfodConnectErrorWraps(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	url := "http://" + l.Addr().String()
	require.NoError(t, l.Close())
	d := newDebuginfod(Options{DebuginfodURLs: []string{url}, DebuginfodCache: t.TempDir()})
	o := d.get(context.Background(), testClientCache(t), url, absentBuildID, "executable", ".")
	require.Error(t, o.err)
	assert.ErrorIs(t, o.err, ErrServer)
	assert.ErrorIs(t, o.err, syscall.ECONNREFUSED)
	var ne net.Error
	assert.ErrorAs(t, o.err, &ne)
}

// A body cut short of its Content-Length: ErrServer, and
// io.ErrUnexpectedEOF.
func TestDebuginfodBodyErrorWraps(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "4096")
		w.WriteHeader(http.StatusOK)
		w.Write([]byte("\x7fELF"))
	}))
	defer srv.Close()
	d := newDebuginfod(Options{DebuginfodURLs: []string{srv.URL}, DebuginfodCache: t.TempDir()})
	o := d.get(context.Background(), testClientCache(t), srv.URL, absentBuildID, "executable", ".")
	require.Error(t, o.err)
	assert.ErrorIs(t, o.err, ErrServer)
	assert.ErrorIs(t, o.err, io.ErrUnexpectedEOF)
}

// A .build-id that cannot be read as a directory: errLinkScan, and the
// reason it could not.
func TestLinkScanErrorWraps(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".build-id"), nil, 0o644))
	root, err := os.OpenRoot(dir)
	require.NoError(t, err)
	defer root.Close()
	_, err = linkedDirs(root)
	require.Error(t, err)
	assert.ErrorIs(t, err, errLinkScan)
	assert.ErrorIs(t, err, syscall.ENOTDIR)
}

// OpenRegular on a directory: ErrNotELF and regfile.ErrNotRegular, with
// the message it always had.
func TestOpenRegularWraps(t *testing.T) {
	dir := t.TempDir()
	_, err := OpenRegular(dir)
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrNotELF)
	assert.ErrorIs(t, err, regfile.ErrNotRegular)
	assert.EqualError(t, err, dir+": not a regular file: not an ELF file")
}

// testClientCache is an empty debuginfod client cache in a temporary
// directory, closed when the test ends.
func testClientCache(t *testing.T) clientCache {
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	require.NoError(t, err)
	t.Cleanup(func() { root.Close() })
	return clientCache{root: root, dir: dir}
}

// absentBuildID is a build-id no server here has.
var absentBuildID = buildid.ID{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
