package unwind

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/addrspace"
	"github.com/perfcheck/perfcheck/perfdata"
)

// fixtureBin is where the committed fixtures' binaries are; the
// recordings name them under the checkout they were recorded in.
const (
	fixtureBin = "../testdata/perf/bin"
	recordedIn = "/work/main/testdata/perf/bin/"
)

// table reads the unwind table of a fixture binary.
func table(t *testing.T, name string) *Table {
	t.Helper()
	ef, err := elf.Open(filepath.Join(fixtureBin, name))
	require.NoError(t, err)
	defer ef.Close()
	tb, err := newTable(ef)
	require.NoError(t, err)
	return tb
}

// symbols lists a fixture binary's functions, by address.
type symbols []elf.Symbol

func readSymbols(t *testing.T, name string) symbols {
	t.Helper()
	ef, err := elf.Open(filepath.Join(fixtureBin, name))
	require.NoError(t, err)
	defer ef.Close()
	all, err := ef.Symbols()
	require.NoError(t, err)
	var fns symbols
	for _, s := range all {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 {
			fns = append(fns, s)
		}
	}
	sort.Slice(fns, func(i, j int) bool { return fns[i].Value < fns[j].Value })
	return fns
}

// name returns the function that holds ELF address a, "" when none does.
func (ss symbols) name(a uint64) string {
	for _, s := range ss {
		if a >= s.Value && a < s.Value+s.Size {
			return s.Name
		}
	}
	return ""
}

func (ss symbols) addr(t *testing.T, name string) uint64 {
	t.Helper()
	for _, s := range ss {
		if s.Name == name {
			return s.Value
		}
	}
	t.Fatalf("no function %s", name)
	return 0
}

// At a function's first instruction the CFA is the stack pointer before
// the call (RSP + 8) and the return address is just below it: the rule
// every x86-64 .eh_frame CIE starts with.
func TestRowAtEntry(t *testing.T) {
	t.Parallel()
	tb := table(t, "libhot.so")
	ss := readSymbols(t, "libhot.so")
	for _, fn := range []string{"lib_walk", "lib_hash_block"} {
		a := ss.addr(t, fn)
		f := tb.find(a)
		require.NotNil(t, f, fn)
		rw, err := f.rowAt(a, &state{})
		require.NoError(t, err, fn)
		assert.Equal(t, uint64(dwRSP), rw.cfaReg, fn)
		assert.Equal(t, int64(8), rw.cfaOff, fn)
		assert.Equal(t, rule{kind: 1, off: -8}, rw.regs[dwRA], fn)
	}
	assert.Nil(t, tb.find(0), "no FDE covers address 0")
}

func TestNewTableErrors(t *testing.T) {
	t.Parallel()
	// A Go binary has .debug_frame, not .eh_frame.
	ef, err := elf.Open(filepath.Join(fixtureBin, "goprog"))
	require.NoError(t, err)
	defer ef.Close()
	_, err = newTable(ef)
	require.ErrorIs(t, err, ErrNoCFI)
	assert.Contains(t, err.Error(), "no .eh_frame")

	// Another machine: libhot.so with e_machine set to EM_AARCH64.
	b, err := os.ReadFile(filepath.Join(fixtureBin, "libhot.so"))
	require.NoError(t, err)
	b[18], b[19] = byte(elf.EM_AARCH64), 0
	ef, err = elf.NewFile(bytes.NewReader(b))
	require.NoError(t, err)
	_, err = newTable(ef)
	require.ErrorIs(t, err, ErrNoCFI)
	assert.Contains(t, err.Error(), "only x86-64")
}

// perfScript is how perf unwinds the samples of cshared-dwarf.data: an
// "offset:function" per frame in the fixture's own binaries, leaf first,
// up to the first frame in the C library, with how many samples have each
// stack. Like Walk, perf gives a caller as its return address minus one.
// Made with the perf of testdata/perf/perf-version, the fixture's binaries
// at the paths it recorded, and the frames from the C library on (its
// _start) dropped from each line of:
//
//	perf script -i testdata/perf/cshared-dwarf.data | awk '
//	    /^[^ \t]/ { if (s != "") print s; s = ""; next }
//	    /bin\/(cshared|libhot)/ { split($2, a, "+"); s = s (s == "" ? "" : " ") $1 ":" a[1] }
//	    END { if (s != "") print s }' | sort | uniq -c
var perfScript = map[string]int{
	"110c:lib_mix 1163:lib_hash_block 11ab:lib_walk 1198:lib_walk 1198:lib_walk 1198:lib_walk 12ac:do_work 1338:worker 1478:main": 1,
	"110c:lib_mix 1163:lib_hash_block 12bc:do_work 1338:worker 1478:main":                                                         14,
	"1124:lib_mix 1163:lib_hash_block 11ab:lib_walk 1198:lib_walk 1198:lib_walk 1198:lib_walk 12ac:do_work 1338:worker 1478:main": 1,
	"1124:lib_mix 1163:lib_hash_block 12bc:do_work 1338:worker 1478:main":                                                         8,
	"113c:lib_mix 1163:lib_hash_block 11ab:lib_walk 1198:lib_walk 1198:lib_walk 1198:lib_walk 12ac:do_work 1338:worker 1478:main": 1,
	"113c:lib_mix 1163:lib_hash_block 12bc:do_work 1338:worker 1478:main":                                                         6,
	"1143:lib_mix 1163:lib_hash_block 12bc:do_work 1338:worker 1478:main":                                                         2,
	"115f:lib_hash_block 11ab:lib_walk 1198:lib_walk 1198:lib_walk 1198:lib_walk 12ac:do_work 1338:worker 1478:main":              1,
	"11dd:main_spin 1290:do_work 1338:worker 1478:main":                                                                           19,
	"1233:main_sort_step 129b:do_work 1338:worker 1478:main":                                                                      2,
	"125f:main_sort_step 129b:do_work 1338:worker 1478:main":                                                                      4,
	"126f:main_sort_step 129b:do_work 1338:worker 1478:main":                                                                      1,
}

// Every sample of cshared-dwarf.data (perf record --call-graph dwarf)
// unwinds through the fixture's own binaries as perf unwinds it, from the
// leaf up to main, where the C library's code begins, for which the test
// gives no table: the address space comes from package addrspace, the
// tables from the committed binaries.
func TestWalkFixture(t *testing.T) {
	t.Parallel()
	tables := map[string]*Table{"libhot.so": table(t, "libhot.so"), "cshared": table(t, "cshared")}
	syms := map[string]symbols{"libhot.so": readSymbols(t, "libhot.so"), "cshared": readSymbols(t, "cshared")}
	f, err := perfdata.Open("../testdata/perf/cshared-dwarf.data")
	require.NoError(t, err)
	defer f.Close()
	tr := addrspace.New()
	stacks := map[string]int{}
	rs := f.Records(perfdata.RecordsOptions{Ordered: true})
	for rs.Next() {
		s, ok := rs.Record().(*perfdata.Sample)
		if !ok {
			tr.Update(rs.Record())
			continue
		}
		require.Equal(t, uint64(2), s.RegsUserABI, "a 64-bit user stack copy")
		u := &UserStack{Mask: f.Events()[s.EventIndex].Attr.SampleRegsUser, Regs: s.RegsUser,
			Stack: s.StackUser[:min(s.StackUserDynSize, uint64(len(s.StackUser)))]}
		var frames []string
		pcs := Walk(u, func(pc uint64) (*Table, uint64) {
			m := tr.Lookup(s.PID(), perfdata.CPUModeUser, pc)
			if m == nil || !strings.HasPrefix(m.Path, recordedIn) {
				return nil, 0
			}
			base := strings.TrimPrefix(m.Path, recordedIn)
			tb := tables[base]
			require.NotNil(t, tb, base)
			off := m.Offset(pc)
			va, ok := tb.addr(off)
			require.True(t, ok)
			fn := strings.TrimSuffix(syms[base].name(va), ".localalias")
			frames = append(frames, fmt.Sprintf("%x:%s", off, fn))
			return tb, m.Offset(pc)
		}, nil)
		require.Equal(t, s.IP, pcs[0], "the leaf is the sample's IP")
		require.Len(t, pcs, len(frames)+1, "one address past main's, in the C library")
		stacks[strings.Join(frames, " ")]++
	}
	require.NoError(t, rs.Err())
	assert.Equal(t, perfScript, stacks)
}

// A stack copy without the stack pointer or the instruction pointer
// cannot be walked; one without the copy stops after the leaf.
func TestWalkShortInput(t *testing.T) {
	t.Parallel()
	never := func(uint64) (*Table, uint64) {
		t.Fatal("no table is needed")
		return nil, 0
	}
	const ip, sp = 1 << 8, 1 << 7 // perf's register bits of IP and SP
	assert.Empty(t, Walk(&UserStack{Mask: ip, Regs: []uint64{0x1000}}, never, nil))
	assert.Empty(t, Walk(&UserStack{Mask: ip | sp, Regs: []uint64{0x1000}}, never, nil), "fewer values than the mask's bits")

	tb := table(t, "libhot.so")
	a := readSymbols(t, "libhot.so").addr(t, "lib_mix")
	off := a // libhot.so's text: offset and address agree
	_, ok := tb.addr(off)
	require.True(t, ok)
	got := Walk(&UserStack{Mask: ip | sp, Regs: []uint64{0x7ff000, a}}, func(pc uint64) (*Table, uint64) {
		return tb, pc
	}, []uint64{42})
	assert.Equal(t, []uint64{42, a}, got, "the return address is not in the copy")
}
