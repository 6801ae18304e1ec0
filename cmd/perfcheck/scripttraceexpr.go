package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/perfcheck/perfcheck/perfdata"
)

// traceExpr is an argument of a print fmt, evaluated on a record.
type traceExpr interface {
	eval(r *traceRecord) (traceValue, error)
}

type (
	traceConst traceValue
	traceField string // REC->name
	traceIndex struct {
		field string
		i     traceExpr
	} // REC->name[i]
	traceGetStr     string // __get_str(name)
	traceGetBitmask string // __get_bitmask(name)
	// traceDynArray is __get_dynamic_array(name), which only %ph prints
	// (newTraceFormat); traceDynArrayLen is __get_dynamic_array_len(name).
	traceDynArray    string
	traceDynArrayLen string
	traceUnary       struct {
		op byte
		x  traceExpr
	}
	traceBinary struct {
		op   string
		x, y traceExpr
	}
	traceCond struct{ c, a, b traceExpr }
	// traceGroup is a parenthesized expression, which libtraceevent's
	// process_op may take apart (tepBinary).
	traceGroup struct{ x traceExpr }
	traceCast  struct {
		bits   int // 8, 16, 32 or 64
		signed bool
		x      traceExpr
	}
	// traceFlags is __print_flags (delim set) or __print_symbolic.
	traceFlags struct {
		symbolic bool
		val      traceExpr
		delim    string
		values   []uint64
		names    []string
	}
)

func (c traceConst) eval(*traceRecord) (traceValue, error)   { return traceValue(c), nil }
func (f traceField) eval(r *traceRecord) (traceValue, error) { return r.field(string(f)) }
func (x traceIndex) eval(r *traceRecord) (traceValue, error) {
	i, err := num(x.i, r)
	if err != nil {
		return traceValue{}, err
	}
	if r.ev == nil || i > 1<<16 {
		return traceValue{}, fmt.Errorf("element %d of %s", i, x.field)
	}
	return r.element(x.field, int(i))
}
func (g traceGetStr) eval(r *traceRecord) (traceValue, error) { return r.field(string(g)) }
func (g traceGetBitmask) eval(r *traceRecord) (traceValue, error) {
	return r.bitmask(string(g))
}
func (d traceDynArray) eval(*traceRecord) (traceValue, error) {
	return traceValue{}, fmt.Errorf("__get_dynamic_array(%s) as a value: %w", string(d), errTraceUnsupported)
}
func (d traceDynArrayLen) eval(r *traceRecord) (traceValue, error) {
	b, err := r.dynamic(string(d))
	return traceValue{n: uint64(len(b))}, err
}
func (u traceUnary) eval(r *traceRecord) (traceValue, error)   { return u.apply(r) }
func (g traceGroup) eval(r *traceRecord) (traceValue, error)   { return g.x.eval(r) }
func (c traceCast) eval(r *traceRecord) (traceValue, error)    { return c.apply(r) }
func (f *traceFlags) eval(r *traceRecord) (traceValue, error)  { return f.apply(r) }
func (b *traceBinary) eval(r *traceRecord) (traceValue, error) { return b.apply(r) }

func (c *traceCond) eval(r *traceRecord) (traceValue, error) {
	v, err := c.c.eval(r)
	if err != nil {
		return v, err
	}
	if v.truth() {
		return c.a.eval(r)
	}
	return c.b.eval(r)
}

// num evaluates x to a number.
func num(x traceExpr, r *traceRecord) (uint64, error) {
	v, err := x.eval(r)
	if err == nil && v.isStr {
		err = fmt.Errorf("a string where a number belongs")
	}
	return v.n, err
}

func (u traceUnary) apply(r *traceRecord) (traceValue, error) {
	n, err := num(u.x, r)
	switch u.op {
	case '-':
		n = -n
	case '~':
		n = ^n
	case '!':
		n = boolNum(n == 0)
	}
	return traceValue{n: n}, err
}

func (c traceCast) apply(r *traceRecord) (traceValue, error) {
	v, err := c.x.eval(r)
	if err != nil || v.isStr || c.bits == 64 {
		return v, err
	}
	n := v.n & (1<<c.bits - 1)
	if c.signed && n>>(c.bits-1) != 0 {
		n |= ^uint64(0) << c.bits
	}
	return traceValue{n: n}, nil
}

func (b *traceBinary) apply(r *traceRecord) (traceValue, error) {
	x, err := num(b.x, r)
	if err != nil {
		return traceValue{}, err
	}
	switch b.op { // short-circuit, as C
	case "&&":
		if x == 0 {
			return traceValue{}, nil
		}
	case "||":
		if x != 0 {
			return traceValue{n: 1}, nil
		}
	}
	y, err := num(b.y, r)
	if err != nil {
		return traceValue{}, err
	}
	var n uint64
	switch b.op {
	case "&&", "||":
		n = boolNum(y != 0)
	case "|":
		n = x | y
	case "^":
		n = x ^ y
	case "&":
		n = x & y
	case "==":
		n = boolNum(x == y)
	case "!=":
		n = boolNum(x != y)
	case "<":
		n = boolNum(int64(x) < int64(y))
	case ">":
		n = boolNum(int64(x) > int64(y))
	case "<=":
		n = boolNum(int64(x) <= int64(y))
	case ">=":
		n = boolNum(int64(x) >= int64(y))
	case "<<":
		n = x << (y & 63)
	case ">>":
		n = x >> (y & 63)
	case "+":
		n = x + y
	case "-":
		n = x - y
	case "*":
		n = x * y
	case "/", "%":
		if y == 0 {
			return traceValue{}, fmt.Errorf("division by zero")
		}
		if b.op == "/" {
			n = x / y
		} else {
			n = x % y
		}
	}
	return traceValue{n: n}, nil
}

// apply is libtraceevent's PRINT_FLAGS and PRINT_SYMBOL: each flag whose
// bits are all set, joined by the delimiter, what is left in hex; or the
// name of the value, else the value in hex.
func (f *traceFlags) apply(r *traceRecord) (traceValue, error) {
	val, err := num(f.val, r)
	if err != nil {
		return traceValue{}, err
	}
	if f.symbolic {
		for i, v := range f.values {
			if v == val {
				return traceValue{isStr: true, s: f.names[i]}, nil
			}
		}
		return traceValue{isStr: true, s: "0x" + strconv.FormatUint(val, 16)}, nil
	}
	var s []string
	for i, v := range f.values {
		if val == 0 && int64(v) < 0 {
			s = append(s, f.names[i])
			break
		}
		if int64(v) > 0 && val&v == v {
			s = append(s, f.names[i])
			val &^= v
		}
	}
	if val != 0 {
		s = append(s, "0x"+strconv.FormatUint(val, 16))
	}
	return traceValue{isStr: true, s: strings.Join(s, f.delim)}, nil
}

func boolNum(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// traceParser reads a print fmt's arguments: C expressions.
type traceParser struct {
	src string
	pos int
	ev  *perfdata.TraceEvent
	// dynArrays counts the __get_dynamic_array read.
	dynArrays int
}

func (p *traceParser) skipSpace() {
	for p.pos < len(p.src) && strings.IndexByte(" \t\n", p.src[p.pos]) >= 0 {
		p.pos++
	}
}

func (p *traceParser) peek() byte {
	if p.pos < len(p.src) {
		return p.src[p.pos]
	}
	return 0
}

func (p *traceParser) errorf(format string, args ...any) error {
	return fmt.Errorf("print fmt at %q: %s: %w", p.src[p.pos:min(len(p.src), p.pos+24)], fmt.Sprintf(format, args...), errTraceUnsupported)
}

// stringLit reads a C string literal (adjacent ones joined).
func (p *traceParser) stringLit() (string, bool) {
	var out strings.Builder
	found := false
	for p.skipSpace(); p.peek() == '"'; p.skipSpace() {
		end := p.pos + 1
		for end < len(p.src) && p.src[end] != '"' {
			if p.src[end] == '\\' {
				end++
			}
			end++
		}
		if end >= len(p.src) {
			return "", false
		}
		s, err := strconv.Unquote(p.src[p.pos : end+1])
		if err != nil {
			return "", false
		}
		out.WriteString(s)
		p.pos = end + 1
		found = true
	}
	return out.String(), found
}

// ident reads an identifier.
func (p *traceParser) ident() string {
	p.skipSpace()
	i := p.pos
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || p.pos > i && c >= '0' && c <= '9' {
			p.pos++
			continue
		}
		break
	}
	return p.src[i:p.pos]
}

func (p *traceParser) expect(c byte) error {
	p.skipSpace()
	if p.peek() != c {
		return p.errorf("want %q", c)
	}
	p.pos++
	return nil
}

func (p *traceParser) expr() (traceExpr, error) {
	c, err := p.binary(1)
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.peek() != '?' {
		return c, nil
	}
	p.pos++
	a, err := p.expr()
	if err != nil {
		return nil, err
	}
	if err := p.expect(':'); err != nil {
		return nil, err
	}
	b, err := p.expr()
	if err != nil {
		return nil, err
	}
	return &traceCond{c, a, b}, nil
}

// traceOps are C's binary operators by precedence, lowest first; longer
// spellings before their prefixes.
var traceOps = [][]string{
	{"||"}, {"&&"}, {"|"}, {"^"}, {"&"}, {"==", "!="}, {"<=", ">=", "<", ">"}, {"<<", ">>"}, {"+", "-"}, {"*", "/", "%"},
}

// binary reads operators of precedence level and above.
func (p *traceParser) binary(level int) (traceExpr, error) {
	if level > len(traceOps) {
		return p.unary()
	}
	x, err := p.binary(level + 1)
	if err != nil {
		return nil, err
	}
	xs, ops := []traceExpr{x}, []string(nil)
	for {
		p.skipSpace()
		op := ""
		for _, o := range traceOps[level-1] {
			if strings.HasPrefix(p.src[p.pos:], o) && !p.longerOp(o) {
				op = o
				break
			}
		}
		if op == "" {
			break
		}
		p.pos += len(op)
		y, err := p.binary(level + 1)
		if err != nil {
			return nil, err
		}
		xs, ops = append(xs, y), append(ops, op)
	}
	// libtraceevent's process_op nests a chain of operators of one
	// precedence to the right (a - b - c is a - (b - c) to it), and
	// perf prints what it computes.
	x = xs[len(xs)-1]
	for i := len(ops) - 1; i >= 0; i-- {
		x = tepBinary(ops[i], xs[i], x, level)
	}
	return x, nil
}

// tepBinary is "x op y" as libtraceevent's process_op builds it, op being
// of precedence level: when y is a parenthesized operation of lower
// precedence, it rotates the tree as if there were no parentheses
// ("x & (a | b)" is "(x & a) | b" to it: timer:timer_start's flags).
func tepBinary(op string, x, y traceExpr, level int) traceExpr {
	if g, ok := y.(traceGroup); ok {
		if b, ok := g.x.(*traceBinary); ok && opLevel(b.op) < level {
			return &traceBinary{b.op, &traceBinary{op, x, b.x}, b.y}
		}
	}
	return &traceBinary{op, x, y}
}

// opLevel is the precedence level of a binary operator in traceOps.
func opLevel(op string) int {
	for i, ops := range traceOps {
		if slices.Contains(ops, op) {
			return i + 1
		}
	}
	return 0
}

// longerOp reports whether the operator at p.pos is a longer one that
// starts with o ("||" for "|", "<<" for "<", "&&" for "&").
func (p *traceParser) longerOp(o string) bool {
	rest := p.src[p.pos+len(o):]
	if rest == "" {
		return false
	}
	switch o {
	case "|", "&", "<", ">":
		return rest[0] == o[0] || rest[0] == '='
	}
	return false
}

func (p *traceParser) unary() (traceExpr, error) {
	p.skipSpace()
	switch c := p.peek(); c {
	case '-', '!', '~':
		p.pos++
		x, err := p.unary()
		return traceUnary{c, x}, err
	case '(':
		save := p.pos
		p.pos++
		if bits, signed, ok := p.castType(); ok {
			x, err := p.unary()
			return traceCast{bits, signed, x}, err
		}
		p.pos = save + 1
		x, err := p.expr()
		if err != nil {
			return nil, err
		}
		return traceGroup{x}, p.expect(')')
	}
	return p.primary()
}

// castType reads "type)" of a cast, if the parenthesis holds a type.
func (p *traceParser) castType() (bits int, signed bool, ok bool) {
	end := strings.IndexByte(p.src[p.pos:], ')')
	if end < 0 {
		return 0, false, false
	}
	words := strings.Fields(strings.ReplaceAll(p.src[p.pos:p.pos+end], "*", " * "))
	if len(words) == 0 {
		return 0, false, false
	}
	bits, signed = 32, true
	unknown := false
	for _, w := range words {
		switch w {
		case "unsigned":
			signed = false
		case "signed", "int", "const", "volatile":
		case "char", "s8":
			bits = 8
		case "u8", "bool":
			bits, signed = 8, false
		case "short", "s16":
			bits = 16
		case "u16":
			bits, signed = 16, false
		case "s32":
			bits = 32
		case "u32":
			bits, signed = 32, false
		case "long", "s64", "*":
			bits = 64
		case "u64", "size_t", "unsigned long", "uintptr_t", "void":
			bits, signed = 64, false
		default:
			if !isIdent(w) {
				return 0, false, false
			}
			// A type libtraceevent does not know (gfp_t, struct
			// page) leaves the value as it is (eval_type_str).
			unknown = true
		}
	}
	if unknown {
		bits, signed = 64, false
	}
	p.pos += end + 1
	return bits, signed, true
}

func (p *traceParser) primary() (traceExpr, error) {
	p.skipSpace()
	c := p.peek()
	switch {
	case c == '"':
		s, ok := p.stringLit()
		if !ok {
			return nil, p.errorf("bad string")
		}
		return traceConst{isStr: true, s: s}, nil
	case c >= '0' && c <= '9':
		i := p.pos
		for p.pos < len(p.src) && (isAlnum(p.src[p.pos])) {
			p.pos++
		}
		lit := strings.TrimRight(strings.ToLower(p.src[i:p.pos]), "ul")
		n, err := strconv.ParseUint(lit, 0, 64)
		if err != nil {
			return nil, p.errorf("number %q", p.src[i:p.pos])
		}
		return traceConst{n: n}, nil
	}
	name := p.ident()
	switch name {
	case "REC":
		p.skipSpace()
		if !strings.HasPrefix(p.src[p.pos:], "->") {
			return nil, p.errorf("REC without ->")
		}
		p.pos += 2
		f := p.ident()
		if p.skipSpace(); p.peek() != '[' {
			return traceField(f), nil
		}
		p.pos++
		i, err := p.expr()
		if err != nil {
			return nil, err
		}
		return traceIndex{f, i}, p.expect(']')
	case "__get_str":
		if err := p.expect('('); err != nil {
			return nil, err
		}
		f := p.ident()
		return traceGetStr(f), p.expect(')')
	case "__get_bitmask", "__get_dynamic_array", "__get_dynamic_array_len":
		if err := p.expect('('); err != nil {
			return nil, err
		}
		f := p.ident()
		if name != "__get_bitmask" && !p.isDataLoc(f) {
			return nil, p.errorf("%s of %s, no __data_loc field", name, f)
		}
		switch name {
		case "__get_dynamic_array":
			p.dynArrays++
			return traceDynArray(f), p.expect(')')
		case "__get_dynamic_array_len":
			return traceDynArrayLen(f), p.expect(')')
		}
		return traceGetBitmask(f), p.expect(')')
	case "__print_flags", "__print_symbolic":
		return p.flags(name == "__print_symbolic")
	case "":
		return nil, p.errorf("an expression")
	}
	if p.skipSpace(); p.peek() != '(' {
		// A name the format leaves undefined (vmemmap_base in
		// kmem:mm_page_alloc) is an atom to libtraceevent, whose value
		// is strtoll's: 0.
		return traceConst{}, nil
	}
	return nil, p.errorf("%s", name)
}

// isDataLoc reports whether the event's field name is a __data_loc one,
// as __get_dynamic_array needs.
func (p *traceParser) isDataLoc(name string) bool {
	if p.ev == nil {
		return false
	}
	f := fieldNamed(p.ev, name)
	return f != nil && isDataLoc(f)
}

// isIdent reports whether w is a C identifier.
func isIdent(w string) bool {
	for i := range len(w) {
		if !isAlnum(w[i]) && w[i] != '_' || i == 0 && w[i] >= '0' && w[i] <= '9' {
			return false
		}
	}
	return w != ""
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// flags reads the arguments of __print_flags (value, delimiter, pairs) or
// __print_symbolic (value, pairs): each pair "{ value, "name" }".
func (p *traceParser) flags(symbolic bool) (traceExpr, error) {
	f := &traceFlags{symbolic: symbolic}
	if err := p.expect('('); err != nil {
		return nil, err
	}
	var err error
	if f.val, err = p.expr(); err != nil {
		return nil, err
	}
	if !symbolic {
		if err := p.expect(','); err != nil {
			return nil, err
		}
		d, ok := p.stringLit()
		if !ok {
			return nil, p.errorf("a delimiter")
		}
		f.delim = d
	}
	for p.skipSpace(); p.peek() == ','; p.skipSpace() {
		p.pos++
		if err := p.expect('{'); err != nil {
			return nil, err
		}
		n, err := p.flagValue()
		if err != nil {
			return nil, err
		}
		if err := p.expect(','); err != nil {
			return nil, err
		}
		name, err := p.flagName()
		if err != nil {
			return nil, err
		}
		if err := p.expect('}'); err != nil {
			return nil, err
		}
		f.values, f.names = append(f.values, n), append(f.names, name)
	}
	return f, p.expect(')')
}

// flagValue reads the value of a __print_flags or __print_symbolic pair:
// a constant expression, or a name the format leaves undefined (an enum
// constant such as HRTIMER_MODE_ABS), which libtraceevent's eval_flag
// knows only from its own table and otherwise takes as -1: it then names
// no flag, and a symbol only of the value -1.
func (p *traceParser) flagValue() (uint64, error) {
	save := p.pos
	if name := p.ident(); name != "" {
		if p.skipSpace(); p.peek() == ',' {
			if v, ok := traceKnownFlags[name]; ok {
				return v, nil
			}
			return ^uint64(0), nil
		}
	}
	p.pos = save
	v, err := p.expr()
	if err != nil {
		return 0, err
	}
	n, err := v.eval(&traceRecord{})
	if err != nil || n.isStr {
		return 0, p.errorf("a constant flag value")
	}
	return n.n, nil
}

// traceKnownFlags are the names libtraceevent's eval_flag knows.
var traceKnownFlags = map[string]uint64{
	"HI_SOFTIRQ": 0, "TIMER_SOFTIRQ": 1, "NET_TX_SOFTIRQ": 2, "NET_RX_SOFTIRQ": 3,
	"BLOCK_SOFTIRQ": 4, "IRQ_POLL_SOFTIRQ": 5, "TASKLET_SOFTIRQ": 6, "SCHED_SOFTIRQ": 7,
	"HRTIMER_SOFTIRQ": 8, "RCU_SOFTIRQ": 9, "HRTIMER_NORESTART": 0, "HRTIMER_RESTART": 1,
}

// flagName reads the name of a __print_flags or __print_symbolic pair: a
// string, or a constant such as the ((void *)0) that ends the kernel's
// GFP flags, which libtraceevent names by its value (arg_eval).
func (p *traceParser) flagName() (string, error) {
	if name, ok := p.stringLit(); ok {
		return name, nil
	}
	v, err := p.expr()
	if err != nil {
		return "", err
	}
	n, err := v.eval(&traceRecord{})
	if err != nil || n.isStr {
		return "", p.errorf("a flag name")
	}
	return strconv.FormatInt(int64(n.n), 10), nil
}
