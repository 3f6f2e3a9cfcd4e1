// The jail's filesystem, built by the init in the order tj_init_main calls
// these steps: a temporary root on a tmpfs with the host's root below it
// (/oldroot), the jail's root tmpfs (/newroot), /proc, /dev, the /etc
// files, the plan's mounts, the trusted files bound over themselves, the
// masks, and the pivot into the jail's root.
//
// Every mount is made with file descriptors (openat2, open_tree, fsmount,
// move_mount), so symlinks in a destination cannot redirect a mount, and
// mount points are created only on tmpfs instances the jail made itself:
// nothing is ever created on the host. No host path is looked up here:
// binds come from the descriptors the supervisor opened.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/mount.h>
#include <linux/openat2.h>

#include "init_internal.h" // in initc, the parent directory (-I)

#ifndef STATX_MNT_ID
#define STATX_MNT_ID 0x00001000U
#endif

#define TJ_PATH_MAX 4096
#define TJ_DEV_SHM_SIZE (64 << 20) // the cap of the jail's /dev/shm

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

// tj_close_keep closes fd and keeps errno, for the failure to record.
static void tj_close_keep(int fd) {
	int e = errno;
	close(fd);
	errno = e;
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
			tj_close_keep(fs);
			return -TJ_OP_FSCONFIG;
		}
	}
	if (syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0) {
		tj_close_keep(fs);
		return -TJ_OP_FSCONFIG;
	}
	int mnt = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, attr);
	tj_close_keep(fs);
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
	tj_close_keep(mnt);
	return r < 0 ? -TJ_OP_MOVE_MOUNT : 0;
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
		tj_close_keep(mnt);
		return -TJ_OP_MOVE_MOUNT;
	}
	if (tj_mount_id(mnt, &b->owned[b->nowned]) < 0) {
		tj_close_keep(mnt);
		return -TJ_OP_STATX;
	}
	b->nowned++;
	return mnt;
}

// TJ_NO_WATCH is the watch argument of tj_tmpfs_on for a tmpfs the
// command cannot fill (the jail's /dev).
#define TJ_NO_WATCH (-2)

// tj_tmpfs_on is tj_tmpfs for a caller that needs only 0 or -op; the
// mount is watched for filling up (tj_watch_mount) as plan mount watch,
// -1 for /dev/shm, unless TJ_NO_WATCH.
static int tj_tmpfs_on(struct tj_builder *b, int dir, int64_t size, unsigned mode, uint64_t attr, int watch) {
	int fd = tj_tmpfs(b, dir, size, mode, attr);
	if (fd < 0) {
		return fd;
	}
	if (watch == TJ_NO_WATCH) {
		close(fd);
	} else {
		tj_watch_mount(b, fd, watch, size);
	}
	return 0;
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
	tj_close_keep(tree);
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
	return tj_failed(b, TJ_I_DEST, TJ_OP_DEST_OWN, 0, -1, dest);
}

// tj_dest_failed records a destination that could not be opened. EXDEV
// and ELOOP are RESOLVE_BENEATH's: the path leaves the jail root through a
// symlink.
static int tj_dest_failed(struct tj_builder *b, int err, const char *path) {
	int op = err == EXDEV || err == ELOOP ? TJ_OP_DEST_ESCAPES : TJ_OP_NONE;
	return tj_failed(b, TJ_I_DEST, op, err, -1, path);
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
		return fd < 0 ? tj_dest_failed(b, errno, path) : fd;
	}
	int fd = tj_openat2(b->newroot, rel, O_PATH | O_CLOEXEC, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS);
	if (fd >= 0) {
		struct stat st;
		if (fstat(fd, &st) < 0) {
			int e = errno;
			close(fd);
			return tj_dest_failed(b, e, path);
		}
		if (S_ISDIR(st.st_mode) != (dir != 0)) {
			close(fd);
			tj_failed(b, TJ_I_DEST, TJ_OP_DEST_KIND, 0, -1, path);
			b->rec.is_dir = dir != 0;
			return -1;
		}
		return fd;
	}
	if (errno != ENOENT) {
		return tj_dest_failed(b, errno, path);
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
			r = tj_failed(b, TJ_I_MOUNTPOINT, dir ? TJ_OP_MKDIR : TJ_OP_CREATE, errno, -1, path);
		}
	}
	if (r == 0) {
		fd = tj_openat2(parent, name, O_PATH | O_CLOEXEC | O_NOFOLLOW, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS);
		if (fd < 0) {
			r = tj_dest_failed(b, errno, path);
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
		return tj_dest_failed(b, ENAMETOOLONG, dest);
	}
	memcpy(buf, dest, n + 1);
	return tj_dest(b, buf, dir);
}

// tj_temporary_root makes the temporary root: a tmpfs on the plan's base
// directory, pivoted into with the host's root below it (/oldroot), where
// the jail's root (/newroot) and the empty file masks use are made.
int tj_temporary_root(struct tj_builder *b) {
	const char *base = b->p->base;
	if (syscall(SYS_mount, "", "/", "", MS_PRIVATE | MS_REC, NULL) < 0) {
		return tj_failed(b, TJ_I_PRIVATE, TJ_OP_NONE, errno, -1, NULL);
	}
	if (syscall(SYS_mount, "tmpfs", base, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0700") < 0) {
		return tj_failed(b, TJ_I_BASE, TJ_OP_NONE, errno, -1, base);
	}
	if (chdir(base) < 0) {
		return tj_failed(b, TJ_I_BASE, TJ_OP_CHDIR, errno, -1, base);
	}
	if (mkdir("oldroot", 0700) < 0) {
		return tj_failed(b, TJ_I_BASE_DIR, TJ_OP_MKDIR, errno, -1, "oldroot");
	}
	if (mkdir("newroot", 0700) < 0) {
		return tj_failed(b, TJ_I_BASE_DIR, TJ_OP_MKDIR, errno, -1, "newroot");
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
	return 0;
}

// tj_jail_root mounts the jail's root tmpfs on /newroot: read-only once
// populated (tj_enter_root), so the command can write only where a
// writable mount says so.
int tj_jail_root(struct tj_builder *b) {
	int dir = open("/newroot", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0) {
		return tj_failed(b, TJ_I_ROOTFS, TJ_OP_OPEN, errno, -1, NULL);
	}
	int slot = b->p->late->root;
	if (slot >= 0) {
		// A clone of the root template: not recorded as the jail's own
		// tmpfs, so nothing can be created on it; every mount point
		// this run needs is there (roottpl).
		b->newroot = b->fds[slot];
		b->fds[slot] = -1;
		if (tj_move(b->newroot, dir) < 0) {
			tj_close_keep(b->newroot);
			b->newroot = -TJ_OP_MOVE_MOUNT;
		}
	} else {
		b->newroot = tj_tmpfs(b, dir, 2 << 20, 0755, 0);
	}
	int e = errno;
	close(dir);
	if (b->newroot < 0) {
		return tj_failed(b, TJ_I_ROOTFS, -b->newroot, e, -1, NULL);
	}
	return 0;
}

// tj_fresh_fs mounts a fresh filesystem the jail always has at path: /proc
// of its own PID namespace, devpts.
static int tj_fresh_fs(struct tj_builder *b, const char *path, const char *fstype, const char *const *opts, uint64_t attr) {
	int dir = tj_dest_copy(b, path, 1);
	if (dir < 0) {
		return -1;
	}
	int op = -tj_mount_fs(dir, fstype, opts, attr);
	tj_close_keep(dir);
	return op != 0 ? tj_failed(b, TJ_I_FS, op, errno, -1, path) : 0;
}

// tj_fresh_tmpfs mounts a tmpfs the jail always has at path: /dev, /dev/shm.
static int tj_fresh_tmpfs(struct tj_builder *b, const char *path, int64_t size, unsigned mode, uint64_t attr, int watch) {
	int dir = tj_dest_copy(b, path, 1);
	if (dir < 0) {
		return -1;
	}
	int op = -tj_tmpfs_on(b, dir, size, mode, attr, watch);
	tj_close_keep(dir);
	return op != 0 ? tj_failed(b, TJ_I_FS, op, errno, -1, path) : 0;
}

// tj_proc mounts the jail's /proc, of its own PID namespace.
int tj_proc(struct tj_builder *b) {
	return tj_fresh_fs(b, "/proc", "proc", NULL, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
}

// tj_proc_knobs makes the kernel's knobs in the jail's /proc read-only and
// masks what reveals kernel memory and other users' keys, as container
// runtimes do: Landlock is not the only thing between the command and
// /proc/sys. Entries this kernel lacks are skipped (it is the jail's own
// /proc, nothing a run can change).
int tj_proc_knobs(struct tj_builder *b) {
	static const char *const rdonly[] = {"sys", "sysrq-trigger", "irq", "bus", "fs"};
	static const char *const masked[] = {"kcore", "keys", "timer_list", "kallsyms", "sched_debug",
					     "latency_stats", "timer_stats", "acpi", "scsi"};
	const size_t nrdonly = sizeof rdonly / sizeof rdonly[0], nmasked = sizeof masked / sizeof masked[0];
	int proc = tj_dest_copy(b, "/proc", 1);
	if (proc < 0) {
		return -1;
	}
	const uint64_t ro = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC;
	int r = 0;
	for (size_t i = 0; r == 0 && i < nrdonly + nmasked; i++) {
		int mask = i >= nrdonly;
		const char *name = mask ? masked[i - nrdonly] : rdonly[i];
		int fd = tj_openat2(proc, name, O_PATH | O_CLOEXEC | O_NOFOLLOW, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS);
		if (fd < 0) {
			if (errno != ENOENT) {
				r = tj_failed(b, TJ_I_PROC_KNOB, TJ_OP_OPEN, errno, -1, name);
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
			op = -tj_tmpfs_on(b, fd, 4096, 0555, ro, TJ_NO_WATCH);
		} else {
			op = -tj_attach(b->emptyfile, fd, ro, 0);
		}
		if (op != 0) {
			r = tj_failed(b, TJ_I_PROC_KNOB, op, errno, -1, name);
		}
		close(fd);
	}
	close(proc);
	return r;
}

// tj_dev_nodes binds the plan's device nodes from the host's /dev (mknod
// is not allowed in a user namespace).
static int tj_dev_nodes(struct tj_builder *b) {
	for (int i = 0; i < b->p->ndev_nodes; i++) {
		const char *node = b->p->dev_nodes[i];
		int src = tj_openat2(b->oldroot, node + 1, O_PATH | O_CLOEXEC | O_NOFOLLOW, RESOLVE_BENEATH);
		if (src < 0) {
			return tj_failed(b, TJ_I_DEVNODE, TJ_OP_OPEN, errno, -1, node);
		}
		int dst = tj_dest_copy(b, node, 0);
		int r = dst < 0 ? -1 : 0;
		if (r == 0) {
			int op = -tj_attach(src, dst, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, 0);
			if (op != 0) {
				r = tj_failed(b, TJ_I_DEVBIND, op, errno, -1, node);
			}
			close(dst);
		}
		close(src);
		if (r < 0) {
			return -1;
		}
	}
	return 0;
}

// tj_dev_entries makes the symlinks and directories of the jail's /dev.
static int tj_dev_entries(struct tj_builder *b) {
	int dev = tj_dest_copy(b, "/dev", 1);
	if (dev < 0) {
		return -1;
	}
	static const char *const links[][2] = {
		{"/proc/self/fd", "fd"}, {"/proc/self/fd/0", "stdin"}, {"/proc/self/fd/1", "stdout"},
		{"/proc/self/fd/2", "stderr"}, {"pts/ptmx", "ptmx"},
	};
	int r = 0;
	for (size_t i = 0; r == 0 && i < sizeof links / sizeof links[0]; i++) {
		if (symlinkat(links[i][0], dev, links[i][1]) < 0) {
			r = tj_failed(b, TJ_I_DEVLINK, TJ_OP_SYMLINK, errno, -1, links[i][1]);
		}
	}
	static const char *const dirs[] = {"pts", "shm"};
	for (size_t i = 0; r == 0 && i < sizeof dirs / sizeof dirs[0]; i++) {
		if (mkdirat(dev, dirs[i], 0755) < 0) {
			r = tj_failed(b, TJ_I_DEVDIR, TJ_OP_MKDIR, errno, -1, dirs[i]);
		}
	}
	close(dev);
	return r;
}

// tj_dev makes the jail's minimal /dev: a tmpfs with the host's basic
// device nodes, its own devpts and a /dev/shm of its own.
int tj_dev(struct tj_builder *b) {
	static const char *const ptsopts[] = {"newinstance", NULL, "ptmxmode", "0666", "mode", "0620", NULL};
	if (tj_fresh_tmpfs(b, "/dev", 1 << 20, 0755, MOUNT_ATTR_NOEXEC, TJ_NO_WATCH) < 0 || tj_dev_nodes(b) < 0 ||
	    tj_dev_entries(b) < 0 ||
	    tj_fresh_fs(b, "/dev/pts", "devpts", ptsopts, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC) < 0 ||
	    tj_fresh_tmpfs(b, "/dev/shm", TJ_DEV_SHM_SIZE, 01777, MOUNT_ATTR_NOEXEC, -1) < 0) {
		return -1;
	}
	return 0;
}

// tj_etc writes the files the jail generates (the jail user's identity,
// the host name, loopback names, and resolv.conf in the allow mode).
int tj_etc(struct tj_builder *b) {
	if (b->p->late->root >= 0) {
		return 0; // the template has them
	}
	int etc = tj_dest_copy(b, "/etc", 1);
	if (etc < 0) {
		return -1;
	}
	int r = 0;
	for (int i = 0; r == 0 && i < TJ_ETC_FILES; i++) {
		const char *name = b->p->etc_names[i], *data = b->p->etc_data[i];
		if (name == NULL) {
			continue;
		}
		int fd = openat(etc, name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
		if (fd < 0) {
			r = tj_failed(b, TJ_I_ETC_CREATE, TJ_OP_CREATE, errno, -1, name);
			break;
		}
		size_t n = strlen(data);
		while (n > 0) {
			ssize_t w = write(fd, data, n);
			if (w < 0 && errno == EINTR) {
				continue;
			}
			if (w <= 0) {
				r = tj_failed(b, TJ_I_ETC_WRITE, TJ_OP_WRITE, w < 0 ? errno : EIO, -1, name);
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

// tj_symlink recreates a host symlink (like /bin -> usr/bin) at m->dest.
static int tj_symlink(struct tj_builder *b, int src, const struct tj_mount *m, int index) {
	char target[TJ_PATH_MAX];
	ssize_t n = readlinkat(src, "", target, sizeof target - 1);
	if (n < 0) {
		return tj_failed(b, TJ_I_READLINK, TJ_OP_READLINK, errno, index, m->src);
	}
	target[n] = 0;
	char buf[TJ_PATH_MAX];
	size_t len = strnlen(m->dest, sizeof buf);
	if (len == sizeof buf) {
		return tj_dest_failed(b, ENAMETOOLONG, m->dest);
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

// tj_fdpath writes the path of the init's descriptor fd through the
// jail's own /proc (mounted by then; the init is its pid 1, and the host's
// /proc is no longer at /proc) into buf: how overlayfs's options name a
// layer that is a descriptor (lowerdir and upperdir take paths, and the
// kernels we support cannot take descriptors for them).
static void tj_fdpath(char *buf, size_t size, int fd) {
	static const char prefix[] = "/newroot/proc/self/fd/";
	memcpy(buf, prefix, sizeof prefix);
	tj_utoa(buf + sizeof prefix - 1, size - (sizeof prefix - 1), (uint64_t)fd, 10);
}

// tj_overlay mounts the change set's overlay over the bind just made at
// m->dest (--changes): the bind, read-only, is the lower layer; the upper
// and work directories are the change store's, sent as descriptors. The
// command then writes only the upper layer, and the host directory
// stays as it was. userxattr: overlayfs keeps its whiteouts' and opaque
// directories' marks in user.overlay.* xattrs, the only ones a user
// namespace may write.
static int tj_overlay(struct tj_builder *b, const struct tj_mount *m, const struct tj_source *s, int index) {
	int lower = tj_openat2(b->newroot, m->dest + 1, O_PATH | O_DIRECTORY | O_CLOEXEC, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS);
	if (lower < 0) {
		return tj_failed(b, TJ_I_OVERLAY, TJ_OP_OPEN, errno, index, m->dest);
	}
	int op = 0;
	// The lower layer's mounts stay read-only, whatever the bind was:
	// nothing of the host is written through the overlay.
	struct mount_attr ma;
	memset(&ma, 0, sizeof ma);
	ma.attr_set = MOUNT_ATTR_RDONLY;
	if (syscall(SYS_mount_setattr, lower, "", AT_EMPTY_PATH | AT_RECURSIVE, &ma, sizeof ma) < 0) {
		op = TJ_OP_SETATTR;
	}
	char lowerp[48], upperp[48], workp[48];
	tj_fdpath(lowerp, sizeof lowerp, lower);
	tj_fdpath(upperp, sizeof upperp, b->fds[s->upper]);
	tj_fdpath(workp, sizeof workp, b->fds[s->work]);
	const char *opts[] = {"lowerdir", lowerp, "upperdir", upperp, "workdir", workp, "userxattr", NULL, NULL};
	if (op == 0) {
		int mnt = tj_fsmount("overlay", opts, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
		if (mnt < 0) {
			op = -mnt;
		} else if (tj_move(mnt, lower) < 0) {
			op = TJ_OP_MOVE_MOUNT;
			tj_close_keep(mnt);
		} else {
			// The bind's Landlock rule goes on the overlay's root, what
			// the command sees (tj_ll_open): the lower layer's inode is on
			// the path of nothing in the overlay, and a rule there would
			// leave the workdir unreadable and unwritable.
			tj_close_keep(b->fds[s->slot]);
			b->fds[s->slot] = mnt;
		}
	}
	tj_close_keep(lower);
	return op != 0 ? tj_failed(b, TJ_I_OVERLAY, op, errno, index, m->dest) : 0;
}

// tj_bind shows a host path in the jail: the supervisor opened it (and
// checked what it opened); the init mounts that descriptor, so no host path
// is looked up here.
static int tj_bind(struct tj_builder *b, const struct tj_mount *m, int index) {
	const struct tj_source *s = &b->p->late->sources[index];
	if (s->slot < 0) {
		return 0; // optional and not on this host, or in the template
	}
	int src = b->fds[s->slot];
	if (s->type == S_IFLNK) {
		return tj_symlink(b, src, m, index);
	}
	int dst = tj_dest_copy(b, m->dest, s->type == S_IFDIR);
	if (dst < 0) {
		return -1;
	}
	int op = 0;
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
	tj_close_keep(dst);
	if (op != 0) {
		return tj_failed(b, TJ_I_BIND, op, errno, index, m->dest);
	}
	return s->upper >= 0 ? tj_overlay(b, m, s, index) : 0;
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
	int op = -tj_tmpfs_on(b, dst, m->size, 01777, attr, m->writable ? index : TJ_NO_WATCH);
	tj_close_keep(dst);
	return op != 0 ? tj_failed(b, TJ_I_TMPFS, op, errno, index, m->dest) : 0;
}

// tj_mounts makes the plan's binds and tmpfs mounts, in the plan's order
// (a mount never hides one made before it).
int tj_mounts(struct tj_builder *b) {
	for (int i = 0; i < b->p->nmounts; i++) {
		const struct tj_mount *m = &b->p->mounts[i];
		int r = 0;
		if (m->kind == TJ_MOUNT_BIND) {
			r = tj_bind(b, m, i);
		} else if (m->kind == TJ_MOUNT_TMPFS) {
			r = tj_tmpfs_mount(b, m, i);
		}
		if (r < 0) {
			return -1;
		}
	}
	return 0;
}

// tj_overbinds binds each trusted file inside a read-write bind read-only
// over itself, and each directory above it in that bind over itself (a
// mount point cannot be renamed), so the command cannot change what the
// next run trusts. Each path must still be the object the supervisor
// opened.
int tj_overbinds(struct tj_builder *b) {
	const struct tj_late *l = b->p->late;
	for (int i = 0; i < l->nover; i++) {
		const struct tj_over *o = &l->over[i];
		int fd = tj_openat2(b->newroot, o->dest + 1, O_PATH | O_CLOEXEC | O_NOFOLLOW,
				    RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
		if (fd < 0) {
			return tj_failed(b, TJ_I_OVER, errno == ENOENT ? TJ_OP_TRUSTED_GONE : TJ_OP_OPEN, errno, i, o->dest);
		}
		struct stat st;
		int op = 0, e = 0;
		if (fstat(fd, &st) < 0) {
			op = TJ_OP_STAT, e = errno;
		} else if ((uint64_t)st.st_dev != o->dev || (uint64_t)st.st_ino != o->ino) {
			op = TJ_OP_TRUSTED_CHANGED;
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

// tj_mask hides what a bind shows at m->dest: an empty read-only directory
// or file goes over it. A path that does not exist fails the run: an
// earlier run with the directory read-write could have renamed it, and
// skipping the mask would show the secret under its new name.
static int tj_mask(struct tj_builder *b, const struct tj_mount *m, int index) {
	int dst = tj_openat2(b->newroot, m->dest + 1, O_PATH | O_CLOEXEC, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS);
	if (dst < 0) {
		return tj_failed(b, TJ_I_MASK, errno == ENOENT ? TJ_OP_MASK_MISSING : TJ_OP_OPEN, errno, index, m->dest);
	}
	struct stat st;
	int op = 0;
	const uint64_t attr = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC;
	if (fstat(dst, &st) < 0) {
		op = TJ_OP_STAT;
	} else if (S_ISDIR(st.st_mode)) {
		op = -tj_tmpfs_on(b, dst, 4096, 0555, attr, TJ_NO_WATCH);
	} else {
		op = -tj_attach(b->emptyfile, dst, attr, 0);
	}
	tj_close_keep(dst);
	return op != 0 ? tj_failed(b, TJ_I_MASK, op, errno, index, m->dest) : 0;
}

// tj_masks makes the plan's masks, once every bind is in place and the
// trusted files are bound over themselves: the plan puts them last.
int tj_masks(struct tj_builder *b) {
	for (int i = 0; i < b->p->nmounts; i++) {
		const struct tj_mount *m = &b->p->mounts[i];
		if (m->kind == TJ_MOUNT_MASK && tj_mask(b, m, i) < 0) {
			return -1;
		}
	}
	return 0;
}

// tj_enter_root makes the jail's root read-only and pivots into it,
// detaching the temporary root and with it every host mount.
int tj_enter_root(struct tj_builder *b) {
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
	// of "/": detach it.
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
