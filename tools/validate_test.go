package tools

import "testing"

func TestBeneathDir(t *testing.T) {
	for _, c := range []struct {
		in, clean string
		refused   bool
	}{
		{".", ".", false},
		{"src/../lib/", "lib", false},
		{"/var/data/", "/var/data", false},
		{"/../etc", "/etc", false}, // absolute: cleaned, never above /
		{"", "", true},
		{"a\x00b", "", true},
		{"..", "", true},
		{"../up", "", true},
		{"a/../../up", "", true},
		{"..dots", "..dots", false}, // a name, not a step up
	} {
		clean, msg := beneathDir(c.in)
		if clean != c.clean || (msg != "") != c.refused {
			t.Errorf("beneathDir(%q) = %q, %q; want %q, refused %v", c.in, clean, msg, c.clean, c.refused)
		}
	}
}

func TestRequiredRule(t *testing.T) {
	yes, no := true, false
	for _, c := range []struct {
		name       string
		hasDefault bool
		required   *bool
		req        bool
		key        string
	}{
		{"no default, required unset: required", false, nil, true, ""},
		{"no default, required", false, &yes, true, ""},
		{"no default, not required: cannot be left out", false, &no, false, "required"},
		{"default, required unset: optional", true, nil, false, ""},
		{"default, not required", true, &no, false, ""},
		{"default and required: contradiction", true, &yes, true, "default"},
	} {
		req, key, msg := requiredRule(c.hasDefault, c.required)
		if req != c.req || key != c.key || (msg != "") != (c.key != "") {
			t.Errorf("%s: requiredRule = %v, %q, %q; want %v, %q", c.name, req, key, msg, c.req, c.key)
		}
	}
}
