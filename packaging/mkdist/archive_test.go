package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"strings"
	"testing"
	"time"
)

var epoch = time.Unix(1700000000, 0)

func TestNormMode(t *testing.T) {
	for _, tc := range []struct {
		perm uint32
		want int64
	}{
		{0o644, 0o644}, {0o600, 0o644}, {0o664, 0o644}, {0o400, 0o644},
		{0o755, 0o755}, {0o700, 0o755}, {0o775, 0o755}, {0o744, 0o755},
		{0o055, 0o644}, // others may execute, the owner not: not an executable
	} {
		if got := normMode(tc.perm); got != tc.want {
			t.Errorf("normMode(%o) = %o, want %o", tc.perm, got, tc.want)
		}
	}
}

func TestTarHeadersReproducible(t *testing.T) {
	files := []entry{
		{Name: "share/man/man1/tooljail.1", Mode: 0o644, Data: []byte(".TH x")},
		{Name: "bin/tooljail", Mode: 0o755, Data: []byte("ELF")},
		{Name: "README.md", Mode: 0o644, Data: []byte("hi")},
	}
	hs, err := tarHeaders("p/", "", files, epoch)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, h := range hs {
		names = append(names, h.Name)
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" || !h.ModTime.Equal(epoch) {
			t.Errorf("%s: uid %d gid %d uname %q gname %q mtime %v, want 0 0 no names %v", h.Name, h.Uid, h.Gid, h.Uname, h.Gname, h.ModTime, epoch)
		}
		if h.Typeflag == tar.TypeDir && h.Mode != 0o755 {
			t.Errorf("directory %s: mode %o", h.Name, h.Mode)
		}
	}
	want := "p/ p/README.md p/bin/ p/bin/tooljail p/share/ p/share/man/ p/share/man/man1/ p/share/man/man1/tooljail.1"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("entries %s, want %s", got, want)
	}

	// Whatever order the files come in, the same bytes come out.
	a, err := tarGz("p/", "", files, epoch)
	if err != nil {
		t.Fatal(err)
	}
	b, err := tarGz("p/", "", []entry{files[2], files[0], files[1]}, epoch)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Error("the same files in another order gave other bytes")
	}
	zr, err := gzip.NewReader(bytes.NewReader(a))
	if err != nil {
		t.Fatal(err)
	}
	if zr.Name != "" || !zr.ModTime.IsZero() {
		t.Errorf("gzip header carries name %q, time %v; want neither", zr.Name, zr.ModTime)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == "p/bin/tooljail" {
			body, _ := io.ReadAll(tr)
			if string(body) != "ELF" || h.Mode != 0o755 {
				t.Errorf("bin/tooljail read back as %q mode %o", body, h.Mode)
			}
		}
	}
}

func TestTarHeadersRefuse(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files []entry
	}{
		{"twice", []entry{{Name: "a", Mode: 0o644}, {Name: "a", Mode: 0o644}}},
		{"file and directory", []entry{{Name: "a", Mode: 0o644}, {Name: "a/b", Mode: 0o644}}},
		{"absolute", []entry{{Name: "/etc/passwd", Mode: 0o644}}},
		{"dot-dot", []entry{{Name: "a/../../b", Mode: 0o644}}},
		{"unclean", []entry{{Name: "a//b", Mode: 0o644}}},
		{"setuid", []entry{{Name: "a", Mode: 0o4755}}},
		{"world-writable", []entry{{Name: "a", Mode: 0o666}}},
	} {
		if _, err := tarHeaders("", "", tc.files, epoch); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
}

func TestArLayout(t *testing.T) {
	var buf bytes.Buffer
	if err := writeAr(&buf, []arMember{{"debian-binary", []byte("2.0\n")}, {"odd", []byte("x")}, {"next", []byte("yz")}}, epoch); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	want := "!<arch>\n" +
		"debian-binary   1700000000  0     0     100644  4         `\n2.0\n" +
		"odd             1700000000  0     0     100644  1         `\nx\n" +
		"next            1700000000  0     0     100644  2         `\nyz"
	if string(b) != want {
		t.Errorf("ar archive\n%q\nwant\n%q", b, want)
	}
	if err := writeAr(io.Discard, []arMember{{"a/b", nil}}, epoch); err == nil {
		t.Error("a member name with a slash was accepted")
	}
}

func TestDebControl(t *testing.T) {
	c := debControl("0.1.0", "arm64", "M <m@example.org>", []entry{{Data: make([]byte, 1)}, {Data: make([]byte, 2048)}, {Data: make([]byte, 2049)}})
	for _, want := range []string{"Package: tooljail\n", "Version: 0.1.0\n", "Architecture: arm64\n", "Maintainer: M <m@example.org>\n", "Installed-Size: 6\n", "\nDescription: "} {
		if !strings.Contains(c, want) {
			t.Errorf("control lacks %q:\n%s", want, c)
		}
	}
	if strings.Contains(c, "Depends") {
		t.Errorf("control has dependencies:\n%s", c)
	}
	if !strings.HasSuffix(c, "\n") || strings.Contains(c, "\n\n") {
		t.Errorf("control is not one stanza ending in a newline:\n%q", c)
	}
}
