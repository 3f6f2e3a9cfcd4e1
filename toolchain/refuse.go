package toolchain

import (
	"fmt"
	"path"
	"strings"
)

// Credentials are entries that hold secrets in a home directory. A prefix
// that holds one at its top, or where a home has it (a prefix that is
// ~/.config holds gh, one that is ~/.local holds share/keyrings), or that
// lies inside one, is refused: the jail would show it to the command.
var Credentials = []string{
	".ssh", ".aws", ".config/gh", ".netrc", ".docker", ".gnupg",
	".local/share/keyrings", ".password-store", ".kube", ".git-credentials",
	".npmrc", ".pypirc", "credentials.toml", "credentials",
}

// RefusedError is a prefix the jail will not show, and why.
type RefusedError struct {
	Prefix string
	Why    string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("toolchain prefix %s %s", e.Prefix, e.Why)
}

// Refuse says why prefix (absolute, resolved) may not be shown to a jail,
// or nil: the root, a top-level directory, a home directory (homes: the
// caller's and those of the password database) or a directory above one,
// or a directory that holds credentials or lies in a credential directory.
func Refuse(fsys FS, homes []string, prefix string) error {
	if why := refusal(homes, prefix, func(p string) bool { _, err := fsys.Lstat(p); return err == nil }); why != "" {
		return &RefusedError{Prefix: prefix, Why: why}
	}
	return nil
}

// refusal is Refuse's decision; has says whether a host path exists.
func refusal(homes []string, prefix string, has func(string) bool) string {
	const fix = "; name a smaller prefix that holds only the toolchain with --toolchain PATH, or bind what the command needs with --ro"
	if prefix == "/" {
		return "is the host's root directory" + fix
	}
	if path.Dir(prefix) == "/" {
		return "is a top-level directory, shared by other programs and users" + fix
	}
	for _, h := range homes {
		if h == "" || h == "/" {
			continue
		}
		h = path.Clean(h)
		if prefix == h {
			return "is the home directory " + h + ": the jail shows toolchains, never a whole home" + fix
		}
		if strings.HasPrefix(h, prefix+"/") {
			return "holds the home directory " + h + fix
		}
	}
	for _, c := range Credentials {
		if name, ok := inside(prefix, c); ok {
			return fmt.Sprintf("lies in %s, which holds credentials%s", name, fix)
		}
	}
	for _, c := range Credentials {
		if e := credentialIn(prefix, c, has); e != "" {
			return fmt.Sprintf("holds %s, which holds credentials: the jail would show it to the command%s", e, fix)
		}
	}
	return ""
}

// inside says whether prefix lies in a directory named as the credential
// entry c (".ssh", ".config/gh"), and which.
func inside(prefix, c string) (string, bool) {
	if !strings.HasPrefix(c, ".") || c == ".netrc" || c == ".npmrc" || c == ".pypirc" || c == ".git-credentials" {
		return "", false // files, and names that are not directories of secrets only
	}
	i := strings.Index(prefix+"/", "/"+c+"/")
	if i < 0 {
		return "", false
	}
	return prefix[:i+1+len(c)], true
}

// credentialIn is the path of credential entry c inside prefix, at its top
// or where a home directory has it, or "".
func credentialIn(prefix, c string, has func(string) bool) string {
	parts := strings.Split(c, "/")
	for i := range parts {
		// prefix ends with parts[:i]: look for parts[i:] in it.
		if i > 0 && !strings.HasSuffix(prefix, "/"+strings.Join(parts[:i], "/")) {
			continue
		}
		p := path.Join(prefix, strings.Join(parts[i:], "/"))
		if has(p) {
			return p
		}
	}
	return ""
}
