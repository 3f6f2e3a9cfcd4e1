package serve

import "strings"

// A call takes a warm jail of its shape (package serve/internal/warmpool)
// when the server keeps them (Server.Warm).

// poolKeyOf is the key of a call, or "" when it runs cold: a call with
// limits or a profile of its own makes a jail of its own shape.
func poolKeyOf(r *Request, profile string) string {
	if r.ProfileTOML != "" || len(r.Limits) > 0 {
		return ""
	}
	return strings.Join([]string{profile, r.Workdir, r.Network}, "\x00")
}
