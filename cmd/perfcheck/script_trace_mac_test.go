package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/perfdata"
)

// bridgeWork adds two static entries to a bridge's forwarding database
// and deletes one, in a network namespace of its own (no privilege
// needed beyond a user namespace, nothing of the host's network
// touched): bridge:br_fdb_add fires with the entries' MAC addresses,
// bridge:fdb_delete with the bridge's and the port's names.
const bridgeWork = `ip link add br0 type bridge && ip link add v0 type veth peer name v1 && ` +
	`ip link set v0 master br0 && ip link set br0 up && ip link set v0 up && ` +
	`bridge fdb add 02:11:22:33:44:55 dev v0 master static && ` +
	`bridge fdb add 02:aa:bb:cc:dd:ee dev v0 master static && ` +
	`bridge fdb del 02:11:22:33:44:55 dev v0 master`

// The kernel's %pM and %pm (MAC addresses, with R and F) and %ph (hex
// dumps, with C, D and N) as perf 6.1 prints them. br_mdb_full is this
// kernel's one tracepoint that prints a %pM, and it fires only when a
// port's multicast group limit is reached, which iproute2 here cannot
// set; no tracepoint of it prints a %ph. So the test writes them: a real
// recording (perf record -N -a of bridge:br_fdb_add, bridge:fdb_delete
// and sched:sched_process_exec while bridgeWork runs) whose TRACING_DATA
// section the test rewrites (rewritePrintFmt), br_fdb_add then printing
// its 6-byte addr, and its 2-byte vid and __data_loc dev as the
// wrong-length fields perf prints "INVALIDMAC" for; fdb_delete and
// sched_process_exec printing their __data_loc strings with
// __get_dynamic_array, the length given by __get_dynamic_array_len, by a
// constant shorter, longer, zero or negative, or by none (one byte), and
// a %ph of a field, which perf prints as an argument-type note.
// perfcheck script must print what perf script prints of the rewritten
// file, byte for byte.
func TestScriptTraceMACAndHexDumpMatchPerf(t *testing.T) {
	t.Parallel()
	for _, ev := range []string{"bridge/br_fdb_add", "bridge/fdb_delete", "sched/sched_process_exec"} {
		if _, err := os.Stat("/sys/kernel/tracing/events/" + ev); err != nil {
			t.Skipf("no tracepoint to record: %v", err)
		}
	}
	for _, tool := range []string{"unshare", "ip", "bridge"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed: %v", tool, err)
		}
	}
	if out, err := exec.Command("unshare", "-rn", "sh", "-c", "ip link add br0 type bridge && ip link add v0 type veth peer name v1").CombinedOutput(); err != nil {
		t.Skipf("no bridge in a network namespace of its own: %v: %s", err, out)
	}
	w := newRealWorld(t)
	data := filepath.Join(w.dir, "bridge.data")
	w.run("perf", "record", "-q", "-N", "-a", "-o", data, "-e", "bridge:br_fdb_add", "-e", "bridge:fdb_delete",
		"-e", "sched:sched_process_exec", "--", "unshare", "-rn", "sh", "-c", bridgeWork)
	b, err := os.ReadFile(data)
	require.NoError(t, err)
	b = rewritePrintFmt(t, b, "br_fdb_add", `"M=%pM m=%pm MR=%pMR mR=%pmR MF=%pMF mF=%pmF MFR=%pMFR MRF=%pMRF `+
		`Mx=%pMx w=[%20pM] s=%*pM vid=%pM loc=%pm dev=%s", REC->addr, REC->addr, REC->addr, REC->addr, REC->addr, `+
		`REC->addr, REC->addr, REC->addr, REC->addr, REC->addr, 3, REC->addr, REC->vid, REC->dev, __get_str(dev)`)
	b = rewritePrintFmt(t, b, "fdb_delete", `"h=%ph b=%*ph C=%*phC D=%*phD N=%*phN big=%*ph neg=%*ph z=%*ph `+
		`f=%*ph x=%.*phx len=%d", __get_dynamic_array(br_dev), __get_dynamic_array_len(br_dev), `+
		`__get_dynamic_array(br_dev), 3, __get_dynamic_array(dev), 4, __get_dynamic_array(dev), `+
		`__get_dynamic_array_len(dev), __get_dynamic_array(dev), 64, __get_dynamic_array(dev), -1, `+
		`__get_dynamic_array(dev), 0, __get_dynamic_array(dev), 6, REC->addr, 2, __get_dynamic_array(dev), `+
		`__get_dynamic_array_len(dev)`)
	b = rewritePrintFmt(t, b, "sched_process_exec", `"f=%*phN pid=%d", __get_dynamic_array_len(filename), `+
		`__get_dynamic_array(filename), REC->pid`)
	perf := scriptRewrittenSameAsPerf(t, w, "forms.data", b)
	// What the recording must hold for the comparison to prove anything.
	assert.Contains(t, perf, " M=02:11:22:33:44:55 m=021122334455 MR=55:44:33:22:11:02 mR=554433221102 "+
		"MF=02-11-22-33-44-55 mF=021122334455 MFR=02-11-22-33-44-55R MRF=55:44:33:22:11:02F Mx=02:11:22:33:44:55x "+
		"w=[02:11:22:33:44:55] s=02:11:22:33:44:55 vid=INVALIDMAC loc=INVALIDMAC dev=v0\n")
	assert.Contains(t, perf, " M=02:aa:bb:cc:dd:ee ")
	assert.Contains(t, perf, " h=62 b=62 72 30 00 C=76:30:00 D=76-30-00 N=763000 big=76 30 00 neg= z= "+
		"f=ARG TYPE NOT FIELD BUT 2 x=76 30x len=3\n", "the deletion of v0's entry")
	assert.Regexp(t, ` f=2f[0-9a-f]+2f62726964676500 pid=`, perf, "bridge's exec: /...bridge and its NUL")
}

// %pM and %ph against values written here: %pMR and %pmR reverse, %pMF
// joins with dashes, a field of another size prints INVALIDMAC; %ph
// prints as many bytes as its "*" says, at most the array's, none for
// less than 1, and one without a "*"; a field rather than a
// __get_dynamic_array prints libtraceevent's argument-type note.
func TestTraceFormatMACAndHexDump(t *testing.T) {
	t.Parallel()
	ev := &perfdata.TraceEvent{System: "test", Name: "forms",
		Fields: []perfdata.TraceField{
			{Name: "mac", Type: "u8[6]", Offset: 8, Size: 6},
			{Name: "n", Type: "u16", Offset: 14, Size: 2},
			{Name: "buf", Type: "__data_loc u8[]", Offset: 16, Size: 4},
		},
		PrintFmt: `"%pM|%pMR|%pmR|%pMF|%pM|%ph|%*phC|%*phD|%*phN|%*ph|%ph|%d", REC->mac, REC->mac, REC->mac, REC->mac, ` +
			`REC->n, __get_dynamic_array(buf), 2, __get_dynamic_array(buf), __get_dynamic_array_len(buf), ` +
			`__get_dynamic_array(buf), 9, __get_dynamic_array(buf), -3, __get_dynamic_array(buf), REC->buf, ` +
			`__get_dynamic_array_len(buf)`,
	}
	tf, err := newTraceFormat(ev)
	require.NoError(t, err)
	raw := make([]byte, 25)
	copy(raw[8:], []byte{0x00, 0x1b, 0x21, 0xa0, 0xb1, 0xc2})
	copy(raw[16:], []byte{20, 0, 5, 0}) // __data_loc: offset 20, length 5
	copy(raw[20:], []byte{0xde, 0xad, 0xbe, 0xef, 0x01})
	got, err := tf.appendTrace(nil, raw)
	require.NoError(t, err)
	assert.Equal(t, "00:1b:21:a0:b1:c2|c2:b1:a0:21:1b:00|c2b1a0211b00|00-1b-21-a0-b1-c2|INVALIDMAC|"+
		"de|de:ad|de-ad-be-ef-01|deadbeef01||ARG TYPE NOT FIELD BUT 2|5", string(got))
}
