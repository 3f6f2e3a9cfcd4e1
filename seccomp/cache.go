package seccomp

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// The disk cache lets each `tooljail run` (a new process) skip libseccomp.
// A cached file is loaded into the jail as its syscall filter, so the cache
// must never be a way around it. A file is used only if:
//   - the directory the caller opened (the jail, by the rules of every
//     host path: hostside.CacheDir) is a directory owned by the effective
//     uid, with no group or other permission bits; files are opened
//     relative to it, so renaming path components afterwards changes
//     nothing;
//   - the file is opened with O_NOFOLLOW, is a regular file with one link,
//     owned by the effective uid, mode without group/other bits;
//   - its header names the same cache key, and the SHA-256 of the filter
//     matches (a torn or edited file is refused).
// Anything else is treated as a miss: the policy is recompiled and the file
// replaced atomically (write to a temporary name, rename).
//
// Those checks cannot tell a file the user's own jailed command wrote (same
// uid) from one tooljail wrote: a cache directory inside a read-write bind
// of a run must not be used at all. The jail decides that on the directory
// it opened and passes it to CompileDir, or nil.
//
// File layout: magic, sha256(key) (32 bytes), notify (1 byte),
// sha256(filter) (32 bytes), filter. Name: hex(sha256(key)).bpf.

var cacheMagic = []byte("tooljail-seccomp-cache v1\n")

const maxCacheFile = 64 << 10 // BPF_MAXINSNS*8 plus the header fits

type diskCache struct {
	dir  *os.File
	path string // for messages
}

// useDiskCache checks a directory the caller opened (O_PATH is enough):
// a directory owned by the effective uid, no group or other permissions.
func useDiskCache(dir *os.File) (*diskCache, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(dir.Fd()), &st); err != nil {
		return nil, fmt.Errorf("seccomp cache: stat %s: %w", dir.Name(), err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil, fmt.Errorf("seccomp cache: %s is not a directory", dir.Name())
	}
	if err := checkOwnerMode(&st, unix.S_IFDIR); err != nil {
		return nil, fmt.Errorf("seccomp cache: %s: %w; fix with: chmod 700 %s (as its owner) or remove it", dir.Name(), err, dir.Name())
	}
	return &diskCache{dir: dir, path: dir.Name()}, nil
}

func checkOwnerMode(st *unix.Stat_t, typ uint32) error {
	if st.Mode&unix.S_IFMT != typ {
		return fmt.Errorf("wrong file type %#o", st.Mode&unix.S_IFMT)
	}
	if euid := uint32(os.Geteuid()); st.Uid != euid {
		return fmt.Errorf("owned by uid %d, not %d", st.Uid, euid)
	}
	if st.Mode&0o077 != 0 {
		return fmt.Errorf("mode %#o gives access to group or others", st.Mode&0o777)
	}
	return nil
}

func fileName(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:]) + ".bpf"
}

// load returns the cached program for key, or an error; fs.ErrNotExist when
// there is none.
func (d *diskCache) load(key string) (*Program, error) {
	name := fileName(key)
	fd, err := unix.Openat(int(d.dir.Fd()), name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err == unix.ENOENT {
		return nil, fs.ErrNotExist
	}
	if err != nil {
		return nil, fmt.Errorf("seccomp cache: open %s/%s: %w", d.path, name, err)
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("seccomp cache: stat %s/%s: %w", d.path, name, err)
	}
	if err := checkOwnerMode(&st, unix.S_IFREG); err != nil {
		return nil, fmt.Errorf("seccomp cache: refusing %s/%s: %w", d.path, name, err)
	}
	if st.Nlink != 1 || st.Size > maxCacheFile {
		return nil, fmt.Errorf("seccomp cache: refusing %s/%s: %d links, %d bytes", d.path, name, st.Nlink, st.Size)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxCacheFile+1))
	if err != nil {
		return nil, fmt.Errorf("seccomp cache: read %s/%s: %w", d.path, name, err)
	}
	prog, err := parseCacheFile(b, key)
	if err != nil {
		return nil, fmt.Errorf("seccomp cache: refusing %s/%s: %w", d.path, name, err)
	}
	return prog, nil
}

func parseCacheFile(b []byte, key string) (*Program, error) {
	keySum := sha256.Sum256([]byte(key))
	hdr := len(cacheMagic) + 32 + 1 + 32
	if len(b) < hdr || !bytes.Equal(b[:len(cacheMagic)], cacheMagic) {
		return nil, errors.New("not a cache file of this version")
	}
	b = b[len(cacheMagic):]
	if !bytes.Equal(b[:32], keySum[:]) {
		return nil, errors.New("cache key mismatch")
	}
	notify := b[32] == 1
	if b[32] > 1 {
		return nil, errors.New("bad notify flag")
	}
	want, filter := b[33:65], b[65:]
	if got := sha256.Sum256(filter); !bytes.Equal(got[:], want) {
		return nil, errors.New("content hash mismatch")
	}
	if _, err := decode(filter); err != nil {
		return nil, err
	}
	return &Program{Filter: filter, Notify: notify}, nil
}

func (d *diskCache) store(key string, prog *Program) error {
	keySum := sha256.Sum256([]byte(key))
	sum := sha256.Sum256(prog.Filter)
	var b bytes.Buffer
	b.Write(cacheMagic)
	b.Write(keySum[:])
	if prog.Notify {
		b.WriteByte(1)
	} else {
		b.WriteByte(0)
	}
	b.Write(sum[:])
	b.Write(prog.Filter)

	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return fmt.Errorf("seccomp cache: %w", err)
	}
	tmp := ".tmp-" + hex.EncodeToString(rnd[:])
	dfd := int(d.dir.Fd())
	fd, err := unix.Openat(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("seccomp cache: create %s/%s: %w", d.path, tmp, err)
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, werr := f.Write(b.Bytes())
	cerr := f.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = unix.Renameat(dfd, tmp, dfd, fileName(key))
	}
	if werr != nil {
		_ = unix.Unlinkat(dfd, tmp, 0)
		return fmt.Errorf("seccomp cache: write %s/%s: %w", d.path, fileName(key), werr)
	}
	return nil
}
