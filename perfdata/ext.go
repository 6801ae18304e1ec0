package perfdata

// BuildIDRecord is PERF_RECORD_HEADER_BUILD_ID (67): a build-id table entry
// sent as a record (pipe mode, perf inject -b). Reading it adds the entry to
// the recording's Features.
type BuildIDRecord struct {
	RecordHeader
	Entry BuildIDEntry
}

// parserExt holds the reusable structs of record types decoded with types
// from other files of the package.
type parserExt struct {
	buildID BuildIDRecord
	spChain SimpleperfCallchain
}

// decodeExt decodes user record types whose decoding lives elsewhere in the
// package; ok is false for types it does not know.
func (p *parser) decodeExt(d *decoder, h RecordHeader, rec *rawRecord) (Record, bool) {
	switch rec.typ {
	case RecordHeaderBuildID:
		x := &p.ext.buildID
		*x = BuildIDRecord{RecordHeader: h}
		bd := newDecoder(rec.data, rec.off, d.order, d.what)
		x.Entry = decodeBuildIDEvent(&bd)
		if bd.err != nil {
			d.err = bd.err
		}
		return x, true
	case RecordSimpleperfCallchain:
		return p.decodeSimpleperfCallchain(d, h), true
	}
	return nil, false
}
