package pprofout

import (
	"encoding/binary"
	"io"
	"math/bits"

	"github.com/perfcheck/perfcheck/check"
)

// The encoder writes profile.proto (github.com/google/pprof's
// proto/profile.proto) field by field, byte for byte as google/pprof's
// Profile.WriteUncompressed encodes the same profile: the same field order,
// the same packing (a repeated number field packed when it has more than
// two values), zero-valued optional fields left out, and the same string
// table, whose indexes are given in the order Profile.preEncode gives them
// (sample types, then each sample's labels, mappings, functions, the period
// type, comments, the default sample type). The samples come first in that
// order, and a string's index is known when it is first used, so each
// sample is written as soon as it is built and dropped: the encoder holds
// no stack, only the string table and a buffer of encoded fields.

// Field numbers of profile.proto's messages.
const (
	profSampleType        = 1
	profSample            = 2
	profMapping           = 3
	profLocation          = 4
	profFunction          = 5
	profStringTable       = 6
	profTimeNanos         = 9
	profDurationNanos     = 10
	profPeriodType        = 11
	profComment           = 13
	profDefaultSampleType = 14

	sampleLocation = 1
	sampleValue    = 2
	sampleLabel    = 3

	labelKey = 1
	labelStr = 2
	labelNum = 3

	valueTypeType = 1
	valueTypeUnit = 2

	mappingID              = 1
	mappingStart           = 2
	mappingLimit           = 3
	mappingOffset          = 4
	mappingFile            = 5
	mappingBuildID         = 6
	mappingHasFunctions    = 7
	mappingHasFilenames    = 8
	mappingHasLineNumbers  = 9
	mappingHasInlineFrames = 10

	locationID      = 1
	locationMapping = 2
	locationAddress = 3
	locationLine    = 4

	lineFunction = 1
	lineLine     = 2
	lineColumn   = 3

	functionID         = 1
	functionName       = 2
	functionSystemName = 3
	functionFilename   = 4
)

// flushSize is how many encoded bytes the encoder gathers before it hands
// them to its writer (a gzip writer: fewer, larger writes).
const flushSize = 256 << 10

// encoder writes one profile to w.
type encoder struct {
	w   io.Writer
	err error // the first write error; later writes are skipped
	buf []byte

	strs    map[string]int64 // index of each string in the table
	strList []string         // the table, by index

	msg, sub []byte            // a message being built, and one nested in it
	ids      []uint64          // a sample's location IDs
	locs     []*check.Location // a sample's locations
}

func newEncoder(w io.Writer) *encoder {
	e := &encoder{w: w, strs: map[string]int64{}}
	e.str("") // string_table[0] is always ""
	return e
}

// str returns s's index in the string table, adding it on first use.
func (e *encoder) str(s string) int64 {
	if i, ok := e.strs[s]; ok {
		return i
	}
	i := int64(len(e.strList))
	e.strs[s] = i
	e.strList = append(e.strList, s)
	return i
}

// field writes a length-delimited field of the profile message.
func (e *encoder) field(num int, data []byte) {
	e.buf = appendBytes(e.buf, num, data)
	if len(e.buf) >= flushSize {
		e.flush()
	}
}

// flush hands the encoded bytes to w.
func (e *encoder) flush() {
	if e.err == nil && len(e.buf) > 0 {
		_, e.err = e.w.Write(e.buf)
	}
	e.buf = e.buf[:0]
}

// valueType writes a ValueType field.
func (e *encoder) valueType(num int, v valueType) {
	m := appendInt64Opt(e.msg[:0], valueTypeType, e.str(v.typ))
	m = appendInt64Opt(m, valueTypeUnit, e.str(v.unit))
	e.msg = m
	e.field(num, m)
}

// sample writes s. Its labels are in the order pprof writes a Sample's:
// the string labels by key (comm, trusted), then the numeric ones by key
// (pid, tid).
func (e *encoder) sample(s *sample) error {
	ids := e.ids[:0]
	e.locs = s.stack.AppendLocations(e.locs[:0])
	for _, l := range e.locs {
		// The check's location IDs are the profile's (tables).
		ids = append(ids, uint64(l.ID))
	}
	e.ids = ids
	m := appendNumbers(e.msg[:0], sampleLocation, ids)
	m = appendNumbers(m, sampleValue, s.values)
	if s.comm != "" {
		m = e.label(m, "comm", s.comm, 0)
	}
	m = e.label(m, "trusted", check.YesNo(s.stack.Trusted), 0)
	// Signed, as perf prints them: the kernel's pid is -1.
	m = e.label(m, "pid", "", int64(int32(s.pid)))
	m = e.label(m, "tid", "", int64(int32(s.tid)))
	e.msg = m
	e.field(profSample, m)
	return e.err
}

// label appends a Label field to m: a string label when str is not
// empty, else a numeric one.
func (e *encoder) label(m []byte, key, str string, num int64) []byte {
	l := appendInt64Opt(e.sub[:0], labelKey, e.str(key))
	if str != "" {
		l = appendInt64Opt(l, labelStr, e.str(str))
	}
	l = appendInt64Opt(l, labelNum, num)
	e.sub = l
	return appendBytes(m, sampleLabel, l)
}

// mappings writes t's mappings.
func (e *encoder) mappings(t *tables) {
	for i := range t.mappings {
		mp := &t.mappings[i]
		m := appendUint64Opt(e.msg[:0], mappingID, uint64(i+1))
		m = appendUint64Opt(m, mappingStart, mp.start)
		m = appendUint64Opt(m, mappingLimit, mp.limit)
		m = appendUint64Opt(m, mappingOffset, mp.offset)
		m = appendInt64Opt(m, mappingFile, e.str(mp.file))
		m = appendInt64Opt(m, mappingBuildID, e.str(mp.buildID))
		m = appendBoolOpt(m, mappingHasFunctions, mp.hasFunctions)
		m = appendBoolOpt(m, mappingHasFilenames, mp.hasFilenames)
		m = appendBoolOpt(m, mappingHasLineNumbers, mp.hasLineNumbers)
		m = appendBoolOpt(m, mappingHasInlineFrames, mp.hasInlineFrames)
		e.msg = m
		e.field(profMapping, m)
	}
}

// locations writes t's locations with their lines.
func (e *encoder) locations(t *tables) {
	for i, l := range t.locations {
		m := appendUint64Opt(e.msg[:0], locationID, uint64(i+1))
		m = appendUint64Opt(m, locationMapping, l.mapping)
		m = appendUint64Opt(m, locationAddress, l.address)
		for _, ln := range t.lines[t.lineAt[i]:t.lineAt[i+1]] {
			s := appendUint64Opt(e.sub[:0], lineFunction, ln.function)
			s = appendInt64Opt(s, lineLine, ln.line)
			s = appendInt64Opt(s, lineColumn, ln.column)
			e.sub = s
			m = appendBytes(m, locationLine, s)
		}
		e.msg = m
		e.field(profLocation, m)
	}
}

// functions writes t's functions.
func (e *encoder) functions(t *tables) {
	for i, f := range t.functions {
		m := appendUint64Opt(e.msg[:0], functionID, uint64(i+1))
		m = appendInt64Opt(m, functionName, e.str(f.name))
		m = appendInt64Opt(m, functionSystemName, e.str(f.systemName))
		m = appendInt64Opt(m, functionFilename, e.str(f.filename))
		e.msg = m
		e.field(profFunction, m)
	}
}

// trailer writes the string table and the profile's own fields that
// follow it. Every string is added to the table before it is written.
func (e *encoder) trailer(t *tables, opts Options) {
	var ptType, ptUnit int64
	if t.periodType != nil {
		ptType, ptUnit = e.str(t.periodType.typ), e.str(t.periodType.unit)
	}
	comments := make([]int64, len(opts.Comments))
	for i, c := range opts.Comments {
		comments[i] = e.str(c)
	}
	def := e.str(t.defaultType)
	for _, s := range e.strList {
		e.buf = appendString(e.buf, profStringTable, s)
		if len(e.buf) >= flushSize {
			e.flush()
		}
	}
	b := appendInt64Opt(e.buf, profTimeNanos, opts.TimeNanos)
	b = appendInt64Opt(b, profDurationNanos, opts.DurationNanos)
	if ptType != 0 || ptUnit != 0 {
		pt := appendInt64Opt(nil, valueTypeType, ptType)
		pt = appendInt64Opt(pt, valueTypeUnit, ptUnit)
		b = appendBytes(b, profPeriodType, pt)
	}
	b = appendNumbers(b, profComment, comments)
	e.buf = appendUint64(b, profDefaultSampleType, uint64(def))
	e.flush()
}

// appendUint64 appends a varint field.
func appendUint64(b []byte, num int, x uint64) []byte {
	b = binary.AppendUvarint(b, uint64(num)<<3)
	return binary.AppendUvarint(b, x)
}

// appendUint64Opt appends a varint field unless x is 0.
func appendUint64Opt(b []byte, num int, x uint64) []byte {
	if x == 0 {
		return b
	}
	return appendUint64(b, num, x)
}

// appendInt64Opt appends an int64 field (a varint of its two's complement)
// unless x is 0.
func appendInt64Opt(b []byte, num int, x int64) []byte { return appendUint64Opt(b, num, uint64(x)) }

// appendBoolOpt appends a bool field if v is true.
func appendBoolOpt(b []byte, num int, v bool) []byte {
	if !v {
		return b
	}
	return appendUint64(b, num, 1)
}

// appendBytes appends a length-delimited field.
func appendBytes(b []byte, num int, data []byte) []byte {
	b = binary.AppendUvarint(b, uint64(num)<<3|2)
	b = binary.AppendUvarint(b, uint64(len(data)))
	return append(b, data...)
}

// appendString appends a string field.
func appendString(b []byte, num int, s string) []byte {
	b = binary.AppendUvarint(b, uint64(num)<<3|2)
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendNumbers appends a repeated varint field: packed when it has more
// than two values, else one field per value, as google/pprof writes them.
func appendNumbers[T int64 | uint64](b []byte, num int, xs []T) []byte {
	if len(xs) <= 2 {
		for _, x := range xs {
			b = appendUint64(b, num, uint64(x))
		}
		return b
	}
	n := 0
	for _, x := range xs {
		n += varintLen(uint64(x))
	}
	b = binary.AppendUvarint(b, uint64(num)<<3|2)
	b = binary.AppendUvarint(b, uint64(n))
	for _, x := range xs {
		b = binary.AppendUvarint(b, uint64(x))
	}
	return b
}

// varintLen is the length of x as a varint.
func varintLen(x uint64) int { return (bits.Len64(x|1) + 6) / 7 }
