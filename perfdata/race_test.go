//go:build race

package perfdata

// raceEnabled makes the byte-by-byte truncation tests sample cut points:
// the race detector slows decoding tenfold.
const raceEnabled = true
