package main

import (
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/perfdata"
)

// tcpChildEnv makes this test binary, run by perf, the workload of
// TestScriptTraceIPMatchPerf (TestScriptTraceIPChild).
const tcpChildEnv = "PERFCHECK_TCP_CHILD"

// sock:inet_sock_set_state prints its addresses with %pI4 and %pI6c, and
// tcp:tcp_probe and tcp:tcp_send_reset theirs with %pISpc: an
// IPv4 connection's IPv6 fields hold the IPv4-mapped address
// (::ffff:127.0.0.1), an IPv6 connection's IPv4 fields zeros or the
// kernel's placeholder. perfcheck prints them as perf does, from a file
// and from a pipe.
func TestScriptTraceIPMatchPerf(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/sys/kernel/tracing/events/sock/inet_sock_set_state"); err != nil {
		t.Skipf("no tracepoint to record: %v", err)
	}
	events := []string{"-e", "sock:inet_sock_set_state"}
	for _, ev := range []string{"tcp/tcp_probe", "tcp/tcp_send_reset"} {
		if _, err := os.Stat("/sys/kernel/tracing/events/" + ev); err == nil {
			events = append(events, "-e", strings.Replace(ev, "/", ":", 1))
		}
	}
	w := newRealWorld(t)
	// The child's stdout ("PASS") must stay out of perf's stream to stdout.
	child := []string{"sh", "-c", `exec env ` + tcpChildEnv + `=1 "$0" -test.run='^TestScriptTraceIPChild$' >/dev/null`, os.Args[0]}
	data := filepath.Join(w.dir, "sock.data")
	w.run("perf", append([]string{"record", "-q", "-N", "-a", "-o", data}, append(events, append([]string{"--"}, child...)...)...)...)
	perf := w.run("perf", "script", "-i", data)
	out, errs, code := w.pcOut(proofCase{}, "script", data)
	require.Equal(t, exitOK, code, errs)
	require.Equal(t, perf, out)
	assert.Empty(t, errs)
	assert.Contains(t, perf, " saddr=127.0.0.1 daddr=127.0.0.1 saddrv6=::ffff:127.0.0.1 daddrv6=::ffff:127.0.0.1 ",
		"the recording lacks what the test proves")
	ipv6 := false
	if l, err := net.Listen("tcp6", "[::1]:0"); err == nil {
		l.Close()
		ipv6 = true
		assert.Contains(t, perf, " saddrv6=::1 daddrv6=::1 ", "the recording lacks the IPv6 connection")
	}
	if len(events) > 2 {
		assert.Regexp(t, `tcp:tcp_probe: family=AF_INET src=127\.0\.0\.1:[0-9]+ dest=127\.0\.0\.1:[0-9]+ `, perf)
		assert.Regexp(t, `tcp:tcp_send_reset: .* src=127\.0\.0\.1:[0-9]+ dest=127\.0\.0\.1:[0-9]+ `, perf)
		if ipv6 {
			assert.Regexp(t, `tcp:tcp_probe: family=AF_INET6 src=\[::1\]:[0-9]+ dest=\[::1\]:[0-9]+ `, perf)
		}
	}

	pipe := filepath.Join(w.dir, "sock.pipe")
	stream := w.run("perf", append([]string{"record", "-q", "-N", "-a", "-o", "-"}, append(events, append([]string{"--"}, child...)...)...)...)
	require.NoError(t, os.WriteFile(pipe, []byte(stream), 0o644))
	perf = w.run("perf", "script", "-i", pipe)
	out, errs, code = w.pcOut(proofCase{}, "script", pipe)
	require.Equal(t, exitOK, code, errs)
	require.Equal(t, perf, out, "pipe")
	assert.Empty(t, errs)
	assert.Contains(t, perf, " saddr=127.0.0.1 daddr=127.0.0.1 saddrv6=::ffff:127.0.0.1 daddrv6=::ffff:127.0.0.1 ",
		"the recording lacks what the test proves")
}

// TestScriptTraceIPChild is TestScriptTraceIPMatchPerf's workload: a TCP
// connection over 127.0.0.1 and, where the host has IPv6, one over ::1,
// each carrying data both ways and ended by a reset.
func TestScriptTraceIPChild(t *testing.T) {
	if os.Getenv(tcpChildEnv) == "" {
		t.Skip("run by TestScriptTraceIPMatchPerf")
	}
	connect := func(network, addr string) {
		l, err := net.Listen(network, addr)
		if err != nil {
			require.Equal(t, "tcp6", network, "%v", err)
			return
		}
		defer l.Close()
		c, err := net.Dial(network, l.Addr().String())
		require.NoError(t, err)
		s, err := l.Accept()
		require.NoError(t, err)
		// Data both ways (tcp:tcp_probe), then a reset
		// (tcp:tcp_send_reset) from the client's close.
		_, err = c.Write(make([]byte, 100))
		require.NoError(t, err)
		_, err = io.ReadFull(s, make([]byte, 100))
		require.NoError(t, err)
		_, err = s.Write(make([]byte, 10))
		require.NoError(t, err)
		_, err = io.ReadFull(c, make([]byte, 10))
		require.NoError(t, err)
		require.NoError(t, c.(*net.TCPConn).SetLinger(0))
		require.NoError(t, c.Close())
		require.NoError(t, s.Close())
	}
	connect("tcp4", "127.0.0.1:0")
	connect("tcp6", "[::1]:0")
}

// %pI6c compresses as the kernel's and Go's own rules do (the first
// longest run of two or more zero groups is "::", an IPv4-mapped address
// ends in dotted decimal), except that an ISATAP address also ends in
// dotted decimal; %pI6 and %pi6 print every digit, %pi4 three per byte
// with the dots (libtraceevent's, not the kernel's printk, which drops
// them; TestScriptTracePointerFormsMatchPerf compares it with perf).
func TestTraceFormatIP(t *testing.T) {
	t.Parallel()
	ev := &perfdata.TraceEvent{System: "test", Name: "ip",
		Fields: []perfdata.TraceField{{Name: "a4", Type: "__u8 a4[4]", Offset: 8, Size: 4},
			{Name: "a6", Type: "__u8 a6[16]", Offset: 12, Size: 16}},
		PrintFmt: `"%pI4 %pi4 %pI6c %pI6 %pi6", REC->a4, REC->a4, REC->a6, REC->a6, REC->a6`,
	}
	tf, err := newTraceFormat(ev)
	require.NoError(t, err)
	for _, a := range []string{"::", "::1", "1::", "::ffff:10.1.2.3", "2001:db8::1:0:0:1", "2001:0:0:1::1",
		"1:0:1:0:1:0:1:0", "fe80::1:2:3:4", "1:2:3:4:5:6:7:8", "2001:db8:0:1:1:1:1:1"} {
		ip := netip.MustParseAddr(a)
		raw := make([]byte, 28)
		copy(raw[8:], []byte{10, 0, 20, 255})
		b16 := ip.As16()
		copy(raw[12:], b16[:])
		got, err := tf.appendTrace(nil, raw)
		require.NoError(t, err)
		full := ip.StringExpanded()
		assert.Equal(t, "10.0.20.255 010.000.020.255 "+ip.String()+" "+full+" "+stripColons(full), string(got), a)
	}
	raw := make([]byte, 28)
	copy(raw[12:], netip.MustParseAddr("fe80::200:5efe:c0a8:101").AsSlice())
	got, err := tf.appendTrace(nil, raw)
	require.NoError(t, err)
	assert.Contains(t, string(got), " fe80::200:5efe:192.168.1.1 ", "ISATAP")
}

func stripColons(s string) string {
	b := []byte(nil)
	for i := range len(s) {
		if s[i] != ':' {
			b = append(b, s[i])
		}
	}
	return string(b)
}

// C's "#" flag adds nothing to zero, as glibc's printf prints it
// ("[0][0][    0][0   ][0x1][010]").
func TestTraceFormatAlternateZero(t *testing.T) {
	t.Parallel()
	tf, err := newTraceFormat(&perfdata.TraceEvent{System: "test", Name: "alt",
		PrintFmt: `"[%#x][%#o][%#5x][%#-4X][%#x][%#o]", 0, 0, 0, 0, 1, 8`})
	require.NoError(t, err)
	got, err := tf.appendTrace(nil, nil)
	require.NoError(t, err)
	assert.Equal(t, "[0][0][    0][0   ][0x1][010]", string(got))
}

// %pISpc prints an IPv4 socket address and its port, an IPv6 one in
// brackets, compressed; another family is an error, never a guess.
func TestTraceFormatSockaddr(t *testing.T) {
	t.Parallel()
	ev := &perfdata.TraceEvent{System: "test", Name: "sa",
		Fields:   []perfdata.TraceField{{Name: "sa", Type: "__u8 sa[28]", Offset: 8, Size: 28}},
		PrintFmt: `"src=%pISpc.", REC->sa`,
	}
	tf, err := newTraceFormat(ev)
	require.NoError(t, err)
	raw := make([]byte, 36)
	copy(raw[8:], []byte{2, 0, 0x1f, 0x90, 10, 0, 0, 1})
	got, err := tf.appendTrace(nil, raw)
	require.NoError(t, err)
	assert.Equal(t, "src=10.0.0.1:8080.", string(got))

	raw = make([]byte, 36)
	copy(raw[8:], []byte{10, 0, 0, 80})
	copy(raw[16:], netip.MustParseAddr("2001:db8::2").AsSlice())
	got, err = tf.appendTrace(nil, raw)
	require.NoError(t, err)
	assert.Equal(t, "src=[2001:db8::2]:80.", string(got))

	raw[8] = 1
	_, err = tf.appendTrace(nil, raw)
	assert.ErrorContains(t, err, "family 1")

	ev.Fields[0].Size = 16
	_, err = newTraceFormat(ev)
	assert.ErrorIs(t, err, errTraceUnsupported, "a field too small for an IPv6 socket address")
}

// The letters after an IP address conversion, as libtraceevent takes and
// heeds them (scriptIPLettersMatchPerf compares them with perf): h and l
// reverse an IPv4 address, n and b do not; %pIS heeds a p, then a c, then
// the byte order, each only in that place; %pi6c's c is taken and
// ignored; a letter not taken is text; %pI without a version prints
// nothing.
func TestTraceFormatIPLetters(t *testing.T) {
	t.Parallel()
	ev := &perfdata.TraceEvent{System: "test", Name: "ip",
		Fields: []perfdata.TraceField{{Name: "a4", Type: "__u8 a4[4]", Offset: 8, Size: 4},
			{Name: "a6", Type: "__u8 a6[16]", Offset: 12, Size: 16},
			{Name: "sa", Type: "__u8 sa[28]", Offset: 28, Size: 28}},
		PrintFmt: `"%pI4h|%pi4l|%pI4n|%pI4bx|%pi6c|%pI6ch|%pISph|%pISpch|%pISfh|%piSh|%piSph|%pIx|%pI", ` +
			`REC->a4, REC->a4, REC->a4, REC->a4, REC->a6, REC->a6, REC->sa, REC->sa, REC->sa, REC->sa, REC->sa, REC->a4, REC->a4`,
	}
	tf, err := newTraceFormat(ev)
	require.NoError(t, err)
	raw := make([]byte, 56)
	copy(raw[8:], []byte{10, 0, 20, 255})
	copy(raw[12:], netip.MustParseAddr("2001:db8::1").AsSlice())
	copy(raw[28:], []byte{afInet, 0, 0x1f, 0x90, 192, 168, 1, 2})
	got, err := tf.appendTrace(nil, raw)
	require.NoError(t, err)
	assert.Equal(t, "255.20.0.10|255.020.000.010|10.0.20.255|10.0.20.255x|20010db8000000000000000000000001|2001:db8::1h|"+
		"2.1.168.192:8080|192.168.1.2:8080h|192.168.1.2|002.001.168.192|192.168.001.002|x|", string(got))
}
