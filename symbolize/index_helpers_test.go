package symbolize

// Helpers of tests that look into a decoded DWARF index.

// fileNames returns the unit's file table as names.
func (ui *unitInfo) fileNames() []string {
	var out []string
	for i := range ui.files {
		out = append(out, ui.file(uint32(i)))
	}
	return out
}

// namedRow is a line row with its file's name.
type namedRow struct {
	addr      uint64
	file      string
	line, col uint32
	end       bool
}

// namedRows returns the unit's line rows with their files' names.
func (ui *unitInfo) namedRows() []namedRow {
	var out []namedRow
	for _, r := range ui.lines.all() {
		nr := namedRow{addr: r.addr, line: r.line, col: r.col, end: r.end()}
		if !nr.end {
			nr.file = ui.file(r.file)
		}
		out = append(out, nr)
	}
	return out
}
