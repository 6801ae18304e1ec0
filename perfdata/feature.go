package perfdata

import "strconv"

// Feature identifies a perf.data header feature: a bit of the file header's
// adds_features bitmap and, in pipe mode, the feat_id of a HEADER_FEATURE
// record (the HEADER_* enum in tools/perf/util/header.h).
type Feature int

// Header features, numbered as in tools/perf/util/header.h.
const (
	FeatureReserved       Feature = 0 // never set
	FeatureTracingData    Feature = 1
	FeatureBuildID        Feature = 2
	FeatureHostname       Feature = 3
	FeatureOSRelease      Feature = 4
	FeatureVersion        Feature = 5
	FeatureArch           Feature = 6
	FeatureNrCPUs         Feature = 7
	FeatureCPUDesc        Feature = 8
	FeatureCPUID          Feature = 9
	FeatureTotalMem       Feature = 10
	FeatureCmdLine        Feature = 11
	FeatureEventDesc      Feature = 12
	FeatureCPUTopology    Feature = 13
	FeatureNUMATopology   Feature = 14
	FeatureBranchStack    Feature = 15
	FeaturePMUMappings    Feature = 16
	FeatureGroupDesc      Feature = 17
	FeatureAuxtrace       Feature = 18
	FeatureStat           Feature = 19
	FeatureCache          Feature = 20
	FeatureSampleTime     Feature = 21
	FeatureMemTopology    Feature = 22
	FeatureClockID        Feature = 23
	FeatureDirFormat      Feature = 24
	FeatureBPFProgInfo    Feature = 25
	FeatureBPFBTF         Feature = 26
	FeatureCompressed     Feature = 27
	FeatureCPUPMUCaps     Feature = 28
	FeatureClockData      Feature = 29
	FeatureHybridTopology Feature = 30
	FeaturePMUCaps        Feature = 31
	FeatureCPUDomainInfo  Feature = 32

	// featureLast is the HEADER_LAST_FEATURE this reader knows; pipe
	// streams of perf >= 6.5 end their feature list with a payload-less
	// record of that id (perf_event__synthesize_features). Newer perfs
	// have a larger value, so any id at or above it with no payload is an
	// end marker.
	featureLast Feature = 33

	// simpleperf's own features, from FEAT_SIMPLEPERF_START
	// (system/extras/simpleperf/record_file.h). Linux perf skips them.
	FeatureSimpleperfFile            Feature = 128
	FeatureSimpleperfMetaInfo        Feature = 129
	FeatureSimpleperfDebugUnwind     Feature = 130
	FeatureSimpleperfDebugUnwindFile Feature = 131
	FeatureSimpleperfFile2           Feature = 132
	FeatureSimpleperfETMBranchList   Feature = 133
	FeatureSimpleperfInitMap         Feature = 134

	// featureBits is HEADER_FEAT_BITS, the size of the file header bitmap.
	featureBits = 256
)

// featureNames are perf's own names (feat_ops[].name in header.c, the
// stringified enum suffix).
var featureNames = [...]string{
	FeatureReserved:       "RESERVED",
	FeatureTracingData:    "TRACING_DATA",
	FeatureBuildID:        "BUILD_ID",
	FeatureHostname:       "HOSTNAME",
	FeatureOSRelease:      "OSRELEASE",
	FeatureVersion:        "VERSION",
	FeatureArch:           "ARCH",
	FeatureNrCPUs:         "NRCPUS",
	FeatureCPUDesc:        "CPUDESC",
	FeatureCPUID:          "CPUID",
	FeatureTotalMem:       "TOTAL_MEM",
	FeatureCmdLine:        "CMDLINE",
	FeatureEventDesc:      "EVENT_DESC",
	FeatureCPUTopology:    "CPU_TOPOLOGY",
	FeatureNUMATopology:   "NUMA_TOPOLOGY",
	FeatureBranchStack:    "BRANCH_STACK",
	FeaturePMUMappings:    "PMU_MAPPINGS",
	FeatureGroupDesc:      "GROUP_DESC",
	FeatureAuxtrace:       "AUXTRACE",
	FeatureStat:           "STAT",
	FeatureCache:          "CACHE",
	FeatureSampleTime:     "SAMPLE_TIME",
	FeatureMemTopology:    "MEM_TOPOLOGY",
	FeatureClockID:        "CLOCKID",
	FeatureDirFormat:      "DIR_FORMAT",
	FeatureBPFProgInfo:    "BPF_PROG_INFO",
	FeatureBPFBTF:         "BPF_BTF",
	FeatureCompressed:     "COMPRESSED",
	FeatureCPUPMUCaps:     "CPU_PMU_CAPS",
	FeatureClockData:      "CLOCK_DATA",
	FeatureHybridTopology: "HYBRID_TOPOLOGY",
	FeaturePMUCaps:        "PMU_CAPS",
	FeatureCPUDomainInfo:  "CPU_DOMAIN_INFO",
}

var simpleperfFeatureNames = map[Feature]string{
	FeatureSimpleperfFile: "simpleperf:FILE", FeatureSimpleperfMetaInfo: "simpleperf:META_INFO",
	FeatureSimpleperfDebugUnwind: "simpleperf:DEBUG_UNWIND", FeatureSimpleperfDebugUnwindFile: "simpleperf:DEBUG_UNWIND_FILE",
	FeatureSimpleperfFile2: "simpleperf:FILE2", FeatureSimpleperfETMBranchList: "simpleperf:ETM_BRANCH_LIST",
	FeatureSimpleperfInitMap: "simpleperf:INIT_MAP",
}

// String returns perf's name for the feature ("HOSTNAME", "BUILD_ID", ...),
// simpleperf's for its own ("simpleperf:META_INFO"), or "feature(N)" for
// ids this reader does not know.
func (f Feature) String() string {
	if f >= 0 && int(f) < len(featureNames) {
		return featureNames[f]
	}
	if s, ok := simpleperfFeatureNames[f]; ok {
		return s
	}
	return "feature(" + strconv.Itoa(int(f)) + ")"
}

// featureSection is one entry of the feature section table that follows
// the data section in file mode (struct perf_file_section, one per set bit
// of adds_features, in ascending bit order).
type featureSection struct {
	ID     Feature
	Offset int64
	Size   int64
}
