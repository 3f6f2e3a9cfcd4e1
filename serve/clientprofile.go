package serve

import "github.com/tooljail/tooljail/profiles"

// A request may bring a profile of the client's own, the text of a
// profile file in profile_toml, when the server was started with
// --allow-client-profiles (Server.AllowClientProfiles). The text is
// parsed as a file is loaded (profiles.Bases.Parse: strict, file:line
// errors, at most profiles.MaxSize) but reads nothing of the host: it
// must extend a shipped profile or one the server serves, by the name it
// serves it under, never a file. From there it is a profile like a served
// one: the request's limits may only tighten it, its network may only be
// "none" or the profile's own mode, and no bind of it may show the
// server's socket or audit log (the server checks the Spec, hidden.go).
//
// What the text sets is the client's to set, looser than its base or
// not, as in a file given to `tooljail run`: only the server's user, and
// root, can connect, and they could run that file themselves. The flag is
// the server's owner's consent that the server runs such profiles for
// them; without it a server runs only what it serves.
//
// One key is refused: filesystem.root, the directory the jail's system
// directories come from. A client that wants one extends a served
// profile that sets it.

// ClientProfileName names a client's profile in the report and in the
// errors about its text ("profile_toml:3:1: limits.memory: ..."), which
// a client may show under the name of the file it sent.
const ClientProfileName = "profile_toml"

// clientProfile decides on the profile a request sends as text: allow is
// the server's --allow-client-profiles, served its profiles by the names
// they are served under. served is not changed. The Spec built from it is
// checked as any other (hidden.check) before it runs.
func clientProfile(r *Request, allow bool, served map[string]*profiles.Profile) (*profiles.Profile, error) {
	if r.Profile != "" {
		return nil, refuse("profile %q and profile_toml: a request names a served profile or sends its own, not both; drop one", r.Profile)
	}
	if !allow {
		return nil, refuse("profile_toml: this server takes no profile from its clients, only those it serves; ask for one of those, or start the server with --allow-client-profiles")
	}
	p, err := profiles.Bases(served).Parse(ClientProfileName, []byte(r.ProfileTOML))
	if err != nil {
		return nil, refuse("%v", err)
	}
	if err := profiles.RefuseRoot(ClientProfileName, []byte(r.ProfileTOML)); err != nil {
		p.Close()
		return nil, refuse("%v", err)
	}
	return p, nil
}
