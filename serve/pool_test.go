package serve

import (
	"testing"
)

func TestPoolKeyOf(t *testing.T) {
	for _, c := range []struct {
		name string
		r    Request
		cold bool
	}{
		{"profile and workdir", Request{Workdir: "/w"}, false},
		{"its own limits", Request{Workdir: "/w", Limits: map[string]string{"timeout": "1s"}}, true},
		{"its own profile", Request{ProfileTOML: "extends = \"default\""}, true},
	} {
		if got := poolKeyOf(&c.r, "default"); (got == "") != c.cold {
			t.Errorf("%s: key %q, want cold %v", c.name, got, c.cold)
		}
	}
	a, b := Request{Workdir: "/w"}, Request{Workdir: "/x"}
	if poolKeyOf(&a, "default") == poolKeyOf(&b, "default") || poolKeyOf(&a, "default") == poolKeyOf(&a, "network") {
		t.Errorf("two shapes share a key")
	}
}
