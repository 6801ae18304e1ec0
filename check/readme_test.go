package check

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The README's library program builds against the packages as they are:
// its Go block is compiled, as a main package inside this module, with
// the go command that runs the tests.
func TestREADMEProgramBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	const start, end = "```go\n", "```\n"
	i := strings.Index(string(readme), start)
	require.GreaterOrEqual(t, i, 0, "README.md has no Go block")
	prog := string(readme[i+len(start):])
	prog = prog[:strings.Index(prog, end)]
	require.Contains(t, prog, "package main")

	// Inside the module, so that its imports resolve to this tree; a
	// directory named testdata is no package of ./... .
	require.NoError(t, os.MkdirAll("testdata", 0o755))
	dir, err := os.MkdirTemp("testdata", "readme")
	require.NoError(t, err)
	t.Cleanup(func() {
		os.RemoveAll(dir)
		os.Remove("testdata") // when nothing else is in it
	})
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(prog), 0o644))
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", os.DevNull, "./"+dir)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
}
