//go:build race

package symbolize

// raceEnabled shrinks the samples of the slowest differential tests: under
// the race detector, decoding hundreds of glibc compilation units takes
// minutes, and the race detector looks for races, not wrong answers (the
// plain run compares the full samples).
const raceEnabled = true
