package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perfcheck/perfcheck/perfdata"
)

// TestStatsCutRecording: perfcheck stats on a real recording cut inside a
// sample prints the counts of every record before the cut, then fails
// (exit 2) naming the file and the offset of the cut record, the same
// offset as a full decoding of every record gives. The cut is met by the
// stream (the record's size runs past the end) before the sample is
// decoded, so this covers the command's partial output and exit status;
// that SampleHeadersOnly reports a damaged sample with the same error and
// offset as full decoding is perfdata's TestSampleHeadersOnlySame.
func TestStatsCutRecording(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join(fixturesDir, "cshared-fp.data"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := perfdata.NewFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	// The 40th sample, and how many records come before it.
	var at int64 = -1
	var size uint16
	before, samples := 0, 0
	rs := f.Records(perfdata.RecordsOptions{})
	for rs.Next() {
		h := rs.Record().Header()
		if h.RecType == perfdata.RecordSample {
			if samples++; samples == 40 {
				at, size = h.Offset, h.Size
				break
			}
		}
		before++
	}
	if at < 0 {
		t.Fatalf("the fixture has %d samples, fewer than 40", samples)
	}
	cut := filepath.Join(t.TempDir(), "cut.data")
	// Cut in the middle of the sample, inside its callchain.
	if err := os.WriteFile(cut, data[:at+int64(size)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	// What full decoding says about the cut file.
	cf, err := perfdata.NewFile(strings.NewReader(string(data[:at+int64(size)/2])), at+int64(size)/2)
	if err != nil {
		t.Fatal(err)
	}
	crs := cf.Records(perfdata.RecordsOptions{})
	for crs.Next() {
	}
	var fe *perfdata.FormatError
	if !errors.As(crs.Err(), &fe) || fe.Offset != at {
		t.Fatalf("full decoding of the cut file: %v, want an error at %d", crs.Err(), at)
	}

	out, errOut, code := runCmd(t, "stats", cut)
	if code != exitError {
		t.Errorf("exit %d, want %d", code, exitError)
	}
	if want := fmt.Sprintf("offset %d (", at); !strings.Contains(errOut, cut) || !strings.Contains(errOut, want) {
		t.Errorf("stderr %q does not name %s and %q", errOut, cut, want)
	}
	if want := fmt.Sprintf("TOTAL events: %10d\n", before); !strings.Contains(out, want) {
		t.Errorf("stdout does not count the %d records before the cut:\n%s", before, out)
	}
}
