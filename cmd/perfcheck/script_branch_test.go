package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/internal/fixtures"
	"github.com/perfcheck/perfcheck/perfdata"
)

// branchCorpus are the corpus recordings whose samples carry branch
// stacks (PERF_SAMPLE_BRANCH_STACK) and that perf 6.1 reads: LBR from
// x86 kernels 3.4 to 4.14 and from Google's and the perfparser's test
// data, Arm's CoreSight traces turned into branch stacks (with
// PERF_SAMPLE_BRANCH_HW_INDEX), and simpleperf's.
var branchCorpus = []string{
	"perf.data.branch-4.14",
	"perf.data.branch_stack_hw_index",
	"perf.data.branch_stack_spec",
	"perf.data.callgraph_and_branch-3.4",
	"perf.data.callgraph_and_branch-3.8",
	"perf.data.raw_callgraph_branch-3.4",
	"foreign/perfparser--vector_static_gcc_perf.lbr.data",
	"foreign/autofdo--test.lbr",
	"foreign/autofdo--propeller_sample_1.perfdata1",
	"foreign/autofdo--perf-kernel.data",
	"foreign/autofdo--perf-vmlinux.data",
	"foreign/simpleperf--perf_b.data",
}

// perfBranchOut runs perf script -F fields on data, with an empty HOME
// (no build-id cache of this machine's).
func perfBranchOut(t *testing.T, data, fields string) string {
	t.Helper()
	return perfOut(t, "script", "-F", fields, "-i", data)
}

// pcBranchOut runs perfcheck script -F fields on data, hermetic.
func pcBranchOut(t *testing.T, data, fields string) string {
	t.Helper()
	out, errs, code := ckRun(t, append(append([]string{"script", "-F", fields}, ckHermetic(t)...), data)...)
	require.Equal(t, exitOK, code, errs)
	return out
}

// replaceGroups replaces with repl each "(...)" of s without
// parentheses inside that follow begins (the "(DSO)" of brstack's and a
// frame's text), follow kept. It is no regexp: Go's takes seconds over
// the text of the larger recordings.
func replaceGroups(s, follow, repl string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '(')
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		j := strings.IndexAny(s[i+1:], "()")
		if j < 0 || s[i+1+j] != ')' || !strings.HasPrefix(s[i+2+j:], follow) {
			b.WriteString(s[:i+1])
			s = s[i+1:]
			continue
		}
		b.WriteString(s[:i])
		b.WriteString(repl)
		s = s[i+2+j:]
	}
}

// perfcheck script -F brstack, -F ip,brstack and -F brstack,dso print
// perf script's text byte for byte on every corpus recording with branch
// stacks. Where perf names a DSO otherwise for the frames too (a kernel
// module by its short name, a vmlinux by its path, a JIT region by its
// perf map: `-F ip,dso` differs the same way), the DSO names are left
// out of the comparison and every address and flag is still compared;
// where perf's callchain differs (-F ip alone differs: kernel modules'
// frames, LBR call stacks perf splices into the callchain), the
// callchain lines are left out and the branch lines compared.
func TestScriptBrstackMatchesPerf(t *testing.T) {
	t.Parallel()
	needPerf(t)
	fixtures.Corpus(t, "")
	for _, name := range branchCorpus {
		t.Run(filepath.Base(name), func(t *testing.T) {
			t.Parallel()
			data := fixtures.Corpus(t, name)
			perf := perfBranchOut(t, data, "brstack")
			require.Contains(t, perf, "0x", "perf prints branch stacks")
			require.Equal(t, perf, pcBranchOut(t, data, "brstack"), "-F brstack")

			sameIP := perfBranchOut(t, data, "ip") == pcBranchOut(t, data, "ip")
			perf, pc := perfBranchOut(t, data, "ip,brstack"), pcBranchOut(t, data, "ip,brstack")
			if !sameIP {
				perf, pc = dropFrameLines(perf), dropFrameLines(pc)
			}
			require.Equal(t, perf, pc, "-F ip,brstack")

			sameDSO := perfBranchOut(t, data, "ip,dso") == pcBranchOut(t, data, "ip,dso")
			perf, pc = perfBranchOut(t, data, "brstack,dso"), pcBranchOut(t, data, "brstack,dso")
			if !sameDSO {
				t.Logf("DSO names differ as the frames' do: compared without them")
				perf, pc = replaceGroups(perf, "", "()"), replaceGroups(pc, "", "()")
			}
			require.Equal(t, perf, pc, "-F brstack,dso")
		})
	}
}

// dropFrameLines leaves out the callchain lines of perf script text.
func dropFrameLines(s string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if !strings.HasPrefix(l, "\t") {
			b.WriteString(l)
		}
	}
	return b.String()
}

// branchFlags are the flags that end each entry of the branch fields.
var branchFlags = regexp.MustCompile(`/[-PM]/[-X]/[-A]/[0-9]+/[A-Z_0-9()a-z]* `)

// branchEntries cuts a line of a branch field into its entries, each
// as its addresses ("FROM/TO" with what the field prints of them) and
// its flags.
func branchEntries(line string) (addrs, flags []string) {
	at := 0
	for _, m := range branchFlags.FindAllStringIndex(line, -1) {
		addrs = append(addrs, line[at:m[0]])
		flags = append(flags, line[m[0]:m[1]])
		at = m[1]
	}
	return addrs, flags
}

// perfcheck script -F brstacksym names each branch address as perf does
// wherever both may: the corpus recordings come from other machines, so
// their binaries are absent and perfcheck refuses every name
// ("[missing] elf+0x513"), where perf prints "[unknown]" or, for an
// x86 kernel or a vdso without a recorded build-id, a name from this
// machine's kallsyms or vdso, which are not the ones that ran
// (docs/commands-check.md). Everything else, the entries, their order,
// DSOs and flags, is perf's; -F brstacksym is -F brstacksym,dso without
// the DSOs, for perf and for perfcheck.
func TestScriptBrstackSymMatchesPerf(t *testing.T) {
	t.Parallel()
	eachBranchRecording(t, "brstacksym", func(t *testing.T, perf, pc string, sameDSO bool) {
		for r, n := range compareBrstackSym(t, perf, pc, !sameDSO) {
			t.Logf("%5d addresses differ: %s", n, r)
		}
	})
}

// eachBranchRecording runs compare, in a parallel subtest per corpus
// recording with branch stacks, on perf script's and perfcheck script's
// -F FIELD,dso text, after requiring of both that -F FIELD prints the
// same without the DSOs; sameDSO says whether the two name the samples'
// DSOs alike (-F ip,dso).
func eachBranchRecording(t *testing.T, field string, compare func(t *testing.T, perf, pc string, sameDSO bool)) {
	t.Helper()
	needPerf(t)
	fixtures.Corpus(t, "")
	for _, name := range branchCorpus {
		t.Run(filepath.Base(name), func(t *testing.T) {
			t.Parallel()
			data := fixtures.Corpus(t, name)
			sameDSO := perfBranchOut(t, data, "ip,dso") == pcBranchOut(t, data, "ip,dso")
			perf, pc := perfBranchOut(t, data, field+",dso"), pcBranchOut(t, data, field+",dso")
			require.Equal(t, replaceGroups(perf, "/", ""), perfBranchOut(t, data, field), "perf")
			require.Equal(t, replaceGroups(pc, "/", ""), pcBranchOut(t, data, field), "perfcheck")
			compare(t, perf, pc, sameDSO)
		})
	}
}

// whyVdso: perf names a recording's [vdso] with this machine's vdso.
const whyVdso = "vdso: perf names the recording's [vdso] with this machine's; with no build-id recorded and another kernel recording it, perfcheck leaves it unnamed"

// compareBrstackSym compares -F brstacksym,dso text line by line and
// entry by entry: flags and DSOs (unless looseDSO) byte for byte,
// symbols equal or differing for one of compareFrame's reasons or
// whyVdso. It returns how many addresses differ, per reason.
func compareBrstackSym(t *testing.T, perf, pc string, looseDSO bool) map[string]int {
	t.Helper()
	pl, gl := strings.Split(perf, "\n"), strings.Split(pc, "\n")
	require.Equal(t, len(pl), len(gl), "lines")
	why := map[string]int{}
	for i := range pl {
		if pl[i] == gl[i] {
			continue
		}
		pe, pflags := branchEntries(pl[i])
		ge, gflags := branchEntries(gl[i])
		require.Equal(t, pflags, gflags, "line %d flags:\nperf      %q\nperfcheck %q", i, pl[i], gl[i])
		for j := range pe {
			pf, pt := splitBranch(t, pe[j])
			gf, gt := splitBranch(t, ge[j])
			for k, pair := range [][2]perfFrame{{pf, gf}, {pt, gt}} {
				p, g := pair[0], pair[1]
				if p.sym != "[unknown]" && g.sym == "[unknown]" && g.dso == "[vdso]" && p.dso == g.dso {
					why[whyVdso]++
					continue
				}
				if looseDSO {
					p.dso, g.dso = "", ""
				}
				reason, err := compareFrame(p, g)
				require.NoError(t, err, "line %d entry %d address %d: perf %q, perfcheck %q", i, j, k, pe[j], ge[j])
				if reason != "" {
					why[reason]++
				}
			}
		}
	}
	return why
}

// splitBranch cuts "FROM(DSO)/TO(DSO)" into two frames as compareFrame
// takes them (no address: brstacksym prints none).
func splitBranch(t *testing.T, s string) (from, to perfFrame) {
	t.Helper()
	i := strings.LastIndex(s, ")/")
	require.GreaterOrEqual(t, i, 0, "branch %q", s)
	return symDSOFrame(t, s[:i+1]), symDSOFrame(t, s[i+2:])
}

// symDSOFrame is "SYM+0xOFF(DSO)" as a perfFrame.
func symDSOFrame(t *testing.T, s string) perfFrame {
	t.Helper()
	i := strings.LastIndexByte(s, '(')
	require.True(t, i >= 0 && strings.HasSuffix(s, ")"), "address %q", s)
	return symFrame(s[:i], s[i+1:len(s)-1])
}

// symFrame is "SYM+0xOFF" in DSO as a perfFrame.
func symFrame(sym, dso string) perfFrame {
	f := perfFrame{sym: sym, dso: dso}
	if i := strings.LastIndex(sym, "+0x"); i >= 0 {
		f.sym, f.off = sym[:i], sym[i+3:]
	}
	return f
}

// rewriteBranchFlags copies the recording src to dst with the flags of
// every branch entry replaced by next's values, and returns how many
// it replaced. Each SAMPLE's entries are found at their offset in the
// record, from the event's sample_type, which must have nothing of
// variable length before the branch stack; each is checked against the
// entry perfdata decodes there.
func rewriteBranchFlags(t *testing.T, src, dst string, next func() uint64) int {
	t.Helper()
	return rewriteSamples(t, src, dst, func(raw []byte, a perfdata.Attr, s *perfdata.Sample) int {
		off := s.Header().Offset + 8 + 8*int64(fixedBefore(t, a.SampleType, perfdata.SampleBranchStack)) + 8
		if a.BranchSampleType&perfdata.BranchHWIndex != 0 {
			off += 8
		}
		for i, e := range s.Branches {
			at := off + 24*int64(i)
			require.Equal(t, e.From, binary.LittleEndian.Uint64(raw[at:]), "entry %d of the sample at %d", i, s.Header().Offset)
			require.Equal(t, e.To, binary.LittleEndian.Uint64(raw[at+8:]))
			binary.LittleEndian.PutUint64(raw[at+16:], next())
		}
		return len(s.Branches)
	})
}

// rewriteSamples copies the uncompressed recording src to dst with each
// SAMPLE's bytes changed in place by rewrite (given the whole file, the
// sample's event attr and its decoding), and returns the sum of what
// rewrite returned: how many values it replaced.
func rewriteSamples(t *testing.T, src, dst string, rewrite func(raw []byte, a perfdata.Attr, s *perfdata.Sample) int) int {
	t.Helper()
	raw, err := os.ReadFile(src)
	require.NoError(t, err)
	f, err := perfdata.Open(src)
	require.NoError(t, err)
	defer f.Close()
	n := 0
	rs := f.Records(perfdata.RecordsOptions{})
	for rs.Next() {
		s, ok := rs.Record().(*perfdata.Sample)
		if !ok {
			continue
		}
		h := s.Header()
		require.False(t, h.Compressed)
		n += rewrite(raw, f.Events()[h.EventIndex].Attr, s)
	}
	require.NoError(t, rs.Err())
	require.NoError(t, os.WriteFile(dst, raw, 0o644))
	return n
}

// fixedBefore counts the u64 words a SAMPLE of sample_type st holds
// before field (the order of perf_event.h's PERF_SAMPLE_* layout), and
// fails when one of variable length comes first.
func fixedBefore(t *testing.T, st, field perfdata.SampleType) int {
	t.Helper()
	fixed := []perfdata.SampleType{perfdata.SampleIdentifier, perfdata.SampleIP, perfdata.SampleTID,
		perfdata.SampleTime, perfdata.SampleAddr, perfdata.SampleID, perfdata.SampleStreamID,
		perfdata.SampleCPU, perfdata.SamplePeriod}
	variable := perfdata.SampleRead | perfdata.SampleCallchain | perfdata.SampleRaw
	if field > perfdata.SampleBranchStack {
		variable |= perfdata.SampleBranchStack | perfdata.SampleRegsUser | perfdata.SampleStackUser
		fixed = append(fixed, perfdata.SampleWeight, perfdata.SampleWeightStruct)
	}
	require.Zero(t, st&variable, "sample_type %#x has fields of variable length before %#x", st, field)
	n := 0
	for _, b := range fixed {
		// IDENTIFIER's bit is above the others, its word first.
		if st&b != 0 && (b < field || b == perfdata.SampleIdentifier) {
			n++
		}
	}
	return n
}

// perf's flags text for every value the entry's flags can take: a
// corpus recording rewritten so that its entries cover mispredicted,
// predicted and neither, transactions and aborts, cycle counts, every
// branch type, every extended type and speculation outcome. No
// recording made here has them (this machine has no LBR); perf 6.1
// prints them from the same bits whatever the hardware.
func TestScriptBrstackFlagsMatchPerf(t *testing.T) {
	t.Parallel()
	needPerf(t)
	src := fixtures.Corpus(t, "perf.data.branch-4.14")
	dst := filepath.Join(t.TempDir(), "flags.data")
	k := uint64(0)
	n := rewriteBranchFlags(t, src, dst, func() uint64 {
		k++
		// Type 15 (PERF_BR_EXTEND_ABI) every 16 entries, each time
		// with the next new_type.
		return k&3 | (k>>2&1)<<2 | (k>>3&1)<<3 | (k*37&0xffff)<<4 |
			(k&15)<<20 | (k>>2&3)<<24 | (k>>4&15)<<26 | (k>>1&7)<<30
	})
	require.Greater(t, n, 200, "entries rewritten")
	for _, fields := range []string{"brstack", "ip,brstack", "brstack,dso"} {
		perf := perfBranchOut(t, dst, fields)
		require.Equal(t, perf, pcBranchOut(t, dst, fields), fields)
	}
	perf := perfBranchOut(t, dst, "brstack")
	for _, s := range []string{"/M/X/-/", "/P/-/A/", "/-/-/-/", "/IND_CALL ", "/SYSRET ", "/FAULT_DATA ", "/ARCH_5 ", "/(null) "} {
		assert.Contains(t, perf, s)
	}
}

// simpleperf's LBR recording perf 6.1 refuses (its feature sections are
// simpleperf's own): perfcheck reads every sample's branch stack and
// prints one line per sample, each entry with perf's grammar.
func TestScriptBrstackSimpleperfLBR(t *testing.T) {
	t.Parallel()
	data := fixtures.Corpus(t, "foreign/simpleperf--lbr_perf_lbr.data")
	f, err := perfdata.Open(data)
	require.NoError(t, err)
	defer f.Close()
	var samples, entries int
	rs := f.Records(perfdata.RecordsOptions{})
	for rs.Next() {
		if s, ok := rs.Record().(*perfdata.Sample); ok {
			samples++
			entries += len(s.Branches)
		}
	}
	require.NoError(t, rs.Err())
	require.Equal(t, 19, samples)
	out := pcBranchOut(t, data, "brstack")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, samples)
	got := regexp.MustCompile(` 0x[0-9a-f]+/0x[0-9a-f]+/[-PM]/[-X]/[-A]/[0-9]+/[A-Z_]* `).FindAllString(out, -1)
	assert.Len(t, got, entries)
	assert.Greater(t, entries, samples)
}

// script --json carries each sample's branch stack as recorded: perf
// script -F brstack's addresses and flags, entry for entry.
func TestScriptJSONBranches(t *testing.T) {
	t.Parallel()
	needPerf(t)
	data := fixtures.Corpus(t, "perf.data.branch-4.14")
	out, errs, code := ckRun(t, append(append([]string{"script", "--json"}, ckHermetic(t)...), data)...)
	require.Equal(t, exitOK, code, errs)
	var text bytes.Buffer
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var s struct {
			Branches []struct {
				From, To     string
				Mispredicted bool
				Predicted    bool
				InTx         bool `json:"in_tx"`
				Abort        bool
				Cycles       int
				Type         string
			} `json:"branches"`
		}
		require.NoError(t, json.Unmarshal([]byte(l), &s))
		for _, b := range s.Branches {
			mp := "-"
			if b.Predicted {
				mp = "P"
			} else if b.Mispredicted {
				mp = "M"
			}
			text.WriteString(" " + b.From + "/" + b.To + "/" + mp + "/" + flagChar(b.InTx, "X") + "/" + flagChar(b.Abort, "A") + "/" + strconv.Itoa(b.Cycles) + "/" + b.Type + " ")
		}
		text.WriteString("\n")
	}
	require.Equal(t, perfBranchOut(t, data, "brstack"), text.String())
}

func flagChar(set bool, c string) string {
	if set {
		return c
	}
	return "-"
}

// offDSO cuts " 0xOFF(DSO)" or "0xOFF(DSO)" of -F brstackoff,dso.
func offDSO(t *testing.T, s string) (off, dso string) {
	t.Helper()
	i := strings.IndexByte(s, '(')
	require.True(t, i > 0 && strings.HasSuffix(s, ")"), "address %q", s)
	return strings.TrimPrefix(strings.TrimPrefix(s[:i], " "), "0x"), s[i+1 : len(s)-1]
}

// whyKernelOff: perf's offsets of kernel, vdso and JIT addresses.
const whyKernelOff = "kernel, vdso, JIT: perf prints an offset into its kernel map (which depends on the relocation it infers), the address in the vdso image it loaded, the offset from an anonymous mapping's start; perfcheck the address, the offset in the recording's vdso, the address (by which a perf map names JIT code)"

// perfcheck script -F brstackoff prints each branch address as its
// offset in the DSO's file, as perf does for every binary it did not load
// as a fixed-address executable: on the corpus recordings, whose binaries
// are absent, perf's offsets are perfcheck's for every file and kernel
// module, and an address without a file is printed as it is by both. In
// the kernel and the vdso they differ (whyKernelOff), counted in the log.
func TestScriptBrstackOffMatchesPerf(t *testing.T) {
	t.Parallel()
	eachBranchRecording(t, "brstackoff", func(t *testing.T, perf, pc string, sameDSO bool) {
		pl, gl := strings.Split(perf, "\n"), strings.Split(pc, "\n")
		require.Equal(t, len(pl), len(gl), "lines")
		differ, same := 0, 0
		for i := range pl {
			if pl[i] == gl[i] {
				same += 2 * strings.Count(pl[i], ")/0x")
				continue
			}
			pe, pflags := branchEntries(pl[i])
			ge, gflags := branchEntries(gl[i])
			require.Equal(t, pflags, gflags, "line %d flags", i)
			for j := range pe {
				pa, ga := strings.SplitN(pe[j], ")/", 2), strings.SplitN(ge[j], ")/", 2)
				require.Len(t, pa, 2, pe[j])
				require.Len(t, ga, 2, ge[j])
				for k := range pa {
					pOff, pDSO := offDSO(t, strings.TrimSuffix(pa[k], ")")+")")
					off, dso := offDSO(t, strings.TrimSuffix(ga[k], ")")+")")
					if sameDSO {
						require.Equal(t, pDSO, dso, "line %d entry %d DSO", i, j)
					}
					if dso == "[kernel.kallsyms]" || dso == "[vdso]" || dso == "//anon" {
						if off != pOff {
							differ++
						}
						continue
					}
					require.Equal(t, pOff, off, "line %d entry %d: perf %q, perfcheck %q", i, j, pe[j], ge[j])
					same++
				}
			}
		}
		if differ > 0 {
			t.Logf("%5d addresses differ: %s", differ, whyKernelOff)
		}
		t.Logf("%5d offsets in files and unmapped memory are perf's", same)
	})
}

// A stream read as it is written hands each sample over as it comes
// (check's live reading): its branch addresses are located and named
// there, under the verdicts known then, and print as from the same
// stream saved to a file and read twice. The stream is a corpus
// recording turned into pipe format by perf inject; perf script reads
// it too, and names what perfcheck names.
func TestScriptBrstackSymLive(t *testing.T) {
	t.Parallel()
	needPerf(t)
	src := fixtures.Corpus(t, "perf.data.branch-4.14")
	pipe := perfOut(t, "inject", "-i", src, "-o", "-")
	require.True(t, strings.HasPrefix(pipe, "PERFILE2\x10\x00\x00\x00\x00\x00\x00\x00"), "pipe format")
	saved := filepath.Join(t.TempDir(), "pipe.data")
	require.NoError(t, os.WriteFile(saved, []byte(pipe), 0o644))
	lookup := ckHermetic(t)
	for _, fields := range []string{"brstacksym,dso", "brstackoff,dso", "ip,brstack,dso"} {
		live, errs, code := ckRunIn(t, strings.NewReader(pipe), append(append([]string{"script", "-F", fields}, lookup...), "-")...)
		require.Equal(t, exitOK, code, errs)
		file, errs, code := ckRun(t, append(append([]string{"script", "-F", fields}, lookup...), saved)...)
		require.Equal(t, exitOK, code, errs)
		require.Equal(t, file, live, fields)
	}
	live, errs, code := ckRunIn(t, strings.NewReader(pipe), append(append([]string{"script", "-F", "brstacksym,dso"}, lookup...), "-")...)
	require.Equal(t, exitOK, code, errs)
	for r, n := range compareBrstackSym(t, perfBranchOut(t, saved, "brstacksym,dso"), live, false) {
		t.Logf("%5d addresses differ: %s", n, r)
	}
}

// The branch addresses of the samples a filter keeps are those samples'
// own: with --tid, each line is the unfiltered output's line of that
// sample, offsets and DSOs included.
func TestScriptBranchesFiltered(t *testing.T) {
	t.Parallel()
	data := fixtures.Corpus(t, "perf.data.callgraph_and_branch-3.4")
	all := pcBranchOut(t, data, "tid,brstackoff,dso")
	var want strings.Builder
	for _, l := range strings.SplitAfter(all, "\n") {
		if strings.HasPrefix(strings.TrimLeft(l, " "), "1789 ") {
			want.WriteString(l)
		}
	}
	require.NotEmpty(t, want.String())
	out, errs, code := ckRun(t, append(append([]string{"script", "-F", "tid,brstackoff,dso", "--tid", "1789"}, ckHermetic(t)...), data)...)
	require.Equal(t, exitOK, code, errs)
	require.Equal(t, want.String(), out)
}
