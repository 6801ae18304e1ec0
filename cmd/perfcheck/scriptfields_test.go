package main

import (
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
	tp := &perfdata.Attr{Type: typeTracepoint, SampleType: all}
	tpChain := &perfdata.Attr{Type: typeTracepoint, SampleType: all | perfdata.SampleCallchain}

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
	// perf names a page fault's or a branch trace's address with sym and
	// dso; perfcheck prints the address alone, and refuses the rest.
	for _, a := range []*perfdata.Attr{
		{Type: 1, Config: 2, SampleType: withAddr.SampleType},
		{Type: 0, Config: 4, SamplePeriod: 1, SampleType: withAddr.SampleType},
	} {
		_, err = addr.forEvent("e", a)
		assert.ErrorContains(t, err, "perfcheck does not name them", "%+v", a)
	}
	addrIP, err := parseScriptFields("addr,ip")
	require.NoError(t, err)
	got, err = addrIP.forEvent("page-faults", &perfdata.Attr{Type: 1, Config: 2, SampleType: withAddr.SampleType})
	require.NoError(t, err)
	assert.Equal(t, fieldAddr|fieldIP, got)
}
