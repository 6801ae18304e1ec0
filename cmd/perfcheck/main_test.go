package main

import (
	"os"
	"testing"
)

// testDebuginfodCache holds the directory TestMain made, for its
// children.
const testDebuginfodCache = "PERFCHECK_TEST_DEBUGINFOD_CACHE"

// TestMain points debuginfod's client cache at a directory of the test
// run: a test that runs the command with --debuginfod and no cache of its
// own must not fill the user's ~/.cache/debuginfod_client. Tests that look
// at the default cache set their own environment.
//
// A child of these tests (this binary again, which often ends with
// os.Exit and would leave its own directory behind) uses its parent's.
func TestMain(m *testing.M) {
	if os.Getenv(testDebuginfodCache) != "" {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "perfcheck-test-debuginfod")
	if err != nil {
		panic(err)
	}
	os.Setenv("DEBUGINFOD_CACHE_PATH", dir)
	os.Setenv(testDebuginfodCache, dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
