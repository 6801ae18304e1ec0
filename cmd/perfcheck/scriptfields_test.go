package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/perfdata"
)

// The fields of an event are perf script's: its type's default less what
// the event did not record, or the list -F gives, which must exist.
func TestScriptFieldsForEvent(t *testing.T) {
	all := perfdata.SampleIP | perfdata.SampleTID | perfdata.SampleTime | perfdata.SampleCPU | perfdata.SamplePeriod
	sw := &perfdata.Attr{Type: 1, SampleType: all}
	noCPU := &perfdata.Attr{Type: 1, SampleType: all &^ perfdata.SampleCPU}
	tp := &perfdata.Attr{Type: typeTracepoint, SampleType: all | perfdata.SampleRaw}
	tpChain := &perfdata.Attr{Type: typeTracepoint, SampleType: all | perfdata.SampleRaw | perfdata.SampleCallchain}

	def, err := parseScriptFields("")
	require.NoError(t, err)
	for _, tc := range []struct {
		attr *perfdata.Attr
		want scriptField
	}{
		{sw, perfDefaultFields},
		{noCPU, perfDefaultFields &^ fieldCPU},
		{tp, tracepointDefaultFields},
		{tpChain, tracepointDefaultFields | fieldIP | fieldSym | fieldSymOff | fieldDSO},
	} {
		got, err := def.forEvent("e", tc.attr)
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "%+v", tc.attr)
	}

	change, err := parseScriptFields("+pid,-cpu")
	require.NoError(t, err)
	got, err := change.forEvent("e", sw)
	require.NoError(t, err)
	assert.Equal(t, perfDefaultFields&^fieldCPU|fieldPID, got)
	got, err = change.forEvent("e", tp)
	require.NoError(t, err)
	assert.Equal(t, tracepointDefaultFields&^fieldCPU|fieldPID, got)

	list, err := parseScriptFields("ip,time,comm")
	require.NoError(t, err)
	got, err = list.forEvent("e", tp)
	require.NoError(t, err)
	assert.Equal(t, fieldIP|fieldTime|fieldComm, got)

	cpu, err := parseScriptFields("comm,cpu")
	require.NoError(t, err)
	_, err = cpu.forEvent("cpu-clock", noCPU)
	assert.ErrorContains(t, err, `samples for "cpu-clock" do not have the CPU attribute set: cannot print cpu`)

	addr, err := parseScriptFields("comm,addr,ip,sym")
	require.NoError(t, err)
	_, err = addr.forEvent("cpu-clock", sw)
	assert.ErrorContains(t, err, `samples for "cpu-clock" do not have the ADDR attribute set: cannot print addr`)
	withAddr := &perfdata.Attr{Type: 1, SampleType: all | perfdata.SampleAddr}
	got, err = addr.forEvent("cpu-clock", withAddr)
	require.NoError(t, err)
	assert.Equal(t, fieldComm|fieldAddr|fieldIP|fieldSym, got)
	// A symbol or DSO needs an address: the ip, or the addr that perf
	// names for page faults (the sample decides, not the fields).
	addrSym, err := parseScriptFields("addr,sym,dso")
	require.NoError(t, err)
	got, err = addrSym.forEvent("page-faults", &perfdata.Attr{Type: 1, Config: 2, SampleType: withAddr.SampleType})
	require.NoError(t, err)
	assert.Equal(t, fieldAddr|fieldSym|fieldDSO, got)
	for _, spec := range []string{"comm,sym", "comm,dso", "comm,srcline", "addr,srcline", "addr,symoff"} {
		_, err := parseScriptFields(spec)
		assert.Error(t, err, spec)
	}

	// The fields beyond the stack: refused when asked for and not
	// recorded, dropped from a default that has them.
	for _, f := range []struct {
		name string
		bit  perfdata.SampleType
	}{{"weight", perfdata.SampleWeight}, {"weight", perfdata.SampleWeightStruct}, {"data_src", perfdata.SampleDataSrc},
		{"phys_addr", perfdata.SamplePhysAddr}, {"iregs", perfdata.SampleRegsIntr}, {"uregs", perfdata.SampleRegsUser}} {
		fs, err := parseScriptFields("comm," + f.name)
		require.NoError(t, err)
		_, err = fs.forEvent("cpu-clock", sw)
		assert.ErrorContains(t, err, "cannot print "+f.name)
		got, err := fs.forEvent("cpu-clock", &perfdata.Attr{Type: 1, SampleType: all | f.bit})
		require.NoError(t, err)
		want, _ := lookupScriptField(f.name)
		assert.Equal(t, fieldComm|want, got, f.name)
	}

	// brstack prints nothing without branch stacks, as perf, and the
	// stack with them; dso goes with any of the three branch fields,
	// which need the check to locate branches but for brstack alone.
	br, err := parseScriptFields("ip,brstack,dso")
	require.NoError(t, err)
	got, err = br.forEvent("cpu-clock", sw)
	require.NoError(t, err)
	assert.Equal(t, fieldIP|fieldBrstack|fieldDSO, got)
	got, err = br.forEvent("cycles", &perfdata.Attr{Type: 0, SampleType: all | perfdata.SampleBranchStack})
	require.NoError(t, err)
	assert.Equal(t, fieldIP|fieldBrstack|fieldDSO, got)
	for spec, locates := range map[string]bool{"brstack": false, "brstack,dso": true, "brstacksym": true,
		"brstackoff": true, "+brstack": true, "comm,brstackoff,dso": true} {
		fs, err := parseScriptFields(spec)
		require.NoError(t, err, spec)
		assert.Equal(t, locates, fs.locatesBranches(), spec)
	}
}

// data_src is decoded as perf's perf_script__meminfo_scnprintf decodes
// it, and padded to the widest text printed before, as perf pads it.
func TestScriptDataSrc(t *testing.T) {
	t.Parallel()
	// The value perf record -d records without PEBS: every part N/A.
	const na = 0x1e05080021
	assert.Equal(t, "|OP N/A|LVL N/A or N/A|SNP N/A|TLB N/A|LCK N/A|BLK  N/A", decodeDataSrc(na))
	// A load that hit L1 (PERF_MEM_OP_LOAD, LVL_HIT|LVL_L1, SNOOP_NONE,
	// LOCK_NA, TLB_HIT|TLB_L1, LVLNUM_L1), built from the uapi's bits.
	load := uint64(2) | (2|8)<<5 | 2<<19 | 1<<24 | (2|8)<<26 | 1<<33
	assert.Equal(t, "|OP LOAD|LVL L1 or L1 hit|SNP None|TLB L1 hit|LCK N/A|BLK  N/A", decodeDataSrc(load))

	sf := &scriptFormat{}
	wide := string(sf.appendDataSrc(nil, na))
	assert.Equal(t, "      1e05080021 |OP N/A|LVL N/A or N/A|SNP N/A|TLB N/A|LCK N/A|BLK  N/A", wide)
	narrow := string(sf.appendDataSrc(nil, 0))
	assert.Len(t, narrow, len(wide), "padded to the widest so far")
	assert.True(t, strings.HasPrefix(narrow, "               0 |OP No|LVL N/A|SNP N/A|TLB N/A|LCK No|BLK  N/A"), narrow)
}
