//go:build race

package main

// raceEnabled: the hostile-input tests do not hold a race-instrumented
// child to the memory bound, which the detector's shadow memory exceeds.
const raceEnabled = true
