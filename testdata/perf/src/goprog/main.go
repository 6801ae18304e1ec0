// Command goprog is the Go workload of the perfcheck fixtures: it stays busy
// for a given time in a few named functions, including a method on a type
// (main.(*matrix).multiply), so that Go symbolization (pclntab, DWARF) and
// Go's GNU build-id note can be tested against a real recording.
//
// Usage: goprog [MILLISECONDS]
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

type matrix struct {
	n    int
	cell []float64
}

func newMatrix(n int, seed float64) *matrix {
	m := &matrix{n: n, cell: make([]float64, n*n)}
	for i := range m.cell {
		seed = seed*1.0000001 + 0.5
		m.cell[i] = seed - float64(int(seed))
	}
	return m
}

// multiply is the method the fixtures look for by name.
//
//go:noinline
func (m *matrix) multiply(o, out *matrix) {
	n := m.n
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			var s float64
			for k := 0; k < n; k++ {
				s += m.cell[i*n+k] * o.cell[k*n+j]
			}
			out.cell[i*n+j] = s
		}
	}
}

//go:noinline
func crunchPrimes(limit int) int {
	count := 0
	for x := 2; x < limit; x++ {
		prime := true
		for d := 2; d*d <= x; d++ {
			if x%d == 0 {
				prime = false
				break
			}
		}
		if prime {
			count++
		}
	}
	return count
}

//go:noinline
func hashLoop(seed uint64, n int) uint64 {
	for i := 0; i < n; i++ {
		seed ^= seed >> 31
		seed *= 0x7fb5d329728ea185
		seed ^= seed >> 27
	}
	return seed
}

//go:noinline
func work(a, b, c *matrix) uint64 {
	a.multiply(b, c)
	p := crunchPrimes(20000)
	return hashLoop(uint64(p), 200000)
}

func main() {
	ms := 300
	if len(os.Args) > 1 {
		v, err := strconv.Atoi(os.Args[1])
		if err != nil {
			fmt.Fprintln(os.Stderr, "goprog: bad duration:", err)
			os.Exit(2)
		}
		ms = v
	}
	a, b, c := newMatrix(60, 1), newMatrix(60, 2), newMatrix(60, 0)
	end := time.Now().Add(time.Duration(ms) * time.Millisecond)
	for time.Now().Before(end) {
		sink ^= work(a, b, c)
	}
}

// sink keeps work's result alive. Nothing is printed: in pipe mode (perf
// record -o -) the workload's stdout is the recording.
var sink uint64
