package check

import (
	"encoding/json"
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
	t.Parallel()
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

	// The program is built as a package inside this module, so that its
	// imports resolve to this tree, but it is written only to a temporary
	// directory: an overlay puts it at a path of the module that does
	// not exist (under testdata, no package of ./...).
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	tmp := t.TempDir()
	src := filepath.Join(tmp, "main.go")
	require.NoError(t, os.WriteFile(src, []byte(prog), 0o644))
	pkg := filepath.Join(root, "check", "testdata", "readme-program")
	_, err = os.Stat(pkg)
	require.ErrorIs(t, err, os.ErrNotExist, "the overlay's directory must not be in the tree")
	overlay, err := json.Marshal(map[string]any{"Replace": map[string]string{filepath.Join(pkg, "main.go"): src}})
	require.NoError(t, err)
	ov := filepath.Join(tmp, "overlay.json")
	require.NoError(t, os.WriteFile(ov, overlay, 0o644))
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-overlay", ov, "-o", os.DevNull, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
}
