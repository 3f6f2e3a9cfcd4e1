// The jail's init in C: PID 1 of the jail, forked by the supervisor
// without an exec. See init.c for what it does, plan.go for the Go
// side that compiles its plan and init_steps.h for its failure records.
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
	// upper, work: slots of the overlay's upper and work directories
	// (--changes): the bind is then the read-only lower layer of an
	// overlay mounted over it; -1: a plain bind.
	int upper, work;
	// intree: the bind is already in the root template (tj_late.root):
	// slot is -1, nothing is mounted, and its Landlock rule goes on what
	// its destination shows.
	int intree;
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
	// root: the slot of a root template's clone (jail/internal/roottpl),
	// the jail's root with the plan's read-only binds, its /etc files and
	// every mount point on it made; -1: the init builds the root.
	int root;
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

#define TJ_ETC_FILES 5

// At most this many binds (descriptors) in one plan, sent this many to a
// message (the kernel takes at most 253).
#define TJ_MAX_SOURCES 4096
#define TJ_FDS_PER_MSG 250

// Mount ids of the tmpfs instances the init tracks as its own (mount
// points may be created only on those): the jail root, /dev, /dev/shm,
// one per tmpfs mount and per masked directory.
#define TJ_MAX_OWNED 4096

// At most this many arena chunks; a bigger plan forks with all memory.
#define TJ_KEEP_MAX 16

// tj_init is everything the init does, compiled by the supervisor before
// the fork: the init only makes system calls with it.
struct tj_init {
	unsigned long clone_flags;
	int cgroup_fd; // >= 0: clone3 straight into this cgroup
	// The supervisor's descriptors that become the init's 0, 1, 2 (stdio),
	// 3 (the supervisor socket) and 4 (the sync pipe's read end).
	int fds[5];
	int drop_groups;
	int nons; // no namespaces: nonsreap.c runs instead of the init (TJ_SIG_KILLALL)
	// session: the init runs one call after another, each the supervisor
	// sends it, until the supervisor closes its socket (init_session.c).
	int session;
	const char *base; // the host directory the temporary root goes on
	struct tj_mount *mounts;
	int nmounts;
	struct tj_late *late; // shared with the supervisor
	char *const *dev_nodes; // bound from the host: "/dev/null", ... (jail/initplan.go's devNodes)
	int ndev_nodes;
	const char *etc_names[TJ_ETC_FILES];
	const char *etc_data[TJ_ETC_FILES];
	const char *hostname;
	int netnone;
	// The allow mode (netallow): the ports of the listeners the init makes
	// on 127.0.0.1 in the jail's network namespace and sends the
	// supervisor (init_net.c), in this order: HTTP proxy, SOCKS5 proxy,
	// DNS (one UDP and one TCP socket).
	int netallow;
	int net_ports[3];
	struct tj_landlock *landlock; // NULL: no Landlock
	struct tj_stage2 stage2;
	// The plan's own mappings (arena.go): the fork keeps them
	// when it leaves the supervisor's other memory out (tj_init_start).
	uint64_t keep_lo[TJ_KEEP_MAX], keep_hi[TJ_KEEP_MAX];
	int nkeep;
};

// TJ_SIG_KILLALL asks the reaper of a run without namespaces (nonsreap.c) to
// kill every process the run left and end it; it is also the reaper's
// parent death signal.
#define TJ_SIG_KILLALL 40

// tj_init_start forks the init (it never returns there) and returns its
// pid, with a pidfd for it in *pidfd, or -errno. Every signal is blocked
// in the child until its handlers are back to default; the init keeps
// them blocked and takes them with sigwaitinfo.
long tj_init_start(const struct tj_init *p, int *pidfd);

#endif
