package main

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/perfdata"
)

// traceEvents are tracepoints whose payload formats perfcheck evaluates:
// a ternary over __print_flags (sched_switch), __get_str, casts with %lx,
// an array field (raw_syscalls), __print_symbolic and signed fields.
var traceEvents = []string{"sched:sched_switch", "sched:sched_process_exec", "sched:sched_wakeup",
	"syscalls:sys_enter_write", "syscalls:sys_exit_write", "raw_syscalls:sys_enter", "raw_syscalls:sys_exit",
	"signal:signal_generate", "signal:signal_deliver"}

// perf script prints a tracepoint's payload by default; perfcheck's lines
// are perf's, byte for byte, from a file and from a pipe.
func TestScriptTracepointsMatchPerf(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/sys/kernel/tracing/events/sched/sched_switch"); err != nil {
		t.Skipf("no tracepoints to record: %v", err)
	}
	w := newRealWorld(t)
	args := []string{"record", "-q", "-N"}
	for _, e := range traceEvents {
		args = append(args, "-e", e)
	}
	work := []string{"--", "sh", "-c", "trap : USR1; echo hi >/dev/null; ls / >/dev/null; kill -USR1 $$; sleep 0.01"}
	data := filepath.Join(w.dir, "trace.data")
	w.run("perf", append(append(args, "-o", data), work...)...)

	perf := w.run("perf", "script", "-i", data)
	out, errs, code := w.pcOut(proofCase{}, "script", data)
	require.Equal(t, exitOK, code, errs)
	assert.Empty(t, errs)
	require.Equal(t, perf, out)
	for _, want := range []string{"prev_state=", "filename=", "fd: 0x", "NR ", "sig=10"} {
		assert.Contains(t, perf, want, "the recording lacks what the test proves")
	}
	for _, fields := range []string{"comm,tid,event,trace", "trace", "-trace,-cpu"} {
		perf := w.run("perf", "script", "-F", fields, "-i", data)
		out, errs, code := w.pcOut(proofCase{}, "script", "-F", fields, data)
		require.Equal(t, exitOK, code, errs)
		require.Equal(t, perf, out, fields)
	}

	pipe := filepath.Join(w.dir, "trace.pipe")
	stream := w.run("perf", append(append(args, "-o", "-"), work...)...)
	require.NoError(t, os.WriteFile(pipe, []byte(stream), 0o644))
	perf = w.run("perf", "script", "-i", pipe)
	out, errs, code = w.pcOut(proofCase{}, "script", pipe)
	require.Equal(t, exitOK, code, errs)
	require.Equal(t, perf, out, "pipe")
}

// A payload format beyond what perfcheck evaluates is left out with a
// note by default, refused when -F asks for trace.
func TestScriptTraceUnsupportedFormat(t *testing.T) {
	t.Parallel()
	for fmt, conv := range map[string]string{
		`"saddr=%pI4", REC->saddr`:                   `"%pI4"`,
		`"a=%pI4", 1`:                                `"%pI4"`,
		`"a=%pI6c", REC->s`:                          `"%pI6c"`,
		`"a=%pi6c", REC->s`:                          `"%pi6c"`,
		`"a=%pI4h", REC->s`:                          `"%pI4h"`,
		`"a=%08pI4", REC->s`:                         `"%pI4"`,
		`"a=%pISpl", REC->s`:                         `"%pISpl"`,
		`"a=%pISc", REC->s`:                          `"%pISc"`,
		`"ip=%pSR", REC->ip`:                         `"%pSR"`,
		`"uuid=%pUb x", 1`:                           `%pU`,
		`"uuid=%pU", REC->none`:                      `%pU`,
		`"bad=%q", REC->ip`:                          `"%q"`,
		`"fw=%pfw", REC->fwnode`:                     `"%pfw"`,
		`"mac=%pM", REC->mac`:                        `"%pM"`,
		`"a=%ps %pS %pf", 1, 2, 3 `:                  "",
		`"b=%pF %p %px %pB %*pbl", 1, 2, 3, 4, 5, 6`: "",
		`"h=%s", __print_hex(REC->buf, 4)`:           `__print_hex`,
		`"mac=%pMR", 1`:                              `"%pMR"`,
		`"h=%*phC", 4, __get_str(d)`:                 `"%phC"`,
		`"h=%*.*ph", 1, 2, __get_dynamic_array(d)`:   `two "*"`,
		`"p=%p", __get_dynamic_array(d)`:             `__get_dynamic_array where no %ph`,
		`"h=%ph", __get_dynamic_array(s)`:            `__get_dynamic_array of s`,
		`"n=%d", __get_dynamic_array_len(s)`:         `__get_dynamic_array_len of s`,
		`"a=%pI5 %pi", REC->s, REC->s`:               "",
		`"a=%pI4hc", 4`:                              `"%pI4h"`,
		`"h=%ph %*phN m=%pm", REC->s, 2, __get_dynamic_array(d), REC->s`: "",
	} {
		_, err := newTraceFormat(&perfdata.TraceEvent{System: "test", Name: "unsupported", PrintFmt: fmt,
			Fields: []perfdata.TraceField{{Name: "s", Type: "const char *", Offset: 8, Size: 8},
				{Name: "d", Type: "__data_loc u8[]", Offset: 16, Size: 4}}})
		if conv == "" {
			assert.NoError(t, err, fmt)
			continue
		}
		assert.ErrorIs(t, err, errTraceUnsupported, fmt)
		assert.ErrorContains(t, err, conv, fmt)
	}
}

// A %s of a kernel string pointer prints the printk string at its
// address, and an address without one in hex without "0x", with neither
// the width nor the precision applied, as libtraceevent's print_str_arg;
// a %s of a char array or a __data_loc string is no pointer.
func TestTraceFormatPrintk(t *testing.T) {
	t.Parallel()
	ev := &perfdata.TraceEvent{System: "rcu", Name: "rcu_utilization",
		Fields: []perfdata.TraceField{{Name: "s", Type: "const char *", Offset: 8, Size: 8},
			{Name: "comm", Type: "char[4]", Offset: 16, Size: 4}, {Name: "name", Type: "__data_loc char[]", Offset: 20, Size: 4}},
		PrintFmt: `"%s|%-8s|%.2s|%s|%s", REC->s, REC->s, REC->s, REC->comm, __get_str(name)`,
	}
	tf, err := newTraceFormat(ev)
	require.NoError(t, err)
	require.True(t, tf.readsPrintk())
	raw := make([]byte, 28)
	copy(raw[8:], []byte{0xc3, 0xb2, 0xa1, 0x82, 0xff, 0xff, 0xff, 0xff})
	copy(raw[16:], "abc")
	raw[20], raw[22] = 24, 4 // __data_loc: offset 24, length 4
	copy(raw[24:], "xyz")
	tf.printk = map[uint64]string{0xffffffff82a1b2c3: "Start context switch"}
	got, err := tf.appendTrace(nil, raw)
	require.NoError(t, err)
	assert.Equal(t, "Start context switch|Start context switch|Start context switch|abc|xyz", string(got))

	raw[8] = 0xc4
	got, err = tf.appendTrace(nil, raw)
	require.NoError(t, err)
	assert.Equal(t, "ffffffff82a1b2c4|ffffffff82a1b2c4|ffffffff82a1b2c4|abc|xyz", string(got), "an address without a printk string")

	tf, err = newTraceFormat(&perfdata.TraceEvent{System: "test", Name: "strings", Fields: ev.Fields[1:], PrintFmt: `"%s", REC->comm`})
	require.NoError(t, err)
	assert.False(t, tf.readsPrintk())
}

// rcu:rcu_utilization's payload is a kernel string pointer, which perf
// prints from the recording's printk strings; perfcheck's lines are
// perf's, byte for byte, from a file, from a pipe-format file and from
// standard input; and, with the pointers rewritten in the test to an
// address the strings lack, still perf's (the address in hex).
func TestScriptTracePrintkMatchPerf(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/sys/kernel/tracing/events/rcu/rcu_utilization"); err != nil {
		t.Skipf("no rcu:rcu_utilization tracepoint to record: %v", err)
	}
	w := newRealWorld(t)
	args := []string{"record", "-q", "-N", "-a", "-e", "rcu:rcu_utilization"}
	data := filepath.Join(w.dir, "rcu.data")
	w.run("perf", append(args, "-o", data, "--", "sleep", "0.1")...)
	perf := w.run("perf", "script", "-i", data)
	require.Contains(t, perf, "rcu_utilization: Start context switch\n", "the recording lacks what the test proves")
	out, errs, code := w.pcOut(proofCase{}, "script", data)
	require.Equal(t, exitOK, code, errs)
	assert.Empty(t, errs)
	require.Equal(t, perf, out)

	pipe := filepath.Join(w.dir, "rcu.pipe")
	stream := w.run("perf", append(args, "-o", "-", "--", "sleep", "0.1")...)
	require.NoError(t, os.WriteFile(pipe, []byte(stream), 0o644))
	perf = w.run("perf", "script", "-i", pipe)
	out, errs, code = w.pcOut(proofCase{}, "script", pipe)
	require.Equal(t, exitOK, code, errs)
	require.Equal(t, perf, out, "pipe")
	out, errs, code = w.pcOutIn(bytes.NewReader([]byte(stream)), proofCase{}, "script", "-")
	require.Equal(t, exitOK, code, errs)
	require.Equal(t, perf, out, "standard input")

	// Every sample's pointer to "Start context switch" becomes an
	// address outside the kernel's strings.
	f, err := perfdata.Open(data)
	require.NoError(t, err)
	m, err := f.Features().TracePrintk()
	f.Close()
	require.NoError(t, err)
	var ptr []byte
	for addr, s := range m {
		if s == "Start context switch" {
			ptr = binary.LittleEndian.AppendUint64(nil, addr)
		}
	}
	require.NotNil(t, ptr)
	b, err := os.ReadFile(data)
	require.NoError(t, err)
	bogus := binary.LittleEndian.AppendUint64(nil, 0xffffffff00c0ffee)
	require.NotContains(t, m, uint64(0xffffffff00c0ffee))
	edited := filepath.Join(w.dir, "rcu-edited.data")
	require.NoError(t, os.WriteFile(edited, bytes.ReplaceAll(b, ptr, bogus), 0o644))
	perf = w.run("perf", "script", "-i", edited)
	require.Contains(t, perf, "rcu_utilization: ffffffff00c0ffee\n", "perf prints a missing string otherwise than the test expects")
	out, errs, code = w.pcOut(proofCase{}, "script", edited)
	require.Equal(t, exitOK, code, errs)
	require.Equal(t, perf, out, "addresses without a printk string")
}

// %pS and %ps print the kernel symbol of an address, with the offset
// (%pS, %pF) or without (%ps, %pf), as libtraceevent's print_function;
// an address without a symbol, or without the kernel's symbols, in hex.
func TestTraceFormatFunction(t *testing.T) {
	t.Parallel()
	ev := &perfdata.TraceEvent{System: "kmem", Name: "kfree",
		Fields:   []perfdata.TraceField{{Name: "call_site", Type: "unsigned long", Offset: 8, Size: 8}},
		PrintFmt: `"call_site=%pS fn=%ps F=%pF f=%pf ptr=%p", (void *)REC->call_site, REC->call_site, REC->call_site, REC->call_site, REC->call_site`,
	}
	tf, err := newTraceFormat(ev)
	require.NoError(t, err)
	raw := make([]byte, 16)
	raw[8], raw[9] = 0x34, 0x12
	got, err := tf.appendTrace(nil, raw)
	require.NoError(t, err)
	assert.Equal(t, "call_site=0x1234 fn=0x1234 F=0x1234 f=0x1234 ptr=0x1234", string(got), "no kernel symbols")

	tf.kernelSym = func(addr uint64) (string, uint64, bool) {
		if addr >= 0x1200 && addr < 0x1300 {
			return "kfree_sensitive", addr - 0x1200, true
		}
		return "", 0, false
	}
	got, err = tf.appendTrace(nil, raw)
	require.NoError(t, err)
	assert.Equal(t, "call_site=kfree_sensitive+0x34 fn=kfree_sensitive F=kfree_sensitive+0x34 f=kfree_sensitive ptr=0x1234", string(got))
	raw[9] = 0x13
	got, err = tf.appendTrace(nil, raw)
	require.NoError(t, err)
	assert.Equal(t, "call_site=0x1334 fn=0x1334 F=0x1334 f=0x1334 ptr=0x1334", string(got), "an address outside every symbol")
}

// An enum constant the format leaves undefined is -1 to libtraceevent
// (eval_flag): it names no value of an unsigned field, and no flag but
// the value 0; a name libtraceevent knows has its value.
func TestTraceFormatUndefinedEnum(t *testing.T) {
	t.Parallel()
	ev := &perfdata.TraceEvent{System: "timer", Name: "hrtimer_start",
		Fields: []perfdata.TraceField{
			{Name: "mode", Type: "enum hrtimer_mode", Offset: 8, Size: 4},
		},
		PrintFmt: `"mode=%s flags=%s vec=%s", ` +
			`__print_symbolic(REC->mode, { HRTIMER_MODE_ABS, "ABS" }, { HRTIMER_MODE_REL, "REL" }), ` +
			`__print_flags(REC->mode, "|", { SOME_FLAG, "SOME" }, { 2, "TWO" }), ` +
			`__print_symbolic(REC->mode, { HI_SOFTIRQ, "HI" }, { TIMER_SOFTIRQ, "TIMER" })`,
	}
	tf, err := newTraceFormat(ev)
	require.NoError(t, err)
	raw := make([]byte, 12)
	for _, c := range []struct {
		mode byte
		want string
	}{
		{0, "mode=0x0 flags=SOME vec=HI"},
		{1, "mode=0x1 flags=0x1 vec=TIMER"},
		{3, "mode=0x3 flags=TWO|0x1 vec=0x3"},
	} {
		raw[8] = c.mode
		got, err := tf.appendTrace(nil, raw)
		require.NoError(t, err)
		assert.Equal(t, c.want, string(got))
	}
}

// The evaluator on a record built in the test: sched_switch's format as
// the kernel writes it, with its prev_state ternary over __print_flags.
func TestTraceFormatSchedSwitch(t *testing.T) {
	t.Parallel()
	const mask = `(((0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1)`
	ev := &perfdata.TraceEvent{System: "sched", Name: "sched_switch",
		Fields: []perfdata.TraceField{
			{Name: "prev_comm", Type: "char[16]", Offset: 8, Size: 16},
			{Name: "prev_pid", Type: "pid_t", Offset: 24, Size: 4, Signed: true},
			{Name: "prev_state", Type: "long", Offset: 32, Size: 8, Signed: true},
			{Name: "args", Type: "unsigned long[2]", Offset: 40, Size: 16},
		},
		PrintFmt: `"prev_comm=%s prev_pid=%d prev_state=%s%s a1=%lx neg=%d", REC->prev_comm, REC->prev_pid, ` +
			`(REC->prev_state & (` + mask + ` - 1)) ? __print_flags(REC->prev_state & (` + mask + ` - 1), "|", { 0x00000001, "S" }, { 0x00000002, "D" }) : "R", ` +
			`REC->prev_state & ` + mask + ` ? "+" : "", REC->args[1], -(int)REC->prev_pid`,
	}
	tf, err := newTraceFormat(ev)
	require.NoError(t, err)
	raw := make([]byte, 56)
	copy(raw[8:], "sh\x00junk")
	raw[24] = 0x2a // pid 42
	for _, c := range []struct {
		state uint64
		want  string
	}{
		{0, "prev_comm=sh prev_pid=42 prev_state=R a1=beef neg=-42"},
		{1, "prev_comm=sh prev_pid=42 prev_state=S a1=beef neg=-42"},
		{3, "prev_comm=sh prev_pid=42 prev_state=S|D a1=beef neg=-42"},
		{0x104, "prev_comm=sh prev_pid=42 prev_state=0x4+ a1=beef neg=-42"},
		{0x100, "prev_comm=sh prev_pid=42 prev_state=R+ a1=beef neg=-42"},
	} {
		for i := range 8 {
			raw[32+i] = byte(c.state >> (8 * i))
		}
		raw[48], raw[49] = 0xef, 0xbe
		got, err := tf.appendTrace(nil, raw)
		require.NoError(t, err)
		assert.Equal(t, c.want, string(got), "state %#x", c.state)
	}
	_, err = tf.appendTrace(nil, raw[:20])
	assert.Error(t, err, "a record cut short")
}

// A "*" width or precision is taken from the argument list, as printf
// takes it; a negative width left-justifies.
func TestTraceFormatStarWidth(t *testing.T) {
	t.Parallel()
	ev := &perfdata.TraceEvent{System: "test", Name: "star",
		Fields: []perfdata.TraceField{
			{Name: "w", Type: "int", Offset: 8, Size: 4, Signed: true},
			{Name: "comm", Type: "char[8]", Offset: 12, Size: 8},
		},
		PrintFmt: `"[%*d] [%-*s] [%.*s] [%*x]", REC->w, 42, REC->w, REC->comm, 2, REC->comm, -(int)REC->w, 255`,
	}
	tf, err := newTraceFormat(ev)
	require.NoError(t, err)
	raw := make([]byte, 20)
	raw[8] = 7
	copy(raw[12:], "shell\x00")
	got, err := tf.appendTrace(nil, raw)
	require.NoError(t, err)
	assert.Equal(t, "[     42] [shell  ] [sh] [ff     ]", string(got))

	_, err = newTraceFormat(&perfdata.TraceEvent{PrintFmt: `"%*d", 10`})
	assert.Error(t, err, "the width's argument without the value's")
}

// kmem's and timer's payloads print kernel functions (%pS, %ps), hrtimer
// modes named by enum constants the format leaves undefined, and pages
// computed from a kernel variable the format does not define
// (vmemmap_base in mm_page_alloc, 0 to libtraceevent).
// perfcheck prints perf script's payloads byte for byte: the functions
// named from this boot's kernel symbols when the check names the
// recording's kernel with them, and otherwise in hex, as perf prints an
// address it has no symbol for (perf script --kallsyms of an empty
// listing), with a note on stderr; from a pipe-format recording in hex
// too, as perf prints them. The recording's kernel build-id is
// rewritten in the test (as in TestKernelAcrossMachines) to make it
// another kernel's.
func TestScriptTraceKernelFunctionsMatchPerf(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/sys/kernel/tracing/events/kmem/kfree"); err != nil {
		t.Skipf("no tracepoints to record: %v", err)
	}
	w := newRealWorld(t)
	data := filepath.Join(w.dir, "kmem.data")
	w.run("perf", "record", "-q", "-N", "-a", "-e", "kmem:kmalloc", "-e", "kmem:kfree",
		"-e", "timer:hrtimer_start", "-e", "timer:timer_start", "-e", "timer:hrtimer_expire_entry",
		"-e", "kmem:mm_page_alloc", "-o", data, "--", "sh", "-c", "ls / >/dev/null; sleep 0.2")
	const fields = "comm,tid,time,event,trace"
	const hexNote = `the kernel addresses (%pS, %ps) in the payload of "kmem:kfree" print in hex`

	perf := w.run("perf", "script", "-F", fields, "-i", data)
	out, errs, code := w.pcOut(proofCase{}, "script", "-F", fields, data)
	require.Equal(t, exitOK, code, errs)
	require.Equal(t, perf, out)
	assert.Regexp(t, `kmem:kfree: call_site=[a-z_][a-z0-9_.]*\+0x[0-9a-f]+ `, perf, "perf names the call sites")
	assert.Regexp(t, `timer:hrtimer_start: hrtimer=0x[0-9a-f]+ function=[a-z_][a-z0-9_.]* `, perf)
	assert.Contains(t, perf, " mode=0x", "the recording lacks what the test proves")
	assert.NotContains(t, errs, hexNote)
	perf = w.run("perf", "script", "-i", data)
	out, errs, code = w.pcOut(proofCase{}, "script", data)
	require.Equal(t, exitOK, code, errs)
	require.Equal(t, perf, out, "default fields")
	assert.Empty(t, errs)

	pipe := filepath.Join(w.dir, "kmem.pipe")
	stream := w.run("perf", "record", "-q", "-N", "-a", "-e", "kmem:kfree", "-e", "timer:hrtimer_start",
		"-o", "-", "--", "sleep", "0.1")
	require.NoError(t, os.WriteFile(pipe, []byte(stream), 0o644))
	perf = w.run("perf", "script", "-F", fields, "-i", pipe)
	out, errs, code = w.pcOut(proofCase{}, "script", "-F", fields, pipe)
	require.Equal(t, exitOK, code, errs)
	require.Equal(t, perf, out, "pipe")
	assert.Contains(t, perf, "kmem:kfree: call_site=0x", "perf 6.1 names no kernel function from a pipe")
	assert.Contains(t, errs, "print in hex: perf prints them so from a pipe-format recording")

	// Another kernel's recording: its kernel build-id flipped.
	b, err := os.ReadFile(data)
	require.NoError(t, err)
	off, size := featureAt(t, b, 2)
	i := bytes.Index(b[off:off+size], []byte("[kernel.kallsyms]\x00"))
	require.GreaterOrEqual(t, i, 0, "no kernel entry in the build-id table")
	for j := off + i - 24; j < off+i-4; j++ {
		b[j] ^= 0x5a
	}
	other := filepath.Join(w.dir, "other-kernel.data")
	require.NoError(t, os.WriteFile(other, b, 0o644))
	empty := filepath.Join(w.dir, "empty.kallsyms")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	perf = w.run("perf", "script", "--kallsyms", empty, "-F", fields, "-i", data)
	out, errs, code = w.pcOut(proofCase{}, "script", "-F", fields, other)
	require.Equal(t, exitOK, code, errs)
	require.Equal(t, perf, out)
	assert.Contains(t, perf, "kmem:kfree: call_site=0x")
	assert.Contains(t, errs, hexNote)
}

// libtraceevent builds "x & (a | b)" as "(x & a) | b" and nests a chain
// of one precedence to the right; perf prints what it computes (perf
// 6.1 prints timer:timer_start's flags=D|P|I for every timer, which
// TestScriptTraceKernelFunctionsMatchPerf compares when the recording has
// one). process_op rotates "2 * (3 + 4)" the same way.
func TestTraceFormatLibtraceeventTree(t *testing.T) {
	t.Parallel()
	ev := &perfdata.TraceEvent{System: "timer", Name: "timer_start",
		Fields:   []perfdata.TraceField{{Name: "flags", Type: "unsigned int", Offset: 8, Size: 4}},
		PrintFmt: `"and=%x sub=%d c=%d paren=%d", REC->flags & (0x1 | 0x2 | 0x4), 10 - 3 - 2, 2 * (3 + 4), (10 - 3) - 2`,
	}
	tf, err := newTraceFormat(ev)
	require.NoError(t, err)
	raw := make([]byte, 12)
	raw[8] = 0x10
	got, err := tf.appendTrace(nil, raw)
	require.NoError(t, err)
	assert.Equal(t, "and=6 sub=9 c=10 paren=5", string(got))
}

// A name the format leaves undefined is 0 to libtraceevent (an atom,
// strtoll's value): kmem:mm_page_alloc's page is its pfn, as perf prints.
func TestTraceFormatUndefinedName(t *testing.T) {
	t.Parallel()
	ev := &perfdata.TraceEvent{System: "kmem", Name: "mm_page_alloc",
		Fields: []perfdata.TraceField{{Name: "pfn", Type: "unsigned long", Offset: 8, Size: 8}},
		PrintFmt: `"page=%p pfn=0x%lx", REC->pfn != -1UL ? (((struct page *)vmemmap_base) + (REC->pfn)) : ((void *)0), ` +
			`REC->pfn != -1UL ? REC->pfn : 0`,
	}
	tf, err := newTraceFormat(ev)
	require.NoError(t, err)
	raw := make([]byte, 16)
	raw[8], raw[9], raw[10] = 0xb5, 0x4b, 0x14
	got, err := tf.appendTrace(nil, raw)
	require.NoError(t, err)
	assert.Equal(t, "page=0x144bb5 pfn=0x144bb5", string(got))
	for i := 8; i < 16; i++ {
		raw[i] = 0xff
	}
	got, err = tf.appendTrace(nil, raw)
	require.NoError(t, err)
	assert.Equal(t, "page=(nil) pfn=0x0", string(got))
}
