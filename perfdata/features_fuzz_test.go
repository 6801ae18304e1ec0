package perfdata

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// FuzzFeatureSection decodes arbitrary bytes as the payload of every
// feature, in both byte orders and in both modes (a file section and a
// pipe HEADER_FEATURE payload). The body calls every accessor (callAll);
// the invariants are no panic and "an error means no result". Seeds are
// the real sections of the fixtures and the corpus.
func FuzzFeatureSection(f *testing.F) {
	var seeds []string
	for _, pat := range []string{"../testdata/perf/*.data", corpusDir + "/perf.data.*", corpusDir + "/modern/*.data"} {
		m, _ := filepath.Glob(pat)
		seeds = append(seeds, m...)
	}
	for _, p := range seeds {
		st, err := os.Stat(p)
		if err != nil || st.IsDir() {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		fs, err := featuresOf(b)
		if err != nil {
			continue
		}
		for _, id := range fs.IDs() {
			if raw, err := fs.Raw(id); err == nil && len(raw) < 4096 {
				f.Add(uint8(id), false, raw)
			}
		}
	}
	f.Add(uint8(FeatureBuildID), false, buildIDEvent(binary.LittleEndian, 1, -1, nil, 0, "nel.kallsyms]"))
	f.Fuzz(func(t *testing.T, id uint8, bigEndian bool, payload []byte) {
		var order binary.ByteOrder = binary.LittleEndian
		if bigEndian {
			order = binary.BigEndian
		}
		feats := []featureSection{{ID: Feature(id), Offset: 8, Size: int64(len(payload))}}
		if Feature(id) == FeatureCPUTopology {
			// Give it the NRCPUS it depends on, from the same bytes.
			feats = append([]featureSection{{ID: FeatureNrCPUs, Offset: 8, Size: min(8, int64(len(payload)))}}, feats...)
		}
		file := append(make([]byte, 8), payload...)
		fs := newFileFeatures(bytes.NewReader(file), int64(len(file)), order, feats)
		// Malformed input may fail; it may not fail with a result.
		if _, bad := callAllChecked(fs); bad != nil {
			t.Fatal(bad)
		}
		ps := newPipeFeatures(order)
		ps.addPipe(Feature(id), payload, 100)
		if _, bad := callAllChecked(ps); bad != nil {
			t.Fatal(bad)
		}
	})
}

// TestFeaturesBigEndian decodes sections written in big-endian order (no
// big-endian machine is here: the payloads are built by hand with the
// layouts of header.c's write_* functions, docs/perfdata-format.md).
func TestFeaturesBigEndian(t *testing.T) {
	t.Parallel()
	be := binary.BigEndian
	str := func(s string) []byte {
		n := (len(s) + 1 + 63) / 64 * 64
		b := be.AppendUint32(nil, uint32(n))
		return append(b, append([]byte(s), make([]byte, n-len(s))...)...)
	}
	var file []byte
	var secs []featureSection
	add := func(id Feature, b []byte) {
		secs = append(secs, featureSection{ID: id, Offset: int64(len(file)), Size: int64(len(b))})
		file = append(file, b...)
	}
	add(FeatureBuildID, buildIDEvent(be, 2|miscBuildIDSize, -1, bytes.Repeat([]byte{0xcd}, 20), 8, "/bin/true"))
	add(FeatureHostname, str("bighost"))
	add(FeatureNrCPUs, be.AppendUint32(be.AppendUint32(nil, 8), 4))
	add(FeatureTotalMem, be.AppendUint64(nil, 123456))
	add(FeatureCmdLine, append(be.AppendUint32(nil, 2), append(str("perf"), str("record")...)...))
	add(FeatureSampleTime, be.AppendUint64(be.AppendUint64(nil, 10), 20))
	add(FeaturePMUMappings, append(be.AppendUint32(be.AppendUint32(nil, 1), 4), str("cpu")...))
	fs := newFileFeatures(bytes.NewReader(file), int64(len(file)), be, secs)

	ids, err := fs.BuildIDs()
	if err != nil || len(ids) != 1 || ids[0].BuildID.String() != "cdcdcdcdcdcdcdcd" || ids[0].Filename != "/bin/true" || ids[0].CPUMode != CPUModeUser {
		t.Errorf("build-ids %+v %v", ids, err)
	}
	h, err := fs.Hostname()
	eq(t, "hostname", h, "bighost", err)
	a, o, err := fs.NrCPUs()
	eq(t, "nrcpus", [2]int{a, o}, [2]int{8, 4}, err)
	m, err := fs.TotalMem()
	eq(t, "mem", m, 123456, err)
	c, err := fs.CmdLine()
	eq(t, "cmdline", len(c) == 2 && c[0] == "perf" && c[1] == "record", true, err)
	first, last, err := fs.SampleTime()
	eq(t, "sample time", [2]uint64{first, last}, [2]uint64{10, 20}, err)
	pm, err := fs.PMUMappings()
	eq(t, "pmu", len(pm) == 1 && pm[0] == PMUMapping{Type: 4, Name: "cpu"}, true, err)
}
