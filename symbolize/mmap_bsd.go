//go:build unix && !linux

package symbolize

// mapPopulate: other systems fault pages in as they are written.
const mapPopulate = 0
