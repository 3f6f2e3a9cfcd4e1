package main

import (
	"bytes"
	"crypto/md5"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// debControl is a binary package's control file. Installed-Size is in KiB,
// as dpkg counts it: each file's size rounded up to a KiB, summed.
func debControl(version, arch, maintainer string, files []entry) string {
	var kib int
	for _, f := range files {
		kib += (len(f.Data) + 1023) / 1024
	}
	return fmt.Sprintf(`Package: tooljail
Version: %s
Architecture: %s
Maintainer: %s
Installed-Size: %d
Section: utils
Priority: optional
Homepage: https://github.com/tooljail/tooljail
Description: run commands in a jail and report what happened
 tooljail runs one command (model-written code, a shell command, a build or a
 test) in new namespaces with a read-only view of the system, Landlock path
 rules, a seccomp allowlist and cgroup limits, as an unprivileged user, and
 writes a JSON report of what it did and what was denied. One static binary;
 no daemon, no setuid helper.
`, version, arch, maintainer, kib)
}

// debMD5sums is the md5sums control file: one line per file, in the order
// of the data archive, paths without the leading "./".
func debMD5sums(files []entry) string {
	sorted := append([]entry(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var b strings.Builder
	for _, f := range sorted {
		fmt.Fprintf(&b, "%x  %s\n", md5.Sum(f.Data), f.Name)
	}
	return b.String()
}

// arMember is one member of the ar archive a .deb is.
type arMember struct {
	Name string
	Data []byte
}

// writeAr writes a common-format ar archive, as dpkg-deb does: every
// member owned by 0:0, mode 100644, dated mtime.
func writeAr(w io.Writer, members []arMember, mtime time.Time) error {
	var buf bytes.Buffer
	buf.WriteString("!<arch>\n")
	for _, m := range members {
		if len(m.Name) > 16 || strings.ContainsAny(m.Name, " /") {
			return fmt.Errorf("ar member name %q: at most 16 bytes, no spaces or slashes", m.Name)
		}
		fmt.Fprintf(&buf, "%-16s%-12d%-6d%-6d%-8s%-10d`\n", m.Name, mtime.Unix(), 0, 0, "100644", len(m.Data))
		buf.Write(m.Data)
		if len(m.Data)%2 == 1 {
			buf.WriteByte('\n')
		}
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// deb is a whole binary package: debian-binary, control.tar.gz (control,
// md5sums) and data.tar.gz (files under "./"), every time mtime.
func deb(version, arch, maintainer string, files []entry, mtime time.Time) ([]byte, error) {
	control := []entry{
		{Name: "control", Mode: 0o644, Data: []byte(debControl(version, arch, maintainer, files))},
		{Name: "md5sums", Mode: 0o644, Data: []byte(debMD5sums(files))},
	}
	controlTar, err := tarGz("./", "root", control, mtime)
	if err != nil {
		return nil, fmt.Errorf("control.tar.gz: %w", err)
	}
	dataTar, err := tarGz("./", "root", files, mtime)
	if err != nil {
		return nil, fmt.Errorf("data.tar.gz: %w", err)
	}
	var buf bytes.Buffer
	err = writeAr(&buf, []arMember{
		{"debian-binary", []byte("2.0\n")},
		{"control.tar.gz", controlTar},
		{"data.tar.gz", dataTar},
	}, mtime)
	return buf.Bytes(), err
}
