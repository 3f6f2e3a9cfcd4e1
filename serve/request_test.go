package serve

import (
	"strings"
	"testing"
)

// profile_toml is a field of the request: a string, decoded as strictly
// as the others.
func TestDecodeProfileTOML(t *testing.T) {
	r, err := decodeRequest([]byte(`{"argv":["true"],"profile_toml":"extends = \"default\"\n"}`))
	if err != nil || r.ProfileTOML != "extends = \"default\"\n" {
		t.Fatalf("decode: %v, %+v", err, r)
	}
	for _, line := range []string{
		`{"argv":["true"],"profile_toml":1}`,
		`{"argv":["true"],"profile_toml":{"extends":"default"}}`,
		`{"argv":["true"],"profile_tom":""}`,
	} {
		if _, err := decodeRequest([]byte(line)); err == nil || !strings.Contains(err.Error(), "profile_tom") {
			t.Errorf("%s: %v, want a refusal naming the field", line, err)
		}
	}
}

// A request that sends its own profile never runs under the served one
// the server would pick: a server that takes none refuses it.
func TestServedSpecRefusesProfileTOML(t *testing.T) {
	s := loaded(t)
	_, err := s.spec(&Request{Argv: []string{"true"}, ProfileTOML: "extends = \"default\"\n"}, nil)
	if err == nil || !strings.Contains(err.Error(), "--allow-client-profiles") {
		t.Errorf("got %v, want the refusal naming --allow-client-profiles", err)
	}
	if _, err := s.spec(&Request{Argv: []string{"true"}}, nil); err != nil {
		t.Errorf("the control, without profile_toml: %v", err)
	}
}
