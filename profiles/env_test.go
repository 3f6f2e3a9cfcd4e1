package profiles

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tooljail/tooljail/jail"
)

func TestCallerVarDrop(t *testing.T) {
	deny := mustLoad(t, "default").Env.Deny
	if deny == nil || len(*deny) == 0 {
		t.Fatal("default profile has no env.deny")
	}
	for _, tc := range []struct {
		name string
		pass []string
		want string
	}{
		{"HOME", nil, DropJail},
		{"TMPDIR", nil, DropJail},
		{"USER", nil, DropJail},
		{"LOGNAME", nil, DropJail},
		{"SHELL", nil, DropJail},
		{"PWD", nil, DropJail},
		{"OLDPWD", nil, DropJail},
		{"HOME", []string{"HOME"}, DropJail}, // pass cannot give the jail's own
		{"FAKE_API_KEY", nil, DropCredential},
		{"STRIPE_KEY", nil, DropCredential},
		{"MY_TOKEN", nil, DropCredential},
		{"DB_SECRET", nil, DropCredential},
		{"XSECRETY", nil, DropCredential},
		{"PGPASSWORD", nil, DropCredential},
		{"LDAP_PASSWD_FILE", nil, DropCredential},
		{"MY_CREDENTIALS", nil, DropCredential},
		{"aws_secret_access_key", nil, DropCredential}, // case-insensitive
		{"AWS_REGION", nil, DropCredential},
		{"AZURE_CLIENT_ID", nil, DropCredential},
		{"GOOGLE_APPLICATION_CREDENTIALS", nil, DropCredential},
		{"GITHUB_TOKEN", nil, DropCredential},
		{"GH_TOKEN", nil, DropCredential},
		{"OPENAI_BASE_URL", nil, DropCredential},
		{"Anthropic_Api_Key", nil, DropCredential},
		{"HF_TOKEN", nil, DropCredential},
		{"SSH_AUTH_SOCK", nil, DropCredential},
		{"GPG_AGENT_INFO", nil, DropCredential},
		{"KUBECONFIG", nil, DropCredential},
		{"DOCKER_HOST", nil, DropCredential},
		{"MY_API_URL", nil, DropCredential},
		{"OPENAI_API_KEY", []string{"OPENAI_API_KEY"}, ""},             // the profile passes it
		{"OPENAI_API_KEY", []string{"openai_api_key"}, DropCredential}, // pass is exact
		{"X", nil, ""},
		{"LANG", nil, ""},
		{"KEYBOARD", nil, ""},
		{"TOKENIZERS_PARALLELISM", nil, ""},
		{"PATH", nil, ""},
	} {
		if got := callerVarDrop(tc.name, tc.pass, *deny); got != tc.want {
			t.Errorf("callerVarDrop(%q, pass %v) = %q, want %q", tc.name, tc.pass, got, tc.want)
		}
	}
}

func TestGlobFold(t *testing.T) {
	for _, tc := range []struct {
		pat, name string
		want      bool
	}{
		{"*_KEY", "A_KEY", true},
		{"*_KEY", "_KEY", true},
		{"*_KEY", "A_KEYS", false},
		{"*SECRET*", "secret", true},
		{"AWS_*", "aws_", true},
		{"AWS_*", "XAWS_A", false},
		{"A*B*C", "AxxBxxC", true},
		{"A*B*C", "ACB", false},
		{"A*B*C", "ABC", true},
		{"*_API_*", "X_API_Y", true},
		{"*_API_*", "X_APIY", false},
		{"HF_TOKEN", "hf_token", true},
		{"HF_TOKEN", "HF_TOKENS", false},
		{"[A]", "A", false}, // no character classes
		{"**", "", true},
	} {
		if got := globFold(tc.pat, tc.name); got != tc.want {
			t.Errorf("globFold(%q, %q) = %v, want %v", tc.pat, tc.name, got, tc.want)
		}
	}
}

func TestCallerPath(t *testing.T) {
	mounts := []jail.Mount{
		{Kind: jail.MountBind, Source: "/usr", Dest: "/usr"},
		{Kind: jail.MountBind, Source: "/srv/proj", Dest: "/srv/proj", Writable: true},
		{Kind: jail.MountTmpfs, Dest: "/home/sandbox"},
		{Kind: jail.MountMask, Dest: "/usr/local/secret"},
	}
	shown := shownBy(mounts)
	for _, tc := range []struct{ jail, caller, want string }{
		{"/usr/bin:/bin", "/usr/local/go/bin:/root/go/bin:/usr/bin", "/usr/bin:/bin:/usr/local/go/bin"},
		{"/usr/bin", "", "/usr/bin"},
		{"/usr/bin", "::.:bin:/usr/sbin", "/usr/bin:/usr/sbin"}, // empty and relative entries name the caller's directory
		{"/usr/bin", "/usr/sbin/:/usr/sbin", "/usr/bin:/usr/sbin"},
		{"/usr/bin", "/usr/local/secret/bin:/usr/local/secret", "/usr/bin"},
		{"/usr/bin", "/srv/proj/.venv/bin:/srv/other/bin", "/usr/bin:/srv/proj/.venv/bin"},
		{"/usr/bin", "/home/sandbox:/home/sandbox/bin:/home/user/bin", "/usr/bin:/home/sandbox"},
		{"/usr/bin", "/usrx/bin:/", "/usr/bin"},
		{"", "/usr/bin", "/usr/bin"},
	} {
		if got := callerPath(tc.jail, tc.caller, shown); got != tc.want {
			t.Errorf("callerPath(%q, %q) = %q, want %q", tc.jail, tc.caller, got, tc.want)
		}
	}
}

func TestEnvironmentCallerVars(t *testing.T) {
	deny := []string{"*_KEY", "*TOKEN*"}
	e := Env{
		Set:  map[string]string{"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
		Pass: []string{"PASSED_KEY", "TERM"},
		Deny: &deny,
	}
	environ := []string{"PASSED_KEY=p", "TERM=xterm", "OTHER=o"}
	vars := []string{"HOME=/root", "PWD=/root", "X=1", "FAKE_API_KEY=sk-1", "my_token=t",
		"PASSED_KEY=from-caller", "LANG=de", "PATH=/usr/local/bin:/opt/x", "X=2"}
	mounts := []jail.Mount{{Kind: jail.MountBind, Source: "/usr", Dest: "/usr"}}
	env, dropped := environment(e, environ, vars, mounts)
	want := []string{"HOME=" + JailHome, "LANG=de", "PASSED_KEY=from-caller",
		"PATH=/usr/bin:/bin:/usr/local/bin", "TERM=xterm", "X=2"}
	if !reflect.DeepEqual(env, want) {
		t.Errorf("env %v, want %v", env, want)
	}
	wantDropped := []jail.EnvDrop{{Name: "FAKE_API_KEY", Reason: DropCredential}, {Name: "HOME", Reason: DropJail},
		{Name: "PWD", Reason: DropJail}, {Name: "my_token", Reason: DropCredential}}
	if !reflect.DeepEqual(dropped, wantDropped) {
		t.Errorf("dropped %v, want %v", dropped, wantDropped)
	}
	for _, kv := range env {
		if strings.Contains(kv, "sk-1") || strings.HasPrefix(strings.ToUpper(kv), "MY_TOKEN=") {
			t.Errorf("secret in env: %s", kv)
		}
	}
	// deny = [] lifts the list; the jail's own names stay dropped.
	e.Deny = &[]string{}
	env, dropped = environment(e, nil, []string{"FAKE_API_KEY=sk-1", "SHELL=/bin/zsh"}, mounts)
	if !slices.Contains(env, "FAKE_API_KEY=sk-1") || len(dropped) != 1 || dropped[0].Name != "SHELL" {
		t.Errorf("deny = []: env %v, dropped %v", env, dropped)
	}
}

func TestCallerVars(t *testing.T) {
	environ := []string{"A=1", "B=x=y", "A=2", "E="}
	got := CallerVars([]string{"A", "B", "C", "D=4", "E", "F="}, environ)
	want := []string{"A=2", "B=x=y", "D=4", "E=", "F="}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("CallerVars = %v, want %v", got, want)
	}
	for _, bad := range []string{"", "=x", "A\x00=1", "A=\x00"} {
		if CheckVarFlag(bad) == nil {
			t.Errorf("CheckVarFlag(%q) accepted", bad)
		}
	}
	for _, ok := range []string{"A", "A=", "HOME=/x", "A=b=c"} {
		if err := CheckVarFlag(ok); err != nil {
			t.Errorf("CheckVarFlag(%q): %v", ok, err)
		}
	}
}
