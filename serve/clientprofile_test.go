package serve

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tooljail/tooljail/jail"
	"github.com/tooljail/tooljail/profiles"
)

// loaded is a Server with its profiles loaded, not serving: what
// clientSpec needs.
func loaded(t *testing.T, names ...string) *Server {
	t.Helper()
	s := &Server{Profiles: names}
	if err := s.Load(); err != nil {
		t.Fatal(err)
	}
	return s
}

// The decisions on a profile_toml, before any run: who may send one, what
// it may extend, and how its errors read.
func TestClientProfileDecisions(t *testing.T) {
	dir := t.TempDir()
	served := filepath.Join(dir, "served.toml")
	if err := os.WriteFile(served, []byte("extends = \"strict\"\n[env]\nset = { SERVED = \"yes\" }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A file next to the served one, which no text may reach.
	if err := os.WriteFile(filepath.Join(dir, "other.toml"), []byte("extends = \"default\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rooted := filepath.Join(dir, "rooted.toml")
	if err := os.WriteFile(rooted, []byte("extends = \"default\"\n[filesystem]\nroot = \"/srv/rootfs\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := loaded(t, "default", served, rooted)
	argv := []string{"/bin/true"}
	for _, c := range []struct {
		name    string
		allow   bool
		req     Request
		want    string // a fragment of the refusal; "" for accepted
		memory  string // the accepted profile's limits.memory
		envSeen string // the accepted profile's env.set SERVED
	}{
		{"refused without the flag", false, Request{Argv: argv, ProfileTOML: "extends = \"default\"\n"}, "start the server with --allow-client-profiles", "", ""},
		{"with a profile too", true, Request{Argv: argv, Profile: "default", ProfileTOML: "extends = \"default\"\n"}, `profile "default" and profile_toml: a request names a served profile or sends its own, not both`, "", ""},
		{"both, without the flag", false, Request{Argv: argv, Profile: "default", ProfileTOML: "extends = \"default\"\n"}, "not both", "", ""},
		{"extends a shipped profile", true, Request{Argv: argv, ProfileTOML: "extends = \"strict\"\n[limits]\nmemory = \"100M\"\n"}, "", "100M", ""},
		{"extends a served file by its served name", true, Request{Argv: argv, ProfileTOML: "extends = \"" + served + "\"\n"}, "", "256M", "yes"},
		{"may loosen its base", true, Request{Argv: argv, ProfileTOML: "extends = \"strict\"\n[limits]\nmemory = \"1G\"\n"}, "", "1G", ""},
		{"extends a file", true, Request{Argv: argv, ProfileTOML: "extends = \"" + filepath.Join(dir, "other.toml") + "\"\n"}, "profile_toml:1:1: extends: ", "", ""},
		{"extends a relative file", true, Request{Argv: argv, ProfileTOML: "extends = \"./other.toml\"\n"}, `"./other.toml" is a file: a profile given as text can only extend a shipped profile (build, default, fetch, go, network, node, python, readonly, strict) or one of ` + rooted + ", " + served + ", default", "", ""},
		{"extends nothing", true, Request{Argv: argv, ProfileTOML: "[limits]\nmemory = \"100M\"\n"}, "profile_toml: extends: missing", "", ""},
		{"unknown key", true, Request{Argv: argv, ProfileTOML: "extends = \"default\"\n\n[limits]\nmemroy = \"1G\"\n"}, "profile_toml:4:1: limits.memroy: unknown key (did you mean limits.memory?)", "", ""},
		{"too large", true, Request{Argv: argv, ProfileTOML: "extends = \"default\"\n" + strings.Repeat("#", profiles.MaxSize) + "\n"}, "profile_toml: larger than 1 MiB", "", ""},
		{"sets a root directory", true, Request{Argv: argv, ProfileTOML: "extends = \"default\"\n[filesystem]\nroot = \"/\"\n"}, "profile_toml:3:1: filesystem.root: a client's profile cannot choose the jail's root directory", "", ""},
		{"sets an empty root directory", true, Request{Argv: argv, ProfileTOML: "extends = \"default\"\n[filesystem]\nroot = \"\"\n"}, "filesystem.root: a client's profile cannot choose", "", ""},
		{"extends a served root directory", true, Request{Argv: argv, ProfileTOML: "extends = \"" + rooted + "\"\n"}, "", "1G", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := clientProfile(&c.req, c.allow, s.profiles)
			if c.want != "" {
				var e *Error
				if !errors.As(err, &e) || e.Code != jail.ExitSetup || !strings.Contains(e.Message, c.want) || strings.Contains(e.Message, "\n") {
					t.Fatalf("got %v, want one line, code 125, with %q", err, c.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Name != "profile_toml" || p.Limits["memory"] != c.memory || p.Env.Set["SERVED"] != c.envSeen {
				t.Errorf("profile %s: memory %s, SERVED %q; want memory %s, SERVED %q", p.Name, p.Limits["memory"], p.Env.Set["SERVED"], c.memory, c.envSeen)
			}
		})
	}
	if s.profiles["default"].Limits["memory"] != "1G" || s.profiles[served].Limits["memory"] != "256M" {
		t.Errorf("a client profile changed a served one: %v, %v", s.profiles["default"].Limits, s.profiles[served].Limits)
	}
}

// A client's profile obeys what a served one does: the request's limits
// only tighten it, its network is "none" or its own mode; and the Spec
// names it.
func TestClientProfileRequestRules(t *testing.T) {
	s := loaded(t)
	s.AllowClientProfiles = true
	const mine = "extends = \"default\"\n[limits]\nmemory = \"100M\"\npids = 17\n[limits.max]\nmemory = \"150M\"\n[network]\nmode = \"host\"\n[env]\nset = { MINE = \"1\" }\n"
	for _, c := range []struct {
		name    string
		limits  map[string]string
		network string
		want    string
	}{
		{"its own limits", nil, "", ""},
		{"tighter", map[string]string{"memory": "50M", "pids": "5"}, "", ""},
		{"above the client's own ceiling", map[string]string{"memory": "200M"}, "", "limits.memory: 200M is above the ceiling of profile profile_toml"},
		{"network none", nil, "none", ""},
		{"its own network", nil, "host", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec, err := s.spec(&Request{Argv: []string{"/bin/true"}, ProfileTOML: mine, Limits: c.limits, Network: c.network}, nil)
			if c.want != "" {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("got %v, want %q", err, c.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			wantMem, wantPids := int64(100<<20), int64(17)
			if c.limits != nil {
				wantMem, wantPids = 50<<20, 5
			}
			wantNet := jail.NetHost
			if c.network == "none" {
				wantNet = jail.NetNone
			}
			if spec.Profile != "profile_toml" || spec.Limits.Memory != wantMem || spec.Limits.Pids != wantPids || spec.Net != wantNet || !hasEnv(spec.Env, "MINE=1") {
				t.Errorf("spec: profile %q memory %d pids %d net %s env %v", spec.Profile, spec.Limits.Memory, spec.Limits.Pids, spec.Net, spec.Env)
			}
		})
	}
	// A request may ask a served profile for another network mode, as
	// --net may of the same profile.
	if spec, err := s.spec(&Request{Argv: []string{"/bin/true"}, Network: "host"}, nil); err != nil || spec.Net != jail.NetHost {
		t.Errorf("the served default with network host: %v", err)
	}
}

func hasEnv(env []string, kv string) bool {
	for _, e := range env {
		if e == kv {
			return true
		}
	}
	return false
}

// No bind of a client's profile may show the server's socket or audit
// log: its Spec meets the same check as a served profile's.
func TestClientProfileCannotShowSocket(t *testing.T) {
	s := loaded(t)
	s.AllowClientProfiles = true
	dir := t.TempDir()
	sockDir := filepath.Join(dir, "run")
	if err := os.Mkdir(sockDir, 0o700); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(sockDir, "sock")
	audit := filepath.Join(dir, "audit.log")
	for _, f := range []string{sock, audit} {
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	h := hiddenSet{}
	if err := h.add(sock, "socket"); err != nil {
		t.Fatal(err)
	}
	if err := h.add(audit, "audit log"); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	for _, c := range []struct {
		name, filesystem string
		want             string
	}{
		{"ro the socket's directory", `ro = ["` + sockDir + `"]`, "the bind of " + sockDir + " would show the server's socket " + sock},
		{"ro under another name", `ro = ["` + sockDir + `/../run:/x"]`, "would show the server's socket"},
		{"rw above both", `rw = ["` + dir + `"]`, "the read-write bind of " + dir + " would show the server's"},
		{"the host's root", `ro = ["/:/host"]`, "the bind of / would show the server's"},
		{"ro the audit log itself", `ro = ["` + audit + `"]`, "would show the server's audit log"},
		{"an unrelated directory", `ro = ["` + other + `"]`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			text := "extends = \"default\"\n[filesystem]\n" + c.filesystem + "\n"
			spec, err := s.spec(&Request{Argv: []string{"/bin/true"}, ProfileTOML: text}, nil)
			if err != nil {
				t.Fatalf("the profile itself was refused: %v", err)
			}
			err = h.check(spec)
			if c.want == "" {
				if err != nil {
					t.Errorf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want %q", err, c.want)
			}
		})
	}
}

// A server without --allow-client-profiles refuses a profile_toml over
// the wire, naming the flag, and runs nothing: the request is not run
// under a served profile instead.
func TestClientProfileRefusedByServer(t *testing.T) {
	ts := start(t)
	mark := "client-profile-" + filepath.Base(t.TempDir())
	_, err := ts.client().Run(context.Background(), Request{Argv: []string{"/bin/echo", mark}, ProfileTOML: "extends = \"default\"\n"})
	var e *Error
	if !errors.As(err, &e) || e.Code != 125 || !strings.Contains(e.Message, "--allow-client-profiles") {
		t.Fatalf("got %v, want a refusal naming --allow-client-profiles", err)
	}
	if b, _ := os.ReadFile(ts.audit); strings.Contains(string(b), mark) {
		t.Errorf("the refused request ran: %s", b)
	}
	// Audited under the client's profile's name, not a served one.
	if refused := ts.refusedLines(t); len(refused) != 1 || refused[0]["profile"] != ClientProfileName {
		t.Errorf("refused audit lines %v, want one with profile %q", refused, ClientProfileName)
	}
}

// Over the wire, with AllowClientProfiles: the client's profile is the
// one the run gets (its env, its limits, its name in the report), and a
// bind of it that shows the socket's directory is refused before any run.
func TestClientProfileServed(t *testing.T) {
	ts := startWith(t, func(s *Server) { s.AllowClientProfiles = true })
	base := ts.Profiles[0] // the served default, as the server serves it
	c := ts.client()
	mine := "extends = \"" + base + "\"\n[limits]\npids = 17\nnofile = 77\n[env]\nset = { CLIENT_PROFILE = \"mine\" }\n"
	r := run(t, c, Request{Argv: []string{"/bin/sh", "-c", "echo $CLIENT_PROFILE; ulimit -n"}, ProfileTOML: mine})
	if r.ExitCode != 0 || text(r.Stdout) != "mine\n77\n" || r.Profile != "profile_toml" || r.Limits.Pids != 17 {
		t.Errorf("exit %d, stdout %q, profile %q, pids %d; want 0, \"mine\\n77\\n\", profile_toml, 17", r.ExitCode, text(r.Stdout), r.Profile, r.Limits.Pids)
	}
	sockDir := filepath.Dir(ts.path)
	mark := "client-profile-" + filepath.Base(t.TempDir())
	_, err := c.Run(context.Background(), Request{Argv: []string{"/bin/echo", mark}, ProfileTOML: "extends = \"" + base + "\"\n[filesystem]\nro = [\"" + sockDir + ":/srv/s\"]\n"})
	var e *Error
	if !errors.As(err, &e) || e.Code != 125 || !strings.Contains(e.Message, "the bind of "+sockDir+" would show the server's") {
		t.Errorf("a client profile binding %s: %v, want the refusal", sockDir, err)
	}
	for _, a := range ts.auditLines(t) {
		if cmd, _ := a["command"].([]any); len(cmd) == 2 && cmd[1] == mark {
			t.Errorf("the refused request ran: %v", a)
		}
	}
}
