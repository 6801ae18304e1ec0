package check

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestSameKernel: without a kernel build-id, only the same release,
// architecture and host are evidence; a difference in any of them is
// evidence of another kernel, and an unknown is neither.
func TestSameKernel(t *testing.T) {
	t.Parallel()
	here := machine{release: "6.18.44", arch: "x86_64", host: "vm"}
	for _, c := range []struct {
		rec, now         machine
		differs, unknown string
	}{
		{here, here, "", ""},
		{machine{"6.18.44", "x86_64", "db1"}, here, "host db1 (this machine: vm)", ""},
		{machine{"4.9.0-4-amd64", "aarch64", "vm"}, here, "kernel release 4.9.0-4-amd64 (this machine: 6.18.44), architecture aarch64 (this machine: x86_64)", ""},
		{machine{}, here, "", "the recording does not say its kernel release, architecture, host"},
		{machine{"6.18.44", "aarch64", ""}, here, "architecture aarch64 (this machine: x86_64)", "the recording does not say its host"},
		{here, machine{release: "6.18.44", arch: "x86_64"}, "", "this machine's host cannot be read"},
	} {
		d, u := sameKernel(c.rec, c.now)
		assert.Equal(t, c.differs, d, "%+v", c.rec)
		assert.Equal(t, c.unknown, u, "%+v", c.rec)
	}
}
