package check

import "strconv"

// Verdict is what perfcheck concluded about one DSO: whether the binary it
// would symbolize with is the one that ran. docs/verdicts.md gives the
// model and every rule.
type Verdict uint8

// Verdicts. The first five judge a file (docs/verdicts.md); NoFile labels
// mappings that have no file and hence no identity (anonymous memory,
// [heap], [stack], [vsyscall], addresses no mapping covers, guest code):
// nothing can be verified there and nothing is named, so they neither gain
// nor lose trust.
const (
	Verified   Verdict = iota + 1 // a build-id was recorded and a binary with it was found
	Mismatch                      // a build-id was recorded; the file at the path has another; no match anywhere
	Missing                       // no file at the path and none found by build-id
	Unverified                    // no build-id recorded (or the binary has none); no evidence it changed
	Replaced                      // no build-id recorded; evidence it changed
	NoFile                        // no file behind the mapping: nothing to verify, nothing named
)

var verdictNames = [...]string{"", "verified", "mismatch", "missing", "unverified", "replaced", "no-file"}

func (v Verdict) String() string {
	if int(v) < len(verdictNames) && v != 0 {
		return verdictNames[v]
	}
	return "verdict(" + strconv.Itoa(int(v)) + ")"
}

// MarshalText makes a Verdict a JSON string.
func (v Verdict) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// UnmarshalText parses a verdict name.
func (v *Verdict) UnmarshalText(b []byte) error {
	for i, n := range verdictNames {
		if i > 0 && n == string(b) {
			*v = Verdict(i)
			return nil
		}
	}
	return &strconv.NumError{Func: "UnmarshalText", Num: string(b), Err: strconv.ErrSyntax}
}

// Trusted reports whether frames in a DSO with this verdict keep a sample
// trusted: verified, unverified (without evidence of change) and no-file.
func (v Verdict) Trusted() bool { return v == Verified || v == Unverified || v == NoFile }

// Problem reports whether the verdict makes `perfcheck check` fail:
// mismatch, missing and replaced (and, with strict, unverified).
func (v Verdict) Problem(strict bool) bool {
	return v == Mismatch || v == Missing || v == Replaced || strict && v == Unverified
}
