package main

import (
	"os"
	"testing"
)

// TestMain points debuginfod's client cache at a directory of the test
// run: a test that runs the command with --debuginfod and no cache of its
// own must not fill the user's ~/.cache/debuginfod_client. Tests that look
// at the default cache set their own environment.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "perfcheck-test-debuginfod")
	if err != nil {
		panic(err)
	}
	os.Setenv("DEBUGINFOD_CACHE_PATH", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
