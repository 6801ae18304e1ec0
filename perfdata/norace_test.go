//go:build !race

package perfdata

const raceEnabled = false
