package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"time"
)

// entry is one file of an archive: its path inside the archive (slash
// separated, no leading "./"), its permission bits and its bytes.
// Directories are not listed; archiveEntries adds them.
type entry struct {
	Name string
	Mode int64 // 0o644 or 0o755
	Data []byte
}

// normMode is what an archive records for a source file's mode: 0o755 when
// the owner may execute it, else 0o644. The umask of whoever checked the
// tree out or built it changes only the group and other bits, so it must not
// reach the archive.
func normMode(owner uint32) int64 {
	if owner&0o100 != 0 {
		return 0o755
	}
	return 0o644
}

// tarHeaders lists the headers of a reproducible tar: every parent directory
// once before its contents (0o755), entries sorted by name, owner and group
// 0 named owner (none, or "root" as dpkg-deb --root-owner-group writes), every
// time mtime, and prefix before each name (e.g. "./" for a .deb's data,
// "tooljail-0.1.0-linux-amd64/" for a tarball).
func tarHeaders(prefix, owner string, files []entry, mtime time.Time) ([]*tar.Header, error) {
	byPath := map[string]*tar.Header{}
	add := func(h *tar.Header) error {
		// "a" and "a/" are one path: a file cannot also be a directory.
		key := strings.TrimSuffix(h.Name, "/")
		if old, ok := byPath[key]; ok {
			if old.Typeflag == tar.TypeDir && h.Typeflag == tar.TypeDir {
				return nil
			}
			return fmt.Errorf("%s is in the archive twice", h.Name)
		}
		byPath[key] = h
		return nil
	}
	hdr := func(name string, typ byte, mode, size int64) *tar.Header {
		return &tar.Header{
			Typeflag: typ,
			Name:     name,
			Mode:     mode,
			Size:     size,
			ModTime:  mtime,
			Uname:    owner,
			Gname:    owner,
			Format:   tar.FormatGNU,
		}
	}
	if prefix != "" {
		if err := add(hdr(prefix, tar.TypeDir, 0o755, 0)); err != nil {
			return nil, err
		}
	}
	for _, f := range files {
		if f.Name == "" || strings.HasPrefix(f.Name, "/") || strings.Contains("/"+f.Name+"/", "/../") || path.Clean(f.Name) != f.Name {
			return nil, fmt.Errorf("archive name %q is not a clean relative path", f.Name)
		}
		for d := path.Dir(f.Name); d != "."; d = path.Dir(d) {
			if err := add(hdr(prefix+d+"/", tar.TypeDir, 0o755, 0)); err != nil {
				return nil, err
			}
		}
		if f.Mode != 0o644 && f.Mode != 0o755 {
			return nil, fmt.Errorf("%s: mode %o, want 0644 or 0755", f.Name, f.Mode)
		}
		if err := add(hdr(prefix+f.Name, tar.TypeReg, f.Mode, int64(len(f.Data)))); err != nil {
			return nil, err
		}
	}
	var hs []*tar.Header
	for _, h := range byPath {
		hs = append(hs, h)
	}
	sort.Slice(hs, func(i, j int) bool { return hs[i].Name < hs[j].Name })
	return hs, nil
}

// writeTar writes files as a reproducible tar (see tarHeaders).
func writeTar(w io.Writer, prefix, owner string, files []entry, mtime time.Time) error {
	hs, err := tarHeaders(prefix, owner, files, mtime)
	if err != nil {
		return err
	}
	data := map[string][]byte{}
	for _, f := range files {
		data[prefix+f.Name] = f.Data
	}
	tw := tar.NewWriter(w)
	for _, h := range hs {
		if err := tw.WriteHeader(h); err != nil {
			return fmt.Errorf("tar %s: %w", h.Name, err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(data[h.Name]); err != nil {
				return fmt.Errorf("tar %s: %w", h.Name, err)
			}
		}
	}
	return tw.Close()
}

// gzipBytes compresses b at the best level with a bare header: no name, no
// time, so the same bytes in give the same bytes out (gzip -n -9).
func gzipBytes(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// tarGz is writeTar's output, gzipped as gzipBytes does.
func tarGz(prefix, owner string, files []entry, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	if err := writeTar(&buf, prefix, owner, files, mtime); err != nil {
		return nil, err
	}
	return gzipBytes(buf.Bytes())
}
