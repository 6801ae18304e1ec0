package symbolize

// Helpers of tests that look into a decoded DWARF index.

// keepWhole fills every dropped byte again and stops dropping: tests
// compare an index that drops with one that keeps its sections whole.
func (x *dwarfIndex) keepWhole() {
	sd := x.drop
	for _, r := range []*region{sd.info, sd.line, sd.rng} {
		if r != nil {
			if err := r.refill(0, len(r.data)); err != nil {
				panic(err)
			}
			r.early = nil
		}
	}
	for i := range sd.infoSpans {
		sd.infoSpans[i].gone = false
	}
	for i := range sd.lineSpans {
		sd.lineSpans[i].gone = false
	}
	sd.rngGone = nil
	sd.disabled = true
}

// fileNames returns the unit's file table as names.
func (ui *unitInfo) fileNames() []string {
	var out []string
	for i := range ui.files {
		out = append(out, ui.file(uint32(i)))
	}
	return out
}
