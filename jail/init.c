// The jail's init: PID 1 of the jail, uid 0 of its user namespace, with
// capabilities there and none on the host. The supervisor forks it with
// every namespace at once and no exec: a second Go runtime would cost
// milliseconds per run (threads, heap, package init) and a heap charged to
// the run. The supervisor compiles the whole plan in Go (initplan.go); the
// init only makes system calls with it:
//
//   - descriptors into place, everything else the supervisor had closed;
//   - wait until the supervisor has written the id maps and opened the
//     host paths, become uid 0 of the namespace (the jail's host identity,
//     never the host's root), take the sources' descriptors;
//   - the filesystem view, the way bubblewrap builds it: a tmpfs becomes a
//     temporary root with the host's root moved below it (/oldroot), the
//     jail's root is a second tmpfs (/newroot) populated from /oldroot, and
//     a final pivot_root enters it and detaches everything else. Every
//     mount is made with file descriptors (openat2, open_tree, fsmount,
//     move_mount), so symlinks in a destination cannot redirect a mount,
//     and mount points are created only on tmpfs instances the jail made
//     itself: nothing is ever created on the host. No host path is looked
//     up here: binds come from the descriptors the supervisor opened;
//   - host name, loopback, the Landlock ruleset (its paths resolve in the
//     jail);
//   - stage 2 (stage2.c), then reap every orphan and forward signals until
//     the command ends, report its status and exit, which makes the kernel
//     kill whatever else is left in the PID namespace.
//
// The init is a fork of a multi-threaded Go process: it runs on a copy of
// the calling thread only, so it must not touch the Go runtime, malloc or
// stdio: system calls, stack memory and the plan (a copy of the
// supervisor's memory at the fork).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/mount.h>
#include <linux/openat2.h>

#include "init.h"

#ifndef STATX_MNT_ID
#define STATX_MNT_ID 0x00001000U
#endif
#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif
#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef SYS_openat2
#define SYS_openat2 437
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#endif

#define TJ_PATH_MAX 4096

// Device nodes bound from the host's /dev (mknod is not allowed in a user
// namespace). jail/plan.go's devNodes lists the same names for Landlock.
static const char *const tj_dev_nodes[] = {"null", "zero", "full", "random", "urandom", "tty"};

#define TJ_DEV_SHM_SIZE (64 << 20) // the cap of the jail's /dev/shm

struct tj_builder {
	const struct tj_init *p;
	int oldroot;   // O_PATH of the host's root (/oldroot)
	int newroot;   // O_PATH of the jail's root tmpfs
	int emptyfile; // an empty read-only file, bound over masked files
	uint64_t owned[TJ_MAX_OWNED];
	int nowned;
	int fds[TJ_MAX_SOURCES]; // the sources' descriptors, as received
	int nfds;
	struct tj_record rec; // the failure, once one happened
};

// tj_failed records a failure and returns -1, for the caller to return.
static int tj_failed(struct tj_builder *b, int step, int op, int err, int index, const char *path) {
	b->rec.type = TJ_REC_INIT_FAIL;
	b->rec.step = step;
	b->rec.op = op;
	b->rec.err = err;
	b->rec.index = index;
	b->rec.code = 125;
	b->rec.path[0] = 0;
	if (path != NULL) {
		size_t n = strnlen(path, sizeof b->rec.path - 1);
		memcpy(b->rec.path, path, n);
		b->rec.path[n] = 0;
	}
	return -1;
}

static __attribute__((noreturn)) void tj_die(struct tj_builder *b) {
	tj_send_record(3, &b->rec, tj_record_size(&b->rec), -1);
	_exit(125);
}

static int tj_openat2(int dirfd, const char *path, uint64_t flags, uint64_t resolve) {
	struct open_how how;
	memset(&how, 0, sizeof how);
	how.flags = flags;
	how.resolve = resolve;
	// With RESOLVE_IN_ROOT or RESOLVE_BENEATH the kernel gives up a walk
	// that raced with a mount or rename anywhere on the system (other jails
	// starting) and asks the caller to try again.
	for (int i = 0;; i++) {
		long fd = syscall(SYS_openat2, dirfd, path, &how, sizeof how);
		if (fd >= 0 || errno != EAGAIN || i == 100) {
			return (int)fd;
		}
	}
}

static int tj_mount_id(int fd, uint64_t *id) {
	struct statx stx;
	if (statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &stx) < 0) {
		return -1;
	}
	*id = stx.stx_mnt_id;
	return 0;
}

// tj_fsmount makes a detached mount of a fresh fstype with the options
// (pairs of key and value; a NULL value is a flag). -op on failure.
static int tj_fsmount(const char *fstype, const char *const *opts, uint64_t attr) {
	int fs = (int)syscall(SYS_fsopen, fstype, FSOPEN_CLOEXEC);
	if (fs < 0) {
		return -TJ_OP_FSOPEN;
	}
	for (int i = 0; opts != NULL && opts[i] != NULL; i += 2) {
		long r;
		if (opts[i + 1] == NULL) {
			r = syscall(SYS_fsconfig, fs, FSCONFIG_SET_FLAG, opts[i], NULL, 0);
		} else {
			r = syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, opts[i], opts[i + 1], 0);
		}
		if (r < 0) {
			int e = errno;
			close(fs);
			errno = e;
			return -TJ_OP_FSCONFIG;
		}
	}
	if (syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0) {
		int e = errno;
		close(fs);
		errno = e;
		return -TJ_OP_FSCONFIG;
	}
	int mnt = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, attr);
	int e = errno;
	close(fs);
	errno = e;
	return mnt < 0 ? -TJ_OP_FSMOUNT : mnt;
}

static long tj_move(int from, int to) {
	return syscall(SYS_move_mount, from, "", to, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
}

// tj_mount_fs mounts a fresh fstype on dir; 0 or -op.
static int tj_mount_fs(int dir, const char *fstype, const char *const *opts, uint64_t attr) {
	int mnt = tj_fsmount(fstype, opts, attr);
	if (mnt < 0) {
		return mnt;
	}
	long r = tj_move(mnt, dir);
	int e = errno;
	close(mnt);
	errno = e;
	return r < 0 ? -TJ_OP_MOVE_MOUNT : 0;
}

static void tj_utoa(char *buf, size_t n, uint64_t v, int base) {
	char tmp[24];
	int i = 0;
	do {
		tmp[i++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v > 0);
	size_t j = 0;
	while (i > 0 && j + 1 < n) {
		buf[j++] = tmp[--i];
	}
	buf[j] = 0;
}

// tj_tmpfs mounts a fresh tmpfs on dir, records it as the jail's own and
// returns an O_PATH fd of its root, or -op.
static int tj_tmpfs(struct tj_builder *b, int dir, int64_t size, unsigned mode, uint64_t attr) {
	char modes[16], sizes[24];
	const char *opts[5] = {"mode", modes, NULL, NULL, NULL};
	tj_utoa(modes, sizeof modes, mode, 8);
	if (size > 0) {
		tj_utoa(sizes, sizeof sizes, (uint64_t)size, 10);
		opts[2] = "size";
		opts[3] = sizes;
	}
	if (b->nowned == TJ_MAX_OWNED) {
		errno = ENOSPC;
		return -TJ_OP_TOO_MANY;
	}
	int mnt = tj_fsmount("tmpfs", opts, attr | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
	if (mnt < 0) {
		return mnt;
	}
	if (tj_move(mnt, dir) < 0) {
		int e = errno;
		close(mnt);
		errno = e;
		return -TJ_OP_MOVE_MOUNT;
	}
	if (tj_mount_id(mnt, &b->owned[b->nowned]) < 0) {
		int e = errno;
		close(mnt);
		errno = e;
		return -TJ_OP_STATX;
	}
	b->nowned++;
	return mnt;
}

// tj_attach clones the mount tree at src (recursively when asked), applies
// attr to every mount of the clone and moves it onto dst; 0 or -op.
static int tj_attach(int src, int dst, uint64_t attr, int recursive) {
	unsigned flags = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH;
	unsigned setflags = AT_EMPTY_PATH;
	if (recursive) {
		flags |= AT_RECURSIVE;
		setflags |= AT_RECURSIVE;
	}
	int tree = (int)syscall(SYS_open_tree, src, "", flags);
	if (tree < 0) {
		return -TJ_OP_OPEN_TREE;
	}
	struct mount_attr ma;
	memset(&ma, 0, sizeof ma);
	ma.attr_set = attr;
	int op = 0;
	if (syscall(SYS_mount_setattr, tree, "", setflags, &ma, sizeof ma) < 0) {
		op = TJ_OP_SETATTR;
	} else if (tj_move(tree, dst) < 0) {
		op = TJ_OP_MOVE_MOUNT;
	}
	int e = errno;
	close(tree);
	errno = e;
	return -op;
}

// tj_must_own refuses to create anything below a mount the jail did not
// make: such a directory belongs to the host.
static int tj_must_own(struct tj_builder *b, int parent, const char *dest) {
	uint64_t id;
	if (tj_mount_id(parent, &id) < 0) {
		return tj_failed(b, TJ_I_DEST, TJ_OP_STATX, errno, -1, dest);
	}
	for (int i = 0; i < b->nowned; i++) {
		if (b->owned[i] == id) {
			return 0;
		}
	}
	return tj_failed(b, TJ_I_DEST, TJ_OP_OWN, 0, -1, dest);
}

static int tj_dest_n(struct tj_builder *b, char *path, size_t len, int dir);

// tj_dest opens the mount point path (NUL-terminated, absolute and clean)
// in the jail root, creating it and its parents when missing. A path that
// leaves the jail root through a symlink is an error, and so is one that
// would have to be created inside a bind of a host directory. The parents
// are opened as prefixes of path, which is changed and restored meanwhile.
static int tj_dest(struct tj_builder *b, char *path, int dir) {
	const char *rel = path + 1;
	if (*rel == 0) {
		int fd = fcntl(b->newroot, F_DUPFD_CLOEXEC, 0);
		return fd < 0 ? tj_failed(b, TJ_I_DEST, TJ_OP_OPEN, errno, -1, path) : fd;
	}
	int fd = tj_openat2(b->newroot, rel, O_PATH | O_CLOEXEC, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS);
	if (fd >= 0) {
		struct stat st;
		if (fstat(fd, &st) < 0) {
			int e = errno;
			close(fd);
			return tj_failed(b, TJ_I_DEST, TJ_OP_STAT, e, -1, path);
		}
		if (S_ISDIR(st.st_mode) != (dir != 0)) {
			close(fd);
			return tj_failed(b, TJ_I_DEST, TJ_OP_KIND, 0, dir, path);
		}
		return fd;
	}
	if (errno != ENOENT) {
		return tj_failed(b, TJ_I_DEST, TJ_OP_OPEN, errno, -1, path);
	}
	char *slash = strrchr(path, '/');
	size_t plen = slash == path ? 1 : (size_t)(slash - path);
	int parent = tj_dest_n(b, path, plen, 1);
	if (parent < 0) {
		return -1;
	}
	const char *name = slash + 1;
	int r = tj_must_own(b, parent, path);
	if (r == 0) {
		if (dir) {
			r = mkdirat(parent, name, 0755);
		} else {
			int f = openat(parent, name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0644);
			if (f >= 0) {
				close(f);
			}
			r = f < 0 ? -1 : 0;
		}
		if (r < 0) {
			r = tj_failed(b, TJ_I_DEST, TJ_OP_CREATE, errno, -1, path);
		}
	}
	if (r == 0) {
		fd = tj_openat2(parent, name, O_PATH | O_CLOEXEC | O_NOFOLLOW, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS);
		if (fd < 0) {
			r = tj_failed(b, TJ_I_DEST, TJ_OP_OPEN, errno, -1, path);
		}
	}
	close(parent);
	return r < 0 ? -1 : fd;
}

static int tj_dest_n(struct tj_builder *b, char *path, size_t len, int dir) {
	char saved = path[len];
	path[len] = 0;
	int fd = tj_dest(b, path, dir);
	path[len] = saved;
	return fd;
}

// tj_dest_copy is tj_dest for a path the caller may not change.
static int tj_dest_copy(struct tj_builder *b, const char *dest, int dir) {
	char buf[TJ_PATH_MAX];
	size_t n = strnlen(dest, sizeof buf);
	if (n == sizeof buf) {
		return tj_failed(b, TJ_I_DEST, TJ_OP_OPEN, ENAMETOOLONG, -1, dest);
	}
	memcpy(buf, dest, n + 1);
	return tj_dest(b, buf, dir);
}

// tj_symlink recreates a host symlink (like /bin -> usr/bin) at m->dest.
static int tj_symlink(struct tj_builder *b, int src, const struct tj_mount *m, int index) {
	char target[TJ_PATH_MAX];
	ssize_t n = readlinkat(src, "", target, sizeof target - 1);
	if (n < 0) {
		return tj_failed(b, TJ_I_SYMLINK, TJ_OP_READLINK, errno, index, m->src);
	}
	target[n] = 0;
	char buf[TJ_PATH_MAX];
	size_t len = strnlen(m->dest, sizeof buf);
	if (len == sizeof buf) {
		return tj_failed(b, TJ_I_DEST, TJ_OP_OPEN, ENAMETOOLONG, -1, m->dest);
	}
	memcpy(buf, m->dest, len + 1);
	char *slash = strrchr(buf, '/');
	int parent = tj_dest_n(b, buf, slash == buf ? 1 : (size_t)(slash - buf), 1);
	if (parent < 0) {
		return -1;
	}
	int r = tj_must_own(b, parent, m->dest);
	if (r == 0 && symlinkat(target, parent, slash + 1) < 0) {
		r = tj_failed(b, TJ_I_SYMLINK, TJ_OP_SYMLINK, errno, index, m->dest);
	}
	close(parent);
	return r;
}

// tj_bind shows a host path in the jail: the supervisor opened it (and
// checked what it opened); the init mounts that descriptor, so no host path
// is looked up here.
static int tj_bind(struct tj_builder *b, const struct tj_mount *m, int index) {
	const struct tj_source *s = &b->p->late->sources[index];
	if (s->slot < 0) {
		return 0; // optional, and not on this host
	}
	int src = b->fds[s->slot];
	if (s->type == S_IFLNK) {
		return tj_symlink(b, src, m, index);
	}
	int dst = tj_dest_copy(b, m->dest, s->type == S_IFDIR);
	if (dst < 0) {
		return -1;
	}
	int r = 0, op = 0;
	if (s->detached) {
		// A root supervisor's clone, attributes (and idmapping) set.
		if (tj_move(src, dst) < 0) {
			op = TJ_OP_MOVE_MOUNT;
		}
	} else {
		uint64_t attr = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
		if (!m->writable) {
			attr |= MOUNT_ATTR_RDONLY;
		}
		op = -tj_attach(src, dst, attr, 1);
	}
	if (op != 0) {
		r = tj_failed(b, TJ_I_BIND, op, errno, index, m->dest);
	}
	close(dst);
	return r;
}

static int tj_tmpfs_mount(struct tj_builder *b, const struct tj_mount *m, int index) {
	int dst = tj_dest_copy(b, m->dest, 1);
	if (dst < 0) {
		return -1;
	}
	uint64_t attr = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
	if (!m->writable) {
		attr |= MOUNT_ATTR_RDONLY;
	}
	int fd = tj_tmpfs(b, dst, m->size, 01777, attr);
	int e = errno;
	close(dst);
	if (fd < 0) {
		return tj_failed(b, TJ_I_TMPFS, -fd, e, index, m->dest);
	}
	close(fd);
	return 0;
}

// tj_mask hides what a bind shows at m->dest: an empty read-only directory
// or file goes over it. A path that does not exist fails the run: an
// earlier run with the directory read-write could have renamed it, and
// skipping the mask would show the secret under its new name.
static int tj_mask(struct tj_builder *b, const struct tj_mount *m, int index) {
	int dst = tj_openat2(b->newroot, m->dest + 1, O_PATH | O_CLOEXEC, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS);
	if (dst < 0) {
		return tj_failed(b, TJ_I_MASK, errno == ENOENT ? TJ_OP_MISSING : TJ_OP_OPEN, errno, index, m->dest);
	}
	struct stat st;
	int r = 0, op = 0;
	const uint64_t attr = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC;
	if (fstat(dst, &st) < 0) {
		op = TJ_OP_STAT;
	} else if (S_ISDIR(st.st_mode)) {
		int fd = tj_tmpfs(b, dst, 4096, 0555, attr);
		if (fd < 0) {
			op = -fd;
		} else {
			close(fd);
		}
	} else {
		op = -tj_attach(b->emptyfile, dst, attr, 0);
	}
	if (op != 0) {
		r = tj_failed(b, TJ_I_MASK, op, errno, index, m->dest);
	}
	close(dst);
	return r;
}

static int tj_dev(struct tj_builder *b) {
	int dir = tj_dest_copy(b, "/dev", 1);
	if (dir < 0) {
		return -1;
	}
	int devfd = tj_tmpfs(b, dir, 1 << 20, 0755, MOUNT_ATTR_NOEXEC);
	int e = errno;
	close(dir);
	if (devfd < 0) {
		return tj_failed(b, TJ_I_DEV, -devfd, e, -1, "/dev");
	}
	int r = 0;
	for (size_t i = 0; r == 0 && i < sizeof tj_dev_nodes / sizeof tj_dev_nodes[0]; i++) {
		char host[32] = "dev/", jail[32] = "/dev/";
		strcat(host, tj_dev_nodes[i]);
		strcat(jail, tj_dev_nodes[i]);
		int src = tj_openat2(b->oldroot, host, O_PATH | O_CLOEXEC | O_NOFOLLOW, RESOLVE_BENEATH);
		if (src < 0) {
			r = tj_failed(b, TJ_I_DEVNODE, TJ_OP_OPEN, errno, -1, tj_dev_nodes[i]);
			break;
		}
		int dst = tj_dest_copy(b, jail, 0);
		if (dst < 0) {
			r = -1;
		} else {
			int op = -tj_attach(src, dst, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, 0);
			if (op != 0) {
				r = tj_failed(b, TJ_I_DEVBIND, op, errno, -1, tj_dev_nodes[i]);
			}
			close(dst);
		}
		close(src);
	}
	static const char *const links[][2] = {
		{"/proc/self/fd", "fd"}, {"/proc/self/fd/0", "stdin"}, {"/proc/self/fd/1", "stdout"},
		{"/proc/self/fd/2", "stderr"}, {"pts/ptmx", "ptmx"},
	};
	for (size_t i = 0; r == 0 && i < sizeof links / sizeof links[0]; i++) {
		if (symlinkat(links[i][0], devfd, links[i][1]) < 0) {
			r = tj_failed(b, TJ_I_DEVLINK, TJ_OP_SYMLINK, errno, -1, links[i][1]);
		}
	}
	if (r == 0 && mkdirat(devfd, "pts", 0755) < 0) {
		r = tj_failed(b, TJ_I_DEVDIR, TJ_OP_MKDIR, errno, -1, "pts");
	}
	if (r == 0 && mkdirat(devfd, "shm", 0755) < 0) {
		r = tj_failed(b, TJ_I_DEVDIR, TJ_OP_MKDIR, errno, -1, "shm");
	}
	close(devfd);
	if (r < 0) {
		return r;
	}
	int pts = tj_dest_copy(b, "/dev/pts", 1);
	if (pts < 0) {
		return -1;
	}
	static const char *const ptsopts[] = {"newinstance", NULL, "ptmxmode", "0666", "mode", "0620", NULL};
	int op = -tj_mount_fs(pts, "devpts", ptsopts, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC);
	e = errno;
	close(pts);
	if (op != 0) {
		return tj_failed(b, TJ_I_PTS, op, e, -1, "/dev/pts");
	}
	int shm = tj_dest_copy(b, "/dev/shm", 1);
	if (shm < 0) {
		return -1;
	}
	int fd = tj_tmpfs(b, shm, TJ_DEV_SHM_SIZE, 01777, MOUNT_ATTR_NOEXEC);
	e = errno;
	close(shm);
	if (fd < 0) {
		return tj_failed(b, TJ_I_SHM, -fd, e, -1, "/dev/shm");
	}
	close(fd);
	return 0;
}

// tj_etc writes the files the jail generates (the jail user's identity,
// the host name, loopback names) and binds the host's resolv.conf when the
// network is shared.
static int tj_etc(struct tj_builder *b) {
	int etc = tj_dest_copy(b, "/etc", 1);
	if (etc < 0) {
		return -1;
	}
	int r = 0;
	for (int i = 0; r == 0 && i < TJ_ETC_FILES; i++) {
		const char *name = b->p->etc_names[i], *data = b->p->etc_data[i];
		int fd = openat(etc, name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
		if (fd < 0) {
			r = tj_failed(b, TJ_I_ETC, TJ_OP_CREATE, errno, -1, name);
			break;
		}
		size_t n = strlen(data);
		while (n > 0) {
			ssize_t w = write(fd, data, n);
			if (w < 0 && errno == EINTR) {
				continue;
			}
			if (w <= 0) {
				r = tj_failed(b, TJ_I_ETC, TJ_OP_WRITE, w < 0 ? errno : EIO, -1, name);
				break;
			}
			data += w;
			n -= (size_t)w;
		}
		close(fd);
	}
	close(etc);
	return r;
}

// tj_over binds each trusted file inside a read-write bind read-only over
// itself, and each directory above it in that bind over itself (a mount
// point cannot be renamed), so the command cannot change what the next
// run trusts. Each path must still be the object the supervisor opened.
static int tj_overbinds(struct tj_builder *b) {
	const struct tj_late *l = b->p->late;
	for (int i = 0; i < l->nover; i++) {
		const struct tj_over *o = &l->over[i];
		int fd = tj_openat2(b->newroot, o->dest + 1, O_PATH | O_CLOEXEC | O_NOFOLLOW,
				    RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
		if (fd < 0) {
			return tj_failed(b, TJ_I_OVER, errno == ENOENT ? TJ_OP_MISSING : TJ_OP_OPEN, errno, i, o->dest);
		}
		struct stat st;
		int op = 0, e = 0;
		if (fstat(fd, &st) < 0) {
			op = TJ_OP_STAT, e = errno;
		} else if ((uint64_t)st.st_dev != o->dev || (uint64_t)st.st_ino != o->ino) {
			op = TJ_OP_CHANGED;
		} else {
			uint64_t attr = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
			if (o->readonly) {
				attr |= MOUNT_ATTR_RDONLY;
			}
			op = -tj_attach(fd, fd, attr, 1);
			e = errno;
		}
		close(fd);
		if (op != 0) {
			return tj_failed(b, TJ_I_OVER, op, e, i, o->dest);
		}
	}
	return 0;
}

// tj_proc_knobs makes the kernel's knobs in the jail's /proc read-only and
// masks what reveals kernel memory and other users' keys, as container
// runtimes do: Landlock is not the only thing between the command and
// /proc/sys. Entries this kernel lacks are skipped (it is the jail's own
// /proc, nothing a run can change).
static int tj_proc_knobs(struct tj_builder *b) {
	static const char *const rdonly[] = {"sys", "sysrq-trigger", "irq", "bus", "fs"};
	static const char *const masked[] = {"kcore", "keys", "timer_list", "kallsyms", "sched_debug",
					     "latency_stats", "timer_stats", "acpi", "scsi"};
	int proc = tj_dest_copy(b, "/proc", 1);
	if (proc < 0) {
		return -1;
	}
	const uint64_t ro = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC;
	int r = 0;
	for (size_t i = 0; r == 0 && i < sizeof rdonly / sizeof rdonly[0] + sizeof masked / sizeof masked[0]; i++) {
		int mask = i >= sizeof rdonly / sizeof rdonly[0];
		const char *name = mask ? masked[i - sizeof rdonly / sizeof rdonly[0]] : rdonly[i];
		int fd = tj_openat2(proc, name, O_PATH | O_CLOEXEC | O_NOFOLLOW, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS);
		if (fd < 0) {
			if (errno != ENOENT) {
				r = tj_failed(b, TJ_I_PROCRO, TJ_OP_OPEN, errno, -1, name);
			}
			continue;
		}
		struct stat st;
		int op = 0;
		if (fstat(fd, &st) < 0) {
			op = TJ_OP_STAT;
		} else if (!mask) {
			op = -tj_attach(fd, fd, ro, 1);
		} else if (S_ISDIR(st.st_mode)) {
			int t = tj_tmpfs(b, fd, 4096, 0555, ro);
			if (t < 0) {
				op = -t;
			} else {
				close(t);
			}
		} else {
			op = -tj_attach(b->emptyfile, fd, ro, 0);
		}
		if (op != 0) {
			r = tj_failed(b, TJ_I_PROCRO, op, errno, -1, name);
		}
		close(fd);
	}
	close(proc);
	return r;
}

static int tj_build_root(struct tj_builder *b) {
	const struct tj_init *p = b->p;
	if (syscall(SYS_mount, "", "/", "", MS_PRIVATE | MS_REC, NULL) < 0) {
		return tj_failed(b, TJ_I_PRIVATE, TJ_OP_NONE, errno, -1, NULL);
	}
	if (syscall(SYS_mount, "tmpfs", p->base, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0700") < 0) {
		return tj_failed(b, TJ_I_BASE, TJ_OP_NONE, errno, -1, p->base);
	}
	if (chdir(p->base) < 0) {
		return tj_failed(b, TJ_I_BASE, TJ_OP_CHDIR, errno, -1, p->base);
	}
	if (mkdir("oldroot", 0700) < 0) {
		return tj_failed(b, TJ_I_BASE, TJ_OP_MKDIR, errno, -1, "oldroot");
	}
	if (mkdir("newroot", 0700) < 0) {
		return tj_failed(b, TJ_I_BASE, TJ_OP_MKDIR, errno, -1, "newroot");
	}
	if (syscall(SYS_pivot_root, ".", "oldroot") < 0) {
		return tj_failed(b, TJ_I_PIVOT_TMP, TJ_OP_NONE, errno, -1, NULL);
	}
	if (chdir("/") < 0) {
		return tj_failed(b, TJ_I_PIVOT_TMP, TJ_OP_CHDIR, errno, -1, NULL);
	}
	b->oldroot = open("/oldroot", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (b->oldroot < 0) {
		return tj_failed(b, TJ_I_OLDROOT, TJ_OP_OPEN, errno, -1, NULL);
	}
	b->emptyfile = open("/empty", O_CREAT | O_EXCL | O_RDONLY | O_CLOEXEC, 0444);
	if (b->emptyfile < 0) {
		return tj_failed(b, TJ_I_MASKFILE, TJ_OP_CREATE, errno, -1, NULL);
	}
	// The jail's root: read-only once populated, so the command can write
	// only where a writable mount says so.
	int dir = open("/newroot", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0) {
		return tj_failed(b, TJ_I_ROOTFS, TJ_OP_OPEN, errno, -1, NULL);
	}
	b->newroot = tj_tmpfs(b, dir, 2 << 20, 0755, 0);
	int e = errno;
	close(dir);
	if (b->newroot < 0) {
		return tj_failed(b, TJ_I_ROOTFS, -b->newroot, e, -1, NULL);
	}

	// What every jail has: /proc of its own PID namespace, a minimal /dev,
	// the generated /etc files.
	int proc = tj_dest_copy(b, "/proc", 1);
	if (proc < 0) {
		return -1;
	}
	int op = -tj_mount_fs(proc, "proc", NULL, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
	e = errno;
	close(proc);
	if (op != 0) {
		return tj_failed(b, TJ_I_PROC, op, e, -1, "/proc");
	}
	if (tj_proc_knobs(b) < 0 || tj_dev(b) < 0 || tj_etc(b) < 0) {
		return -1;
	}
	// Masks come last in the plan: trusted files are bound over themselves
	// before them, once every bind is in place.
	int over = 0;
	for (int i = 0; i < p->nmounts; i++) {
		const struct tj_mount *m = &p->mounts[i];
		if (!over && m->kind == TJ_MOUNT_MASK) {
			over = 1;
			if (tj_overbinds(b) < 0) {
				return -1;
			}
		}
		int r = 0;
		switch (m->kind) {
		case TJ_MOUNT_BIND:
			r = tj_bind(b, m, i);
			break;
		case TJ_MOUNT_TMPFS:
			r = tj_tmpfs_mount(b, m, i);
			break;
		case TJ_MOUNT_MASK:
			r = tj_mask(b, m, i);
			break;
		}
		if (r < 0) {
			return -1;
		}
	}
	if (!over && tj_overbinds(b) < 0) {
		return -1;
	}
	struct mount_attr ro;
	memset(&ro, 0, sizeof ro);
	ro.attr_set = MOUNT_ATTR_RDONLY;
	if (syscall(SYS_mount_setattr, b->newroot, "", AT_EMPTY_PATH, &ro, sizeof ro) < 0) {
		return tj_failed(b, TJ_I_RDONLY, TJ_OP_NONE, errno, -1, NULL);
	}
	if (fchdir(b->newroot) < 0) {
		return tj_failed(b, TJ_I_PIVOT, TJ_OP_CHDIR, errno, -1, NULL);
	}
	if (syscall(SYS_pivot_root, ".", ".") < 0) {
		return tj_failed(b, TJ_I_PIVOT, TJ_OP_NONE, errno, -1, NULL);
	}
	// The temporary root (with the host's root below it) now sits on top
	// of "/": detach it, and with it every host mount.
	if (syscall(SYS_umount2, ".", 2 /* MNT_DETACH */) < 0) {
		return tj_failed(b, TJ_I_DETACH, TJ_OP_NONE, errno, -1, NULL);
	}
	if (chdir("/") < 0) {
		return tj_failed(b, TJ_I_DETACH, TJ_OP_CHDIR, errno, -1, NULL);
	}
	close(b->oldroot);
	close(b->emptyfile);
	close(b->newroot);
	return 0;
}

// tj_loopback brings lo up; the kernel gives it 127.0.0.1 and ::1.
static int tj_loopback(struct tj_builder *b) {
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		return tj_failed(b, TJ_I_LOOPBACK, TJ_OP_SOCKET, errno, -1, NULL);
	}
	struct ifreq ifr;
	memset(&ifr, 0, sizeof ifr);
	strcpy(ifr.ifr_name, "lo");
	int r = 0;
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0) {
		r = tj_failed(b, TJ_I_LOOPBACK, TJ_OP_IOCTL_GET, errno, -1, NULL);
	} else {
		ifr.ifr_flags |= IFF_UP;
		if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0) {
			r = tj_failed(b, TJ_I_LOOPBACK, TJ_OP_IOCTL_SET, errno, -1, NULL);
		}
	}
	close(fd);
	return r;
}

// The kernel's Landlock structures, as of the newest ABI the plan uses
// (older kernels accept the longer attr when the extra fields are zero).
struct tj_ll_attr {
	uint64_t fs, net, scoped;
};
struct tj_ll_beneath {
	uint64_t allowed;
	int32_t parent_fd;
} __attribute__((packed));
struct tj_ll_netport {
	uint64_t allowed, port;
};

// tj_landlock builds the ruleset with the rule paths opened inside the
// jail, and returns its fd for stage 2.
static int tj_landlock(struct tj_builder *b, const struct tj_landlock *l) {
	struct tj_ll_attr attr = {l->fs, l->net, l->scoped};
	int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
	if (rs < 0) {
		return tj_failed(b, TJ_I_LL_CREATE, TJ_OP_NONE, errno, -1, NULL);
	}
	for (int i = 0; i < l->npaths; i++) {
		const struct tj_ll_path *r = &l->paths[i];
		int fd;
		if (r->mount >= 0) {
			// A bind: the rule goes on the very object the supervisor
			// opened on the host (Landlock rules belong to the inode).
			const struct tj_source *src = &b->p->late->sources[r->mount];
			if (src->slot < 0 || src->type == S_IFLNK) {
				continue; // not there, or a symlink whose target has its own rule
			}
			fd = fcntl(b->fds[src->slot], F_DUPFD_CLOEXEC, 0);
		} else {
			fd = open(r->path, O_PATH | O_CLOEXEC);
		}
		if (fd < 0) {
			tj_failed(b, TJ_I_LL_OPEN, TJ_OP_OPEN, errno, i, r->path);
			close(rs);
			return -1;
		}
		struct stat st;
		uint64_t allowed = 0;
		int fail = 0;
		if (fstat(fd, &st) < 0) {
			fail = tj_failed(b, TJ_I_LL_OPEN, TJ_OP_STAT, errno, i, r->path);
		} else if (S_ISDIR(st.st_mode)) {
			allowed = r->dir;
		} else if (r->dir_only) {
			fail = tj_failed(b, TJ_I_LL_DIRONLY, TJ_OP_NONE, 0, i, r->path);
		} else if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
			allowed = r->dev;
		} else {
			allowed = r->file;
		}
		// allowed 0: nothing this ABI can grant there (e.g. only ioctl_dev).
		if (fail == 0 && allowed != 0) {
			struct tj_ll_beneath pb = {allowed, fd};
			if (syscall(SYS_landlock_add_rule, rs, 1 /* LANDLOCK_RULE_PATH_BENEATH */, &pb, 0) < 0) {
				fail = tj_failed(b, TJ_I_LL_RULE, TJ_OP_NONE, errno, i, r->path);
			}
		}
		close(fd);
		if (fail < 0) {
			close(rs);
			return -1;
		}
	}
	for (int i = 0; i < l->nports; i++) {
		struct tj_ll_netport np = {l->ports[i].access, l->ports[i].port};
		if (syscall(SYS_landlock_add_rule, rs, 2 /* LANDLOCK_RULE_NET_PORT */, &np, 0) < 0) {
			tj_failed(b, TJ_I_LL_PORT, TJ_OP_NONE, errno, i, NULL);
			close(rs);
			return -1;
		}
	}
	return rs;
}

static int tj_write_file(const char *path, const char *data) {
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		return -1;
	}
	size_t n = strlen(data);
	ssize_t w;
	do {
		w = write(fd, data, n);
	} while (w < 0 && errno == EINTR);
	int e = errno;
	close(fd);
	if (w >= 0 && (size_t)w != n) {
		e = EIO;
	}
	errno = e;
	return w == (ssize_t)n ? 0 : -1;
}

// tj_start_stage2 forks stage 2, writes its id maps and waits until it has
// exec'd the command or failed; a failure goes on to the supervisor. The
// nested namespace maps the jail user (1000) to the init's uid 0, so files
// the command writes belong to the invoking host user.
static long tj_start_stage2(struct tj_builder *b, struct tj_stage2 *s) {
	int sync[2], status[2];
	if (pipe2(sync, O_CLOEXEC) < 0) {
		return tj_failed(b, TJ_I_STAGE2, TJ_OP_NONE, errno, -1, NULL);
	}
	if (pipe2(status, O_CLOEXEC) < 0) {
		int e = errno;
		close(sync[0]);
		close(sync[1]);
		return tj_failed(b, TJ_I_STAGE2, TJ_OP_NONE, e, -1, NULL);
	}
	s->sync_fd = sync[0];
	s->status_fd = status[1];
	s->parent_pid = getpid();
	// Stage 2 shares this memory, and with it the "not dumpable" flag,
	// which makes the kernel give a process's /proc files to root of the
	// user namespace its memory was made in: the host's, as the init is a
	// fork of the supervisor. The init could not write stage 2's id maps.
	// So the memory is dumpable until they are written: nothing in the
	// jail runs yet, and stage 2's execve decides again for the command.
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	// Stage 2 sets the command's huge page setting on the shared memory
	// before its execve; the init's comes back once it has exec'd or failed.
	int own_thp = prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0);
	long pid = tj_stage2_start(s);
	close(sync[0]);
	close(status[1]);
	if (pid < 0) {
		close(sync[1]);
		close(status[0]);
		return tj_failed(b, TJ_I_STAGE2, TJ_OP_NONE, (int)-pid, -1, NULL);
	}
	char dir[32] = "/proc/", num[24], path[48];
	tj_utoa(num, sizeof num, (uint64_t)pid, 10);
	strcat(dir, num);
	static const char *const files[] = {"/setgroups", "/uid_map", "/gid_map"};
	static const char *const data[] = {"deny", "1000 0 1\n", "1000 0 1\n"};
	int op = 0, e = 0, index = -1;
	for (int i = 0; op == 0 && i < 3; i++) {
		strcpy(path, dir);
		strcat(path, files[i]);
		if (tj_write_file(path, data[i]) < 0) {
			op = TJ_OP_WRITE, e = errno, index = i;
		}
	}
	// Not dumpable again before stage 2 may go on to the command.
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	if (op == 0) {
		ssize_t w;
		do {
			w = write(sync[1], "", 1);
		} while (w < 0 && errno == EINTR);
		if (w != 1) {
			op = TJ_OP_WRITE, e = w < 0 ? errno : EIO;
		}
	}
	close(sync[1]);
	if (op != 0) {
		close(status[0]);
		kill((pid_t)pid, SIGKILL);
		waitpid((pid_t)pid, NULL, __WALL);
		return tj_failed(b, index >= 0 ? TJ_I_STAGE2_MAP : TJ_I_STAGE2, op, e, index, NULL);
	}
	struct tj_record r;
	ssize_t n;
	do {
		n = read(status[0], &r, sizeof r);
	} while (n < 0 && errno == EINTR);
	close(status[0]);
	if (own_thp >= 0 && prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0) != own_thp) {
		prctl(PR_SET_THP_DISABLE, own_thp, 0, 0, 0);
	}
	if (n > (ssize_t)offsetof(struct tj_record, path)) {
		// Stage 2 failed and exits; the reaper reports its end after this.
		// execve says EACCES for a directory too: the init sees the
		// command's files, so it can tell which (op 1: a directory).
		r.path[sizeof r.path - 1] = 0;
		r.op = 0;
		if (r.step == TJ_STEP_EXEC && r.err == EACCES && r.index >= 0 && r.index < s->npaths) {
			struct stat st;
			if (stat(s->paths[r.index], &st) == 0 && S_ISDIR(st.st_mode)) {
				r.op = 1;
			}
		}
		tj_send_record(3, &r, tj_record_size(&r), -1);
	}
	return pid;
}

// tj_reap waits for every child until the command (pid) ends, forwarding
// the signals a terminal would send to its process group, then reports
// and exits.
static __attribute__((noreturn)) void tj_reap(struct tj_builder *b, pid_t pid) {
	sigset_t set;
	sigemptyset(&set);
	static const int fwd[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
	for (size_t i = 0; i < sizeof fwd / sizeof fwd[0]; i++) {
		sigaddset(&set, fwd[i]);
	}
	sigaddset(&set, SIGCHLD);
	for (;;) {
		int sig = sigwaitinfo(&set, NULL);
		if (sig < 0) {
			if (errno == EINTR) {
				continue;
			}
			tj_failed(b, TJ_I_WAIT, TJ_OP_NONE, errno, -1, NULL);
			tj_die(b);
		}
		if (sig != SIGCHLD) {
			// To the command's process group, as a terminal would; to the
			// command itself too only when it has left that group, or it
			// would get the signal twice.
			kill(-pid, sig);
			if (getpgid(pid) != pid) {
				kill(pid, sig);
			}
			continue;
		}
		for (;;) {
			int ws;
			pid_t got = waitpid(-1, &ws, WNOHANG | __WALL);
			if (got < 0 && errno == EINTR) {
				continue;
			}
			if (got < 0 && errno != ECHILD) {
				tj_failed(b, TJ_I_WAIT, TJ_OP_NONE, errno, -1, NULL);
				tj_die(b);
			}
			if (got <= 0) {
				break; // no more to reap for now
			}
			if (got != pid) {
				continue; // an orphan
			}
			struct tj_record r;
			memset(&r, 0, offsetof(struct tj_record, path) + 1);
			r.type = TJ_REC_EXIT;
			if (WIFEXITED(ws)) {
				r.exit_code = WEXITSTATUS(ws);
			} else if (WIFSIGNALED(ws)) {
				r.signal = WTERMSIG(ws);
				r.exit_code = 128 + r.signal;
			}
			// What the command and every orphan reaped used.
			struct rusage ru;
			if (getrusage(RUSAGE_CHILDREN, &ru) == 0) {
				r.utime_us = (int64_t)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec;
				r.stime_us = (int64_t)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec;
				r.maxrss_kib = ru.ru_maxrss;
			}
			tj_send_record(3, &r, tj_record_size(&r), -1);
			_exit(0);
		}
	}
}

// The kernel's struct sigaction, for raw rt_sigaction.
struct tj_ksigaction {
	void *handler;
	unsigned long flags;
	void *restorer;
	uint64_t mask;
};

// tj_default_handlers puts back the default action of every signal that
// has a handler: Go's handlers would run Go code in this process. Ignored
// signals stay ignored, as at an execve, except SIGCHLD: the init reaps.
// Stage 2 inherits the result.
static void tj_default_handlers(void) {
	for (int sig = 1; sig <= 64; sig++) {
		struct tj_ksigaction old, dfl;
		if (sig == SIGKILL || sig == SIGSTOP) {
			continue;
		}
		if (syscall(SYS_rt_sigaction, sig, NULL, &old, sizeof old.mask) != 0) {
			continue;
		}
		if (old.handler == (void *)SIG_DFL || (old.handler == (void *)SIG_IGN && sig != SIGCHLD)) {
			continue;
		}
		memset(&dfl, 0, sizeof dfl);
		dfl.handler = (void *)SIG_DFL;
		syscall(SYS_rt_sigaction, sig, &dfl, NULL, sizeof dfl.mask);
	}
	// The alternate signal stack is the Go runtime's, in memory the fork
	// may have left out.
	stack_t ss;
	memset(&ss, 0, sizeof ss);
	ss.ss_flags = SS_DISABLE;
	sigaltstack(&ss, NULL);
}

// tj_setup_fds moves the supervisor's descriptors to 0..4 and closes
// every other one the fork copied: only stdio and the supervisor socket
// may cross into the jail, and a copy of another run's descriptor would
// keep that run's pipes open. It returns the socket's number, -1 on
// failure with the socket where it was, -2 with the socket at 3.
static int tj_setup_fds(const struct tj_init *p) {
	int tmp[5];
	for (int i = 0; i < 5; i++) {
		tmp[i] = fcntl(p->fds[i], F_DUPFD_CLOEXEC, 5);
		if (tmp[i] < 0) {
			return -1;
		}
	}
	for (int i = 0; i < 5; i++) {
		// 0, 1 and 2 are the command's; 3 and 4 are close-on-exec.
		if (dup3(tmp[i], i, i < 3 ? 0 : O_CLOEXEC) < 0) {
			return i > 3 ? -2 : -1;
		}
	}
	return syscall(SYS_close_range, 5, ~0U, 0) < 0 ? -2 : 3;
}

// tj_become_root makes the init uid and gid 0 of its user namespace, which
// the supervisor has mapped to the jail's host identity. Until now it had
// the supervisor's credentials: for a root supervisor the host's root,
// owner of every root-owned file even from inside this namespace. Raw
// system calls: glibc's wrappers would try to reach the supervisor's other
// threads, which this process does not have.
static int tj_become_root(struct tj_builder *b) {
	if (syscall(SYS_setresgid, 0, 0, 0) < 0) {
		return tj_failed(b, TJ_I_SETID, TJ_OP_NONE, errno, 0, NULL);
	}
	// Real root may drop its supplementary groups; an unprivileged user
	// namespace denies setgroups (and has none to drop).
	if (b->p->drop_groups && syscall(SYS_setgroups, 0, NULL) < 0) {
		return tj_failed(b, TJ_I_SETGROUPS, TJ_OP_NONE, errno, -1, NULL);
	}
	if (syscall(SYS_setresuid, 0, 0, 0) < 0) {
		return tj_failed(b, TJ_I_SETID, TJ_OP_NONE, errno, 1, NULL);
	}
	return 0;
}

// tj_recv_fds takes the descriptors of the sources, which the supervisor
// sent over the socket before the sync byte, TJ_FDS_PER_MSG a message.
static int tj_recv_fds(struct tj_builder *b) {
	int want = b->p->late->nfds;
	if (want < 0 || want > TJ_MAX_SOURCES) {
		return tj_failed(b, TJ_I_RECVFDS, TJ_OP_NONE, EINVAL, want, NULL);
	}
	while (b->nfds < want) {
		char byte;
		struct iovec iov = {&byte, 1};
		union {
			char buf[CMSG_SPACE(sizeof(int) * TJ_FDS_PER_MSG)];
			struct cmsghdr align;
		} u;
		struct msghdr mh;
		memset(&mh, 0, sizeof mh);
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_control = u.buf;
		mh.msg_controllen = sizeof u.buf;
		ssize_t n = recvmsg(3, &mh, MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n <= 0 || (mh.msg_flags & MSG_CTRUNC)) {
			return tj_failed(b, TJ_I_RECVFDS, TJ_OP_NONE, n < 0 ? errno : EPROTO, b->nfds, NULL);
		}
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c != NULL; c = CMSG_NXTHDR(&mh, c)) {
			if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) {
				continue;
			}
			int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
			for (int i = 0; i < k; i++) {
				int fd;
				memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
				if (b->nfds == want) {
					close(fd);
					continue;
				}
				b->fds[b->nfds++] = fd;
			}
		}
	}
	return 0;
}

static __attribute__((noreturn)) void tj_init_main(const struct tj_init *p) {
	// Static: the builder holds the owned mount ids and a failure record,
	// too much for a stack frame. The init is a process of its own.
	static struct tj_builder b;
	memset(&b, 0, sizeof b);
	b.p = p;
	b.oldroot = b.newroot = b.emptyfile = -1;

	tj_default_handlers();
	// The supervisor's thread that forked this process stays until it has
	// reaped it; if the supervisor dies before this, the sync read below
	// sees the end of the pipe.
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	int sock = setsid() < 0 ? -1 : tj_setup_fds(p);
	if (sock < 0) {
		tj_failed(&b, TJ_I_FDS, TJ_OP_NONE, errno, -1, NULL);
		tj_send_record(sock == -1 ? p->fds[3] : 3, &b.rec, tj_record_size(&b.rec), -1);
		_exit(125);
	}
	char c;
	ssize_t n;
	do {
		n = read(4, &c, 1);
	} while (n < 0 && errno == EINTR);
	if (n != 1) {
		_exit(125); // the supervisor is gone, or gave up on this run
	}
	close(4);
	// Nothing in the jail may ptrace the init or open its /proc files. Not
	// before the sync: the supervisor writes the id maps in /proc/PID.
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	// /proc/1/cmdline is readable in the jail even so, and this memory is
	// a copy of the supervisor's: blank its arguments (host paths, flags).
	static const char name[] = "tooljail-init";
	if (tj_args_start != NULL && tj_args_len > 0) {
		memset(tj_args_start, 0, tj_args_len);
		memcpy(tj_args_start, name, tj_args_len < sizeof name ? tj_args_len - 1 : sizeof name);
	}
	prctl(PR_SET_NAME, name, 0, 0, 0);
	if (tj_become_root(&b) < 0) {
		tj_die(&b);
	}
	// The change of credentials cleared the parent-death signal: arm it
	// again, then make sure the supervisor did not die in between (its end
	// of the socket would have hung up).
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	struct pollfd hup = {.fd = 3, .events = POLLRDHUP};
	if (poll(&hup, 1, 0) < 0 || (hup.revents & (POLLHUP | POLLRDHUP | POLLERR | POLLNVAL))) {
		_exit(125);
	}
	if (tj_recv_fds(&b) < 0) {
		tj_die(&b);
	}
	if (tj_build_root(&b) < 0) {
		tj_die(&b);
	}
	if (sethostname(p->hostname, strlen(p->hostname)) < 0) {
		tj_failed(&b, TJ_I_HOSTNAME, TJ_OP_NONE, errno, -1, p->hostname);
		tj_die(&b);
	}
	if (p->netnone && tj_loopback(&b) < 0) {
		tj_die(&b);
	}
	// Stage 2 is prepared in the plan, but its Landlock ruleset and
	// descriptors are the init's: set them on this process's copy.
	struct tj_stage2 *s = (struct tj_stage2 *)&p->stage2;
	s->landlock_fd = -1;
	if (p->landlock != NULL) {
		s->landlock_fd = tj_landlock(&b, p->landlock);
		if (s->landlock_fd < 0) {
			tj_die(&b);
		}
		s->landlock_flags = p->landlock->flags;
	}
	// The sources are mounted and their rules made.
	for (int i = 0; i < b.nfds; i++) {
		close(b.fds[i]);
	}
	if (p->late->filter_len > 0) {
		s->filter = p->late->filter;
		s->filter_len = p->late->filter_len;
		s->seccomp_flags = p->late->seccomp_flags;
		s->notify = p->late->notify;
	}
	s->sock = 3;
	long pid = tj_start_stage2(&b, s);
	if (pid < 0) {
		tj_die(&b);
	}
	if (s->landlock_fd >= 0) {
		close(s->landlock_fd);
	}
	tj_reap(&b, (pid_t)pid);
}

struct tj_clone_args {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid, set_tid_size, cgroup;
};

// What the fork leaves out. A fork copies the page tables of every
// private writable mapping and makes its pages copy-on-write in both
// processes: the supervisor then copies each page it writes for as long as
// the init lives (about 0.5 ms of page faults in a CLI run), and the init's
// exit unmaps them all again. The init needs none of the Go heap, the Go
// runtime's mappings, other threads' stacks or malloc's arenas. It keeps
// the plan's chunks, this thread's stack (its TLS too), the binary's data
// and bss, the brk heap, the process stack (argv, environ) and every file
// mapping: the supervisor marks the rest MADV_DONTFORK around the clone.
//
// Only in a static binary (the CLI): there the layout is known. In a
// dynamically linked program the loader keeps its link maps, the main
// thread's TLS and each library's bss in anonymous mappings that the init
// may touch (lazy binding on its first call of a libc function), so the
// init gets a copy of everything, as before. The restore after the clone
// assumes nothing else in the process marks mappings MADV_DONTFORK (the Go
// runtime and glibc do not); a static program that does would find such a
// mark undone on an anonymous mapping.
struct tj_span {
	uintptr_t lo, hi;
};
#define TJ_MAX_SPANS 256

extern char etext[], _end[];

static const char *tj_hex(const char *s, uintptr_t *v) {
	*v = 0;
	for (;; s++) {
		int d = *s >= '0' && *s <= '9' ? *s - '0' : *s >= 'a' && *s <= 'f' ? *s - 'a' + 10 : -1;
		if (d < 0) {
			return s;
		}
		*v = *v << 4 | (uintptr_t)d;
	}
}

static int tj_overlap(uintptr_t lo, uintptr_t hi, uintptr_t klo, uintptr_t khi) {
	return lo < khi && klo < hi;
}

// tj_leave_out reads one /proc/self/maps line: whether [lo, hi) is memory
// the init does without.
static int tj_leave_out(const struct tj_init *p, char *line, uintptr_t sp, struct tj_span *out) {
	uintptr_t lo, hi, inode = 0;
	const char *s = tj_hex(line, &lo);
	if (*s != '-') {
		return 0;
	}
	s = tj_hex(s + 1, &hi);
	if (*s != ' ' || strncmp(s + 1, "rw-p ", 5) != 0) {
		return 0; // read-only, shared or inaccessible: nothing to copy
	}
	s += 6;
	for (int field = 0; field < 2; field++) { // offset, device
		s = strchr(s, ' ');
		if (s == NULL) {
			return 0;
		}
		s++;
	}
	for (; *s >= '0' && *s <= '9'; s++) {
		inode = inode * 10 + (uintptr_t)(*s - '0');
	}
	while (*s == ' ') {
		s++;
	}
	if (inode != 0 || (*s != 0 && strncmp(s, "[anon:", 6) != 0)) {
		return 0; // a file, [heap], [stack], [vdso]...
	}
	if (tj_overlap(lo, hi, sp, sp + 1) || tj_overlap(lo, hi, (uintptr_t)etext, (uintptr_t)_end)) {
		return 0;
	}
	for (int i = 0; i < p->nkeep; i++) {
		if (tj_overlap(lo, hi, p->keep_lo[i], p->keep_hi[i])) {
			return 0;
		}
	}
	out->lo = lo;
	out->hi = hi;
	return 1;
}

// tj_dontfork marks what the init does without and returns how many
// spans it marked; on any trouble it marks less, and the init gets a copy
// of more.
static int tj_dontfork(const struct tj_init *p, struct tj_span *spans) {
	if (p->nkeep <= 0 || getauxval(AT_BASE) != 0) {
		return 0;
	}
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		return 0;
	}
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
	char buf[8192];
	size_t have = 0;
	int n = 0;
	for (;;) {
		ssize_t r = read(fd, buf + have, sizeof buf - 1 - have);
		if (r <= 0) {
			break;
		}
		have += (size_t)r;
		char *line = buf, *nl;
		while ((nl = memchr(line, '\n', (size_t)(buf + have - line))) != NULL) {
			*nl = 0;
			if (n < TJ_MAX_SPANS && tj_leave_out(p, line, sp, &spans[n])) {
				n++;
			}
			line = nl + 1;
		}
		have = (size_t)(buf + have - line);
		memmove(buf, line, have);
		if (have == sizeof buf - 1) {
			break; // no line is this long
		}
	}
	close(fd);
	// Marked after reading: the marks can merge mappings, which would
	// shift what the read sees.
	int marked = 0;
	for (int i = 0; i < n; i++) {
		if (madvise((void *)spans[i].lo, spans[i].hi - spans[i].lo, MADV_DONTFORK) == 0) {
			spans[marked++] = spans[i];
		}
	}
	return marked;
}

// One fork at a time: another run's marks would leave out this run's plan
// and stack.
static pthread_mutex_t tj_fork_lock = PTHREAD_MUTEX_INITIALIZER;

long tj_init_start(const struct tj_init *p, int *pidfd) {
	uint64_t all = ~(uint64_t)0, old;
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, &old, sizeof all);
	struct tj_span spans[TJ_MAX_SPANS];
	pthread_mutex_lock(&tj_fork_lock);
	int nspans = tj_dontfork(p, spans);
	long pid;
	if (p->cgroup_fd >= 0) {
		struct tj_clone_args a;
		memset(&a, 0, sizeof a);
		a.flags = p->clone_flags | CLONE_INTO_CGROUP | CLONE_PIDFD;
		a.pidfd = (uint64_t)(uintptr_t)pidfd;
		a.exit_signal = SIGCHLD;
		a.cgroup = (uint64_t)p->cgroup_fd;
		pid = syscall(SYS_clone3, &a, sizeof a);
	} else {
		// The pidfd goes where the parent's tid would (Linux 5.2+).
		pid = syscall(SYS_clone, p->clone_flags | CLONE_PIDFD | SIGCHLD, NULL, pidfd, NULL, 0);
	}
	if (pid == 0) {
		tj_init_main(p);
	}
	int e = errno;
	for (int i = 0; i < nspans; i++) {
		madvise((void *)spans[i].lo, spans[i].hi - spans[i].lo, MADV_DOFORK);
	}
	pthread_mutex_unlock(&tj_fork_lock);
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, sizeof old);
	return pid < 0 ? -e : pid;
}
