package pprofout

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/perfcheck/perfcheck/check"
	"github.com/perfcheck/perfcheck/perfdata"
)

// Each file-backed mapping is the recording's own: the first executable
// MMAP2 of the DSO (start, end, pgoff), and every sampled address of that
// process is a location address: the profile's addresses are the ones the
// program ran at, as perf script prints sample IPs.
func TestRealMappings(t *testing.T) {
	root := symfs(t)
	p := filepath.Join(fixtureDir, "cshared-fp.data")
	res, err := check.Analyze(context.Background(), p, check.Options{SymFS: root, BuildIDDir: t.TempDir(), KeepSamples: true})
	if err != nil {
		t.Fatal(err)
	}
	prof, err := Convert(res, Options{})
	if err != nil {
		t.Fatal(err)
	}

	// The first executable MMAP2 of each path, read from the recording.
	f, err := perfdata.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type rng struct{ start, limit, pgoff uint64 }
	first := map[string]rng{}
	rs := f.Records(perfdata.RecordsOptions{Ordered: true})
	for rs.Next() {
		if m, ok := rs.Record().(*perfdata.Mmap2); ok && !m.IsData() {
			if _, seen := first[m.Filename]; !seen {
				first[m.Filename] = rng{m.Addr, m.Addr + m.Len, m.PgOff}
			}
		}
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, m := range prof.Mapping {
		r, ok := first[m.File]
		if !ok {
			continue
		}
		checked++
		// Widened by whole pages at most, never moved: the relation
		// address - Start + Offset = file offset is the recording's.
		if m.Start > r.start || m.Limit < r.limit || m.Start-m.Offset != r.start-r.pgoff {
			t.Errorf("%s: mapping %#x-%#x @%#x; recorded %#x-%#x @%#x", m.File, m.Start, m.Limit, m.Offset, r.start, r.limit, r.pgoff)
		}
	}
	if checked < 3 {
		t.Fatalf("%d mappings compared with the recording's MMAP2s", checked)
	}
	addrs := map[uint64]bool{}
	for _, l := range prof.Location {
		if l.Address < l.Mapping.Start || l.Address >= l.Mapping.Limit {
			t.Errorf("location %#x outside its mapping %#x-%#x", l.Address, l.Mapping.Start, l.Mapping.Limit)
		}
		addrs[l.Address] = true
	}
	n := 0
	res.EachSample(func(s *check.Sample) error {
		for _, ip := range s.IPs {
			n++
			if !addrs[ip] {
				t.Errorf("sampled address %#x (pid %d) is no location address", ip, s.PID)
				return nil
			}
		}
		return nil
	})
	if n == 0 {
		t.Fatal("no sampled address")
	}
}
