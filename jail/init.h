// The jail's init in C: PID 1 of the jail, forked by the supervisor
// without an exec. See init.c for what it does and initplan.go for the
// Go side that compiles its plan.
#ifndef TOOLJAIL_INIT_H
#define TOOLJAIL_INIT_H

#include <stdint.h>

#include "stage2.h"

enum {
	TJ_MOUNT_BIND = 1,
	TJ_MOUNT_TMPFS,
	TJ_MOUNT_MASK,
};

// tj_mount is one mount of the plan; the plan's list is already in the
// order the mounts are made. A bind's source is not a path: the
// supervisor opens it and hands over the descriptor (tj_source).
struct tj_mount {
	int kind;
	int writable;
	int64_t size; // tmpfs, bytes; 0 is the kernel's default
	const char *src, *dest; // src only names the source in errors
};

// tj_source is what the supervisor opened on the host for one bind of the
// plan (same index), filled in after the fork.
struct tj_source {
	int slot;     // the descriptor's place among those sent with the sync; -1: an optional source that does not exist
	int detached; // a detached mount tree made by a root supervisor: moved as it is, attributes set
	unsigned type; // S_IFMT of the source; S_IFLNK: recreate the symlink
};

// tj_over is a file tooljail trusts (a profile, its cache) inside a
// read-write bind, bound read-only over itself, or a directory above it
// in that bind, bound over itself so that it cannot be renamed away.
struct tj_over {
	const char *dest;    // inside the jail
	uint64_t dev, ino;   // what dest must be
	int readonly;
};

// tj_late is the part of the plan the supervisor fills in after the fork
// (the host paths of an unprivileged run are opened in the init's mount
// namespace), in memory shared with the init, before the sync byte.
struct tj_late {
	int nfds; // descriptors sent over the socket with the sync
	struct tj_source *sources; // one per mount of the plan
	struct tj_over *over;
	int nover;
	struct sock_filter *filter; // room for BPF_MAXINSNS; filter_len 0: no seccomp
	unsigned short filter_len;
	unsigned int seccomp_flags;
	int notify;
};

// tj_ll_path is a Landlock rule whose rights depend on what its path
// turns out to be: a path inside the jail, or the source of a bind.
struct tj_ll_path {
	const char *path;
	int mount;               // >= 0: the rule is on this bind's source descriptor
	uint64_t dir, file, dev; // rights for a directory, a file, a device node
	int dir_only;            // an error unless a directory
};

struct tj_ll_port {
	uint64_t access, port;
};

struct tj_landlock {
	uint64_t fs, net, scoped; // the handled rights (struct landlock_ruleset_attr)
	unsigned int flags;       // landlock_restrict_self's, for stage 2
	struct tj_ll_path *paths;
	int npaths;
	struct tj_ll_port *ports;
	int nports;
};

#define TJ_ETC_FILES 4

// At most this many binds (descriptors) in one plan, sent this many to a
// message (the kernel takes at most 253).
#define TJ_MAX_SOURCES 4096
#define TJ_FDS_PER_MSG 250

// Mount ids of the tmpfs instances the init tracks as its own (mount
// points may be created only on those): the jail root, /dev, /dev/shm,
// one per tmpfs mount and per masked directory.
#define TJ_MAX_OWNED 4096

// tj_init is everything the init does, compiled by the supervisor before
// the fork: the init only makes system calls with it.
// At most this many arena chunks; a bigger plan forks with all memory.
#define TJ_KEEP_MAX 16

struct tj_init {
	unsigned long clone_flags;
	int cgroup_fd; // >= 0: clone3 straight into this cgroup
	// The supervisor's descriptors that become the init's 0, 1, 2 (stdio),
	// 3 (the supervisor socket) and 4 (the sync pipe's read end).
	int fds[5];
	int drop_groups;
	const char *base; // the host directory the temporary root goes on
	struct tj_mount *mounts;
	int nmounts;
	struct tj_late *late; // shared with the supervisor
	const char *etc_names[TJ_ETC_FILES];
	const char *etc_data[TJ_ETC_FILES];
	const char *hostname;
	int netnone;
	struct tj_landlock *landlock; // NULL: no Landlock
	struct tj_stage2 stage2;
	// The plan's own mappings (initplan.go's arena): the fork keeps them
	// when it leaves the supervisor's other memory out (tj_init_start).
	uint64_t keep_lo[TJ_KEEP_MAX], keep_hi[TJ_KEEP_MAX];
	int nkeep;
};

// The init's steps, for its failure records.
enum {
	TJ_I_SYNC = 1,   // waiting for the supervisor's id maps
	TJ_I_FDS,        // descriptors into place
	TJ_I_SETGROUPS,  // drop supplementary groups
	TJ_I_SETID,      // become uid and gid 0 of the namespace (index: 0 gid, 1 uid)
	TJ_I_RECVFDS,    // receive the sources' descriptors
	TJ_I_PRIVATE,    // make mounts private
	TJ_I_BASE,       // temporary root on base
	TJ_I_PIVOT_TMP,  // pivot_root into the temporary root
	TJ_I_OLDROOT,    // open /oldroot
	TJ_I_MASKFILE,   // create /empty
	TJ_I_ROOTFS,     // the jail's root tmpfs
	TJ_I_PROC,       // /proc
	TJ_I_DEV,        // /dev tmpfs
	TJ_I_DEVNODE,    // open a host device node (path: its name)
	TJ_I_DEVBIND,    // bind a device node
	TJ_I_DEVLINK,    // /dev symlinks
	TJ_I_DEVDIR,     // /dev/pts, /dev/shm directories
	TJ_I_PTS,        // /dev/pts
	TJ_I_SHM,        // /dev/shm
	TJ_I_ETC,        // /etc files (path: the name)
	TJ_I_DEST,       // a mount destination (path)
	TJ_I_BIND,       // a bind
	TJ_I_SYMLINK,    // recreating a symlink source
	TJ_I_TMPFS,      // a tmpfs
	TJ_I_MASK,       // a mask
	TJ_I_OVER,       // a trusted file bound over itself (index: tj_late.over)
	TJ_I_PROCRO,     // /proc knobs read-only or masked (path: the entry)
	TJ_I_RDONLY,     // the jail root read-only
	TJ_I_PIVOT,      // pivot_root into the jail root
	TJ_I_DETACH,     // detach the host's root
	TJ_I_HOSTNAME,   // sethostname
	TJ_I_LOOPBACK,   // bring lo up
	TJ_I_LL_CREATE,  // landlock_create_ruleset
	TJ_I_LL_OPEN,    // open a rule's path (index: the rule)
	TJ_I_LL_DIRONLY, // a directory-only rule on something else
	TJ_I_LL_RULE,    // landlock_add_rule for a path
	TJ_I_LL_PORT,    // landlock_add_rule for a port
	TJ_I_STAGE2,     // fork stage 2
	TJ_I_STAGE2_MAP, // stage 2's id maps (index: 0 setgroups, 1 uid_map, 2 gid_map)
	TJ_I_WAIT,       // waiting for the command
};

// The system call a step failed in.
enum {
	TJ_OP_NONE = 0,
	TJ_OP_OPEN,
	TJ_OP_STAT,
	TJ_OP_KIND, // exists, but is not a directory (index 1) or a file (0)
	TJ_OP_OWN,  // would be created inside a bind of a host directory
	TJ_OP_CREATE,
	TJ_OP_MKDIR,
	TJ_OP_WRITE,
	TJ_OP_FSOPEN,
	TJ_OP_FSCONFIG,
	TJ_OP_FSMOUNT,
	TJ_OP_MOVE_MOUNT,
	TJ_OP_OPEN_TREE,
	TJ_OP_SETATTR,
	TJ_OP_STATX,
	TJ_OP_READLINK,
	TJ_OP_SYMLINK,
	TJ_OP_SOCKET,
	TJ_OP_IOCTL_GET,
	TJ_OP_IOCTL_SET,
	TJ_OP_TOO_MANY, // more tmpfs mounts than the init tracks
	TJ_OP_CHDIR,
	TJ_OP_MISSING, // a mask or a trusted file is not there
	TJ_OP_CHANGED, // a trusted file is not the object the supervisor opened
};

// tj_init_start forks the init (it never returns there) and returns its
// pid, with a pidfd for it in *pidfd, or -errno. Every signal is blocked
// in the child until its handlers are back to default; the init keeps
// them blocked and takes them with sigwaitinfo.
long tj_init_start(const struct tj_init *p, int *pidfd);

#endif
