package unwind

// This file evaluates the DWARF expressions of DW_CFA_def_cfa_expression
// (DWARF 5 section 2.5), which x86-64 PLT stubs use for their CFA:
//
//	DW_OP_breg7 (rsp) 8; DW_OP_breg16 (rip) 0; DW_OP_lit15; DW_OP_and;
//	DW_OP_lit11; DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus
//
// (rsp + 8, plus 8 more once the stub has pushed its relocation index). The
// expressions come from untrusted files, so evaluation is bounded: at most
// maxExprOps operations on a stack of at most maxExprStack values, with no
// branches, and memory is read only inside the stack copy. An operation it
// does not know ends the walk, as an unknown rule does.

const (
	maxExprOps   = 64
	maxExprStack = 16
)

// evalCFA computes the value of expr from the registers of a frame
// (DWARF register numbers) and the stack copy read gives; false when expr
// is malformed, too long, uses an operation this evaluator does not
// follow, or a register or memory it does not have.
func evalCFA(expr []byte, regs *[dwNum]uint64, valid *[dwNum]bool, read func(uint64) (uint64, bool)) (uint64, bool) {
	var st [maxExprStack]uint64
	n := 0
	push := func(v uint64) bool {
		if n == len(st) {
			return false
		}
		st[n] = v
		n++
		return true
	}
	r := reader{b: expr}
	for ops := 0; r.off < len(r.b); ops++ {
		if ops == maxExprOps {
			return 0, false
		}
		op := r.u8()
		ok := true
		switch {
		case op >= 0x30 && op <= 0x4f: // lit0..lit31
			ok = push(uint64(op - 0x30))
		case op >= 0x70 && op <= 0x8f: // breg0..breg31
			reg, off := op-0x70, r.sleb()
			if reg >= dwNum || !valid[reg] {
				return 0, false
			}
			ok = push(regs[reg] + uint64(off))
		case op == 0x08: // const1u
			ok = push(uint64(r.u8()))
		case op == 0x09: // const1s
			ok = push(uint64(int64(int8(r.u8()))))
		case op == 0x0a: // const2u
			ok = push(uint64(r.u16()))
		case op == 0x0b: // const2s
			ok = push(uint64(int64(int16(r.u16()))))
		case op == 0x0c: // const4u
			ok = push(uint64(r.u32()))
		case op == 0x0d: // const4s
			ok = push(uint64(int64(int32(r.u32()))))
		case op == 0x0e, op == 0x0f: // const8u, const8s
			ok = push(r.u64())
		case op == 0x10: // constu
			ok = push(r.uleb())
		case op == 0x11: // consts
			ok = push(uint64(r.sleb()))
		case op == 0x23: // plus_uconst
			if n == 0 {
				return 0, false
			}
			st[n-1] += r.uleb()
		default:
			n, ok = stackOp(op, &st, n, read)
		}
		if !ok || r.err != nil {
			return 0, false
		}
	}
	if n == 0 {
		return 0, false
	}
	return st[n-1], true
}

// stackOp applies op, an operation without operands, to the n values of
// st; it returns the new depth, false when op is unknown, lacks operands
// or reads outside the stack copy.
func stackOp(op byte, st *[maxExprStack]uint64, n int, read func(uint64) (uint64, bool)) (int, bool) {
	switch op {
	case 0x12: // dup
		if n == 0 || n == len(st) {
			return n, false
		}
		st[n] = st[n-1]
		return n + 1, true
	case 0x13: // drop
		return n - 1, n >= 1
	case 0x14: // over
		if n < 2 || n == len(st) {
			return n, false
		}
		st[n] = st[n-2]
		return n + 1, true
	case 0x16: // swap
		if n < 2 {
			return n, false
		}
		st[n-1], st[n-2] = st[n-2], st[n-1]
		return n, true
	case 0x06: // deref
		if n == 0 {
			return n, false
		}
		v, ok := read(st[n-1])
		st[n-1] = v
		return n, ok
	case 0x1f: // neg
		if n == 0 {
			return n, false
		}
		st[n-1] = -st[n-1]
		return n, true
	}
	if n < 2 {
		return n, false
	}
	a, b := st[n-2], st[n-1] // b was pushed last
	var v uint64
	switch op {
	case 0x1a: // and
		v = a & b
	case 0x1c: // minus
		v = a - b
	case 0x1e: // mul
		v = a * b
	case 0x21: // or
		v = a | b
	case 0x22: // plus
		v = a + b
	case 0x24: // shl
		v = a << b
	case 0x25: // shr
		v = a >> b
	case 0x26: // shra
		v = uint64(int64(a) >> b)
	case 0x27: // xor
		v = a ^ b
	case 0x29, 0x2a, 0x2b, 0x2c, 0x2d, 0x2e: // eq, ge, gt, le, lt, ne: signed
		v = compare(op, int64(a), int64(b))
	default:
		return n, false
	}
	st[n-2] = v
	return n - 1, true
}

// compare applies a DWARF relational operation; 1 when it holds.
func compare(op byte, a, b int64) uint64 {
	var c bool
	switch op {
	case 0x29:
		c = a == b
	case 0x2a:
		c = a >= b
	case 0x2b:
		c = a > b
	case 0x2c:
		c = a <= b
	case 0x2d:
		c = a < b
	case 0x2e:
		c = a != b
	}
	if c {
		return 1
	}
	return 0
}
