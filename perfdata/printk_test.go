package perfdata

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// TestTracePrintk: rcu:rcu_utilization's payload is a pointer to a kernel
// string; recorded with real perf, each sample's pointer is in the
// TRACING_DATA's printk strings, from a file and from a pipe stream.
func TestTracePrintk(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("records with perf; not in -short")
	}
	perf := fixtures.NeedTool(t, "perf")
	if _, err := os.Stat("/sys/kernel/tracing/events/rcu/rcu_utilization"); err != nil {
		t.Skipf("no rcu:rcu_utilization tracepoint: %v", err)
	}
	dir := t.TempDir()
	for _, out := range []string{"file.data", "-"} {
		t.Run(out, func(t *testing.T) {
			path := filepath.Join(dir, "pipe.data")
			cmd := exec.Command(perf, "record", "-q", "-N", "-a", "-e", "rcu:rcu_utilization", "-o", out, "--", "sleep", "0.1")
			cmd.Dir = dir
			cmd.Env = fixtures.PerfEnv(dir) // perf must not touch ~/.debug
			if out == "-" {
				stream, err := cmd.Output()
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(path, stream, 0o644))
			} else {
				b, err := cmd.CombinedOutput()
				require.NoError(t, err, string(b))
				path = filepath.Join(dir, out)
			}
			f, err := Open(path)
			require.NoError(t, err)
			defer f.Close()
			rs := f.Records(RecordsOptions{})
			var ptrs []uint64
			for rs.Next() {
				if s, ok := rs.Record().(*Sample); ok && len(s.Raw) >= 16 {
					ptrs = append(ptrs, binary.LittleEndian.Uint64(s.Raw[8:])) // "const char * s", offset 8
				}
			}
			require.NoError(t, rs.Err())
			require.NotEmpty(t, ptrs)
			m, err := f.Features().TracePrintk()
			require.NoError(t, err)
			seen := map[string]bool{}
			for _, p := range ptrs {
				s, ok := m[p]
				require.True(t, ok, "%#x is not among %d printk strings", p, len(m))
				seen[s] = true
			}
			assert.True(t, seen["Start context switch"] && seen["End context switch"], "%v", seen)
		})
	}
}

// TestPrintkLine: lines as tracefs's printk_formats writes them, taken as
// libtraceevent takes them (the kernel's escapes kept, a final \n
// dropped only inside the quotes).
func TestPrintkLine(t *testing.T) {
	t.Parallel()
	for line, want := range map[string]struct {
		addr uint64
		s    string
		ok   bool
	}{
		`0xffffffff82a1b2c3 : "Start context switch"`: {0xffffffff82a1b2c3, "Start context switch", true},
		`0xffffffff82a1b2c4 : "a: b\t\"c\"\n"`:        {0xffffffff82a1b2c4, `a: b\t\"c\"`, true},
		`0xffffffff82a1b2c5 : "two\n\n"`:              {0xffffffff82a1b2c5, `two\n`, true},
		`0xffffffff82a1b2c6 : unquoted\n`:             {0xffffffff82a1b2c6, `unquoted\n`, true},
		`0xffffffff82a1b2c7 : ""`:                     {0xffffffff82a1b2c7, "", true},
		`no colon`:                                    {},
		`zz : "not hex"`:                              {},
		`0xffffffff82a1b2c8 :`:                        {},
	} {
		addr, s, ok := printkLine(line)
		assert.Equal(t, want.ok, ok, line)
		assert.Equal(t, want.addr, addr, line)
		assert.Equal(t, want.s, s, line)
	}
}

// A payload cut inside its printk strings is an error at the offset
// where they were to be read.
func TestTracePrintkTruncated(t *testing.T) {
	t.Parallel()
	b := []byte("\x17\x08Dtracing0.6\x00\x00\x08\x00\x10\x00\x00")
	b = append(b, "header_page\x00"...)
	b = binary.LittleEndian.AppendUint64(b, 0)
	b = append(b, "header_event\x00"...)
	b = binary.LittleEndian.AppendUint64(b, 0)
	b = binary.LittleEndian.AppendUint32(b, 0) // ftrace formats
	b = binary.LittleEndian.AppendUint32(b, 0) // systems
	b = binary.LittleEndian.AppendUint32(b, 0) // kallsyms
	whole := binary.LittleEndian.AppendUint32(b, 11)
	whole = append(whole, "0x10 : \"x\"\n"...)
	m, err := parseTracePrintk(whole, 1000)
	require.NoError(t, err)
	assert.Equal(t, map[uint64]string{0x10: "x"}, m)

	m, err = parseTracePrintk(whole[:len(whole)-1], 1000)
	assert.Nil(t, m)
	var fe *FormatError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, int64(1000+len(b)+4), fe.Offset)
}
