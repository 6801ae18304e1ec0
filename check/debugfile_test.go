package check

import (
	"slices"
	"testing"

	"github.com/perfcheck/perfcheck/buildid"
	"github.com/perfcheck/perfcheck/dso"
	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// The file at the recorded path stands for a DSO's program headers only
// when it carries the recorded build-id, allowing for perf's zero padding
// to 20 bytes: a file whose build-id merely begins with the recorded one
// is another build.
func TestCodeFileCandidatesBuildID(t *testing.T) {
	t.Parallel()
	bin := fixtures.BuildC(t, t.TempDir(), "prog", "-Wl,--build-id=0x0102030405060708aabb")
	id := buildid.ID{1, 2, 3, 4, 5, 6, 7, 8, 0xaa, 0xbb}
	for _, c := range []struct {
		name string
		rec  buildid.ID
		want bool
	}{
		{"equal", id, true},
		{"padded", append(append(buildid.ID(nil), id...), make([]byte, 10)...), true},
		{"a prefix", id[:8], false},
		{"another", buildid.ID{1, 2, 3, 4, 5, 6, 7, 8, 0xaa, 0xbc}, false},
	} {
		d := &DSO{Path: bin, Kind: dso.File, BuildID: c.rec}
		got := slices.Contains(codeFileCandidates(d, &Options{}), bin)
		if got != c.want {
			t.Errorf("recorded build-id %s (%s): file with %s a candidate: %v, want %v", c.rec, c.name, id, got, c.want)
		}
	}
}
