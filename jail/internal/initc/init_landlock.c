// The Landlock ruleset, built by the init with the rule paths opened
// inside the jail and enforced by stage 2 (landlock_restrict_self).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "init_internal.h"

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

// tj_ll_open opens the object rule i is on; -1 when it has none here (a
// source that does not exist, or a symlink whose target has its own rule)
// and -2 on failure.
static int tj_ll_open(struct tj_builder *b, const struct tj_ll_path *r, int i) {
	int fd;
	if (r->mount >= 0) {
		// A bind: the rule goes on the very object the supervisor opened
		// on the host (Landlock rules belong to the inode); under an
		// overlay (--changes), the overlay's root (tj_overlay put it in
		// the source's slot).
		const struct tj_source *src = &b->p->late->sources[r->mount];
		if ((src->slot < 0 && !src->intree) || src->type == S_IFLNK) {
			return -1;
		}
		if (src->intree) {
			// In the root template: the jail's root is entered, and
			// the destination is the root of that bind (roottpl keeps
			// a bind out of the template when another mount shares
			// its destination).
			fd = open(b->p->mounts[r->mount].dest, O_PATH | O_CLOEXEC | O_NOFOLLOW);
		} else {
			fd = fcntl(b->fds[src->slot], F_DUPFD_CLOEXEC, 0);
		}
	} else {
		fd = open(r->path, O_PATH | O_CLOEXEC);
	}
	if (fd < 0) {
		tj_failed(b, TJ_I_LL_OPEN, TJ_OP_OPEN, errno, i, r->path);
		return -2;
	}
	return fd;
}

// tj_ll_path adds rule i, with the rights for what its path turns out to
// be, to the ruleset rs.
static int tj_ll_path(struct tj_builder *b, int rs, const struct tj_ll_path *r, int i) {
	int fd = tj_ll_open(b, r, i);
	if (fd == -1) {
		return 0;
	}
	if (fd < 0) {
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
	return fail;
}

// tj_landlock builds the plan's ruleset, if it has one, and gives its fd
// to stage 2.
int tj_landlock(struct tj_builder *b) {
	const struct tj_landlock *l = b->p->landlock;
	b->stage2->landlock_fd = -1;
	if (l == NULL) {
		return 0;
	}
	struct tj_ll_attr attr = {l->fs, l->net, l->scoped};
	int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
	if (rs < 0) {
		return tj_failed(b, TJ_I_LL_CREATE, TJ_OP_NONE, errno, -1, NULL);
	}
	for (int i = 0; i < l->npaths; i++) {
		if (tj_ll_path(b, rs, &l->paths[i], i) < 0) {
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
	b->stage2->landlock_fd = rs;
	b->stage2->landlock_flags = l->flags;
	return 0;
}
