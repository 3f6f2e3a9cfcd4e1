package changes

import "strings"

// IsProtected says whether rel (a path relative to a bind's root) is one
// of the protected names (the profile's filesystem.protect: ".git/hooks",
// ".bashrc", ...) or below one, where the jail protects them: at the
// bind's root or below one or two directories (the repositories
// jail/protect.go looks for); names under ".git/" and ".gitmodules" at any
// depth, and under ".git/modules/..." too (a submodule's git directory has
// hooks and a config of its own). A path is also protected when replacing
// it replaces a protected name: ".git" for ".git/hooks" (a .git file or
// symlink made in its place would point git at other hooks).
//
// It is pure: apply checks every path it writes with it, whatever the
// host holds, so a path the run could not protect (it did not exist yet)
// is still never written.
func IsProtected(rel string, names []string) bool {
	if rel == "" {
		return false
	}
	parts := strings.Split(rel, "/")
	for _, n := range names {
		n = strings.Trim(n, "/")
		if n == "" {
			continue
		}
		np := strings.Split(n, "/")
		anyDepth := np[0] == ".git" || n == ".gitmodules"
		for at := 0; at < len(parts); at++ {
			if !anyDepth && at > 2 {
				break
			}
			if matchAt(parts[at:], np) {
				return true
			}
			if np[0] == ".git" && len(np) > 1 && parts[at] == ".git" && submoduleMatch(parts[at+1:], np[1:]) {
				return true
			}
		}
	}
	return false
}

// matchAt: p starts with name (rel is name or below it), or p is a proper
// prefix of name (rel holds name).
func matchAt(p, name []string) bool {
	for i := range min(len(p), len(name)) {
		if p[i] != name[i] {
			return false
		}
	}
	return true
}

// submoduleMatch: p (what follows a ".git" component) is
// "modules/<name...>/REST..." where rest is what the protected name has
// after ".git/": a submodule's git directory (its name may hold slashes).
func submoduleMatch(p, rest []string) bool {
	if len(p) < 2 || p[0] != "modules" {
		return false
	}
	for at := 2; at < len(p); at++ {
		if matchAt(p[at:], rest) && len(p[at:]) >= len(rest) {
			return true
		}
	}
	return false
}
