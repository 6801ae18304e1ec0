package main

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

// docField is one row of a field table in docs/check-json.md.
type docField struct {
	typ      string
	optional bool
}

var docRow = regexp.MustCompile("^\\| `([a-z_]+)` \\| ([^|]+) \\| (.*)\\|\\s*$")

// docTables reads the field tables of docs/check-json.md, by section title
// ("Top level", "DSO", "Advice").
func docTables(t *testing.T) map[string]map[string]docField {
	t.Helper()
	b, err := os.ReadFile("../../docs/check-json.md")
	if err != nil {
		t.Fatal(err)
	}
	tables := map[string]map[string]docField{}
	section := ""
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "## ") {
			section = strings.TrimPrefix(l, "## ")
			continue
		}
		if m := docRow.FindStringSubmatch(l); m != nil {
			if tables[section] == nil {
				tables[section] = map[string]docField{}
			}
			tables[section][m[1]] = docField{strings.TrimSpace(m[2]), strings.Contains(m[3], "*optional*")}
		}
	}
	for _, s := range []string{"Top level", "DSO", "Advice"} {
		if len(tables[s]) < 2 {
			t.Fatalf("docs/check-json.md: no field table under %q", s)
		}
	}
	return tables
}

// jsonType names v's JSON type as the docs do.
func jsonType(v any) string {
	switch x := v.(type) {
	case string:
		return "string"
	case bool:
		return "boolean"
	case float64:
		if x == float64(int64(x)) {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "null"
}

// matchesDocType reports whether a JSON type is the documented one
// ("string (RFC 3339, UTC)" is a string, "[DSO]" an array).
func matchesDocType(doc, got string) bool {
	switch {
	case strings.HasPrefix(doc, "["):
		return got == "array"
	case strings.HasPrefix(doc, "string"):
		return got == "string"
	}
	return doc == got
}

// compareWithDocs checks one JSON object against a documented table: every
// field it has is documented with its type, and every field the docs do
// not mark optional is there.
func compareWithDocs(t *testing.T, what string, obj map[string]any, table map[string]docField) {
	t.Helper()
	for k, v := range obj {
		f, ok := table[k]
		if !ok {
			t.Errorf("%s: field %q is not in docs/check-json.md", what, k)
			continue
		}
		if got := jsonType(v); !matchesDocType(f.typ, got) {
			t.Errorf("%s: field %q is a JSON %s, documented as %s", what, k, got, f.typ)
		}
	}
	for k, f := range table {
		if _, ok := obj[k]; !ok && !f.optional {
			t.Errorf("%s: documented field %q (not optional) is missing", what, k)
		}
	}
}

// check --json prints what docs/check-json.md documents: on the committed
// recording (a verified program and library, an unverified libc, and a
// kernel that is not this host's: a mismatch with advice), every field is
// documented with its JSON type, and every field the docs do not call
// optional is present, at the top level, in each DSO and in each advice.
func TestCheckJSONMatchesDocs(t *testing.T) {
	t.Parallel()
	tables := docTables(t)
	data := ckFixture(t, "cshared-fp.data")
	out, errOut, code := ckRun(t, append(append([]string{"check", "--json", "--symfs", ckSymfs(t)}, ckHermetic(t)...), data)...)
	if code == exitError {
		t.Fatalf("exit 2: %s", errOut)
	}
	var top map[string]any
	if err := json.Unmarshal([]byte(out), &top); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	compareWithDocs(t, "report", top, tables["Top level"])
	dsos, _ := top["dsos"].([]any)
	advice, _ := top["advice"].([]any)
	if len(dsos) < 3 || len(advice) == 0 {
		t.Fatalf("the recording gives %d DSOs and %d advice: too little to compare\n%s", len(dsos), len(advice), out)
	}
	for _, d := range dsos {
		obj, _ := d.(map[string]any)
		compareWithDocs(t, "dso "+jsonString(obj["path"]), obj, tables["DSO"])
	}
	for i, a := range advice {
		obj, _ := a.(map[string]any)
		compareWithDocs(t, "advice "+strings.Repeat("#", i+1), obj, tables["Advice"])
	}
}

func jsonString(v any) string { s, _ := v.(string); return s }
