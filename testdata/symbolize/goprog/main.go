// Command goprog is a small Go program for the symbolize differential
// tests: methods on pointer receivers, generics, closures and inlining.
package main

import (
	"fmt"
	"os"
	"sort"
	"strings"
)

type T struct{ vals []int }

//go:noinline
func (t *T) Method(k int) int {
	s := 0
	for _, v := range t.vals {
		s += square(v) * k
	}
	return s
}

func square(v int) int { return v * v }

func Sum[E int | float64](xs []E) E {
	var s E
	for _, x := range xs {
		s += x
	}
	return s
}

func words(s string) map[string]int {
	m := map[string]int{}
	for _, w := range strings.Fields(s) {
		m[w]++
	}
	return m
}

func main() {
	t := &T{}
	for i := range len(os.Args) + 10 {
		t.vals = append(t.vals, i)
	}
	sort.Slice(t.vals, func(i, j int) bool { return t.vals[i] > t.vals[j] })
	fmt.Println(t.Method(3), Sum(t.vals), Sum([]float64{1, 2}), len(words("a b a")))
}
