package hostside

import (
	"io/fs"
	"path"
	"strings"
	"testing"
)

// fakeHost is a host file system of paths: "d" a directory, "f" a file,
// "l:TARGET" a symlink, "f:TEXT" a file holding TEXT.
type fakeHost map[string]string

func (h fakeHost) Lstat(p string) (fs.FileMode, error) {
	e, ok := h[p]
	if !ok {
		// the parents of a listed path are directories
		for k := range h {
			if strings.HasPrefix(k, p+"/") || p == "/" {
				return fs.ModeDir, nil
			}
		}
		return 0, fs.ErrNotExist
	}
	switch {
	case e == "d":
		return fs.ModeDir, nil
	case strings.HasPrefix(e, "l:"):
		return fs.ModeSymlink, nil
	}
	return 0, nil
}

func (h fakeHost) Readlink(p string) (string, error) {
	t, ok := strings.CutPrefix(h[p], "l:")
	if !ok {
		return "", fs.ErrInvalid
	}
	return t, nil
}

func (h fakeHost) Head(p string) ([]byte, error) {
	t, ok := strings.CutPrefix(h[p], "f:")
	if !ok {
		return nil, fs.ErrInvalid
	}
	return []byte(t), nil
}

func TestDanglingHint(t *testing.T) {
	mounts := []Mount{
		{Kind: Bind, Source: "/usr", Dest: "/usr", KeepSymlink: true},
		{Kind: Bind, Source: "/bin", Dest: "/bin", KeepSymlink: true},
		{Kind: Tmpfs, Dest: "/home/sandbox", Writable: true},
		{Kind: Tmpfs, Dest: "/tmp", Writable: true},
		{Kind: Bind, Source: "/srv/proj", Dest: "/srv/proj", Writable: true},
		{Kind: Bind, Source: "/data/tools", Dest: "/tools"},
		{Kind: Bind, Source: "/tmp/w", Dest: "/tmp/w", Writable: true},
		{Kind: Mask, Dest: "/srv/proj/secret"},
	}
	host := fakeHost{
		// targets on the host, outside what the jail shows
		"/root/.pyenv/versions/3.11.7/bin/python3.11": "f",
		"/opt/py/bin/python":                          "f",
		"/opt/thing/bin/tool":                         "f",
		"/opt/thing/bin/interp":                       "f",
		"/opt/other/interp":                           "f",
		"/opt/dir/bin/x":                              "f",
		"/nowhere/t":                                  "f",
		"/opt/t":                                      "f",
		"/tmp/x":                                      "f",
		"/tmp/w/t":                                    "l:/opt/t",
		"/srv/proj/gone":                              "l:/opt/gone",
		"/bin":                                        "l:usr/bin",
		"/usr/bin/python3":                            "l:python3.11",
		"/usr/bin/python3.11":                         "f",
		"/srv/proj/venv/bin/python":                   "l:/root/.pyenv/versions/3.11.7/bin/python3.11",
		"/srv/proj/venv/bin/py-rel":                   "l:../../../../opt/py/bin/python",
		"/srv/proj/venv/bin/py-ok":                    "l:/usr/bin/python3",
		"/srv/proj/venv/bin/py2":                      "l:python",
		"/srv/proj/tool":                              "l:/opt/thing/bin/tool",
		"/srv/proj/run.sh":                            "f:#!/opt/thing/bin/interp -x\necho\n",
		"/srv/proj/run-link.sh":                       "f:#! /srv/proj/interp\n",
		"/srv/proj/interp":                            "l:/opt/other/interp",
		"/srv/proj/ok.sh":                             "f:#!/bin/sh\n",
		"/srv/proj/plain":                             "f:\x7fELF",
		"/srv/proj/dirlink":                           "l:/opt/dir",
		"/srv/proj/intmp":                             "l:/tmp/x",
		"/srv/proj/secret":                            "l:/opt/s",
		"/srv/proj/tools-link":                        "l:/tools/t",
		"/data/tools/t":                               "l:/nowhere/t",
		"/srv/proj/loop":                              "l:loop",
	}
	for _, c := range []struct {
		name       string
		candidates []string
		want       string // "" for no hint
	}{
		{"venv python into pyenv", []string{"/srv/proj/venv/bin/python"},
			"/srv/proj/venv/bin/python is a symlink to /root/.pyenv/versions/3.11.7/bin/python3.11, which the jail does not show: show it with --toolchain auto, or --toolchain /root/.pyenv/versions/3.11.7 (filesystem.toolchains)"},
		{"relative link out", []string{"/srv/proj/venv/bin/py-rel"},
			"/srv/proj/venv/bin/py-rel is a symlink to /opt/py/bin/python, which the jail does not show: show it with --toolchain auto, or --toolchain /opt/py (filesystem.toolchains)"},
		{"chain: the first link is named, the last target", []string{"/srv/proj/venv/bin/py2"},
			"/srv/proj/venv/bin/py2 is a symlink to /srv/proj/venv/bin/python, which leads to /root/.pyenv/versions/3.11.7/bin/python3.11, which the jail does not show"},
		{"lookup in PATH: the candidate that is a link", []string{"/usr/local/bin/tool", "/srv/proj/tool"},
			"/srv/proj/tool is a symlink to /opt/thing/bin/tool, which the jail does not show"},
		{"through a directory link", []string{"/srv/proj/dirlink/bin/x"},
			"/srv/proj/dirlink/bin/x is a symlink to /opt/dir/bin/x, which the jail does not show"},
		{"through another bind", []string{"/srv/proj/tools-link"},
			"/srv/proj/tools-link is a symlink to /tools/t, which leads to /nowhere/t, which the jail does not show: show it with --toolchain auto, or --toolchain /nowhere (filesystem.toolchains)"},
		{"script with a missing interpreter", []string{"/srv/proj/run.sh"},
			"/srv/proj/run.sh starts with #!/opt/thing/bin/interp, which the jail does not show: show it with --toolchain auto, or --toolchain /opt/thing (filesystem.toolchains)"},
		{"script whose interpreter is a link out", []string{"/srv/proj/run-link.sh"},
			"/srv/proj/run-link.sh starts with #!/srv/proj/interp (/srv/proj/interp is a symlink to /opt/other/interp), which the jail does not show"},
		{"link the jail resolves", []string{"/srv/proj/venv/bin/py-ok"}, ""},
		{"script with a shown interpreter", []string{"/srv/proj/ok.sh"}, ""},
		{"binary", []string{"/srv/proj/plain"}, ""},
		{"not there at all", []string{"/srv/proj/none", "/usr/bin/none"}, ""},
		{"not in the jail at all", []string{"/opt/x"}, ""},
		{"into a tmpfs, empty when the command starts", []string{"/srv/proj/intmp"}, "/srv/proj/intmp is a symlink to /tmp/x, which the jail does not show"},
		{"a workdir below the jail's /tmp", []string{"/tmp/w/t"}, "/tmp/w/t is a symlink to /opt/t, which the jail does not show"},
		{"a target the host has not either", []string{"/srv/proj/gone"}, ""},
		{"masked", []string{"/srv/proj/secret"}, ""},
		{"a loop", []string{"/srv/proj/loop"}, ""},
	} {
		got := DanglingHint(c.candidates, mounts, host)
		if c.want == "" && got != "" || c.want != "" && !strings.HasPrefix(got, c.want) {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

func TestInterpreter(t *testing.T) {
	for in, want := range map[string]string{
		"#!/bin/sh\n":             "/bin/sh",
		"#! /usr/bin/env python3": "/usr/bin/env",
		"#!python\n":              "",
		"#!\n":                    "",
		"\x7fELF":                 "",
	} {
		if got := interpreter([]byte(in)); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
	_ = path.Join
}
