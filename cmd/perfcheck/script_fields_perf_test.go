package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// perfcheck script -F weight, data_src, phys_addr, iregs and uregs print
// what perf script prints, on real recordings made with the options that
// record them: every register perf records at a page fault, a few chosen
// ones at cpu-clock samples (where the kernel's and the program's frames
// are named too). perfcheck looks binaries up as perf does (ckLikePerf):
// a cpu-clock sample may land in libc, whose local symbols perf finds in
// the system's debug directory.
func TestScriptSampleFieldsMatchPerf(t *testing.T) {
	t.Parallel()
	if runtime.GOARCH != "amd64" {
		t.Skip("register names and the freestanding program are x86-64's")
	}
	w := newRealWorld(t)
	static := filepath.Join(w.dir, "addrstatic")
	w.buildSrc(static, addrStaticC, "-static-pie", "-nostdlib", "-fno-stack-protector")
	prog := filepath.Join(w.dir, "addrprog")
	w.buildSrc(prog, addrC)
	extra := []string{"--weight", "--phys-data"}
	faults := w.recordAddr("faults.data", append([]string{"-e", "page-faults", "-c", "1", "--intr-regs", "--user-regs"}, extra...), static)
	clock := w.recordAddr("clock.data", append([]string{"-e", "cpu-clock", "-F", "2000", "--intr-regs=ax,bx,ip", "--user-regs=ax,sp"}, extra...), prog)

	for _, c := range []struct{ data, fields string }{
		{faults, "comm,tid,event,addr,weight,data_src,phys_addr,ip,sym,dso,iregs,uregs"},
		{faults, "tid,time,data_src,weight"},
		{faults, "+iregs,+uregs,+phys_addr,+data_src,+weight"},
		{clock, "comm,tid,event,addr,weight,data_src,phys_addr,ip,sym,symoff,dso,iregs,uregs"},
		{clock, "comm,weight,data_src,phys_addr,iregs,uregs"},
		{clock, "+iregs,+uregs,+phys_addr,+data_src,+weight"},
	} {
		perf := w.run("perf", "script", "-F", c.fields, "-i", c.data)
		require.NotEmpty(t, perf, c.fields)
		out, errs, code := ckRun(t, append(append([]string{"script", "-F", c.fields}, ckLikePerf(t)...), c.data)...)
		require.Equal(t, exitOK, code, errs)
		require.Equal(t, perf, out, "%s -F %s", filepath.Base(c.data), c.fields)
	}
	// The comparison proves something only if registers vary and were
	// printed with perf's names.
	perf := w.run("perf", "script", "-F", "iregs,uregs", "-i", faults)
	for _, name := range []string{" ABI:2 ", "   AX:0x", "FLAGS:0x", "  R15:0x"} {
		assert.Contains(t, perf, name)
	}
	assert.Greater(t, len(distinctLines(perf)), 100, "distinct register sets")
}

// A field the events did not record is refused, as perf script refuses
// it, with one line that says why.
func TestScriptFieldsRefusedUnrecorded(t *testing.T) {
	t.Parallel()
	w := newRealWorld(t)
	prog := filepath.Join(w.dir, "addrprog")
	w.buildSrc(prog, addrC)
	data := w.recordAddr("plain.data", []string{"-e", "cpu-clock", "-F", "500"}, prog)
	for field, attr := range map[string]string{"weight": "WEIGHT", "phys_addr": "PHYS_ADDR", "iregs": "IREGS", "uregs": "UREGS"} {
		out, errs, code := ckRun(t, append([]string{"script", "-F", "comm," + field}, append(ckHermetic(t), data)...)...)
		assert.Equal(t, exitError, code, field)
		assert.Empty(t, out, field)
		assert.Equal(t, "perfcheck script: samples for \"cpu-clock\" do not have the "+attr+" attribute set: cannot print "+field+"\n", errs)

		cmd := exec.Command("perf", "script", "-F", "comm,"+field, "-i", data)
		cmd.Dir = w.dir
		cmd.Env = append(fixtures.PerfEnv(w.dir), "LC_ALL=C")
		var perfErr bytes.Buffer
		cmd.Stderr = &perfErr
		require.Error(t, cmd.Run(), "perf script accepts -F %s", field)
		assert.Contains(t, perfErr.String(), "do not have "+attr+" attribute set. Cannot print '"+field+"' field.")
	}
}

// distinctLines returns the distinct lines of s.
func distinctLines(s string) map[string]bool {
	m := map[string]bool{}
	for _, l := range strings.Split(s, "\n") {
		m[l] = true
	}
	return m
}
