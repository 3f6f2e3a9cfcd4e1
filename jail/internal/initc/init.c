// The jail's init: PID 1 of the jail, uid 0 of its user namespace, with
// capabilities there and none on the host. The supervisor forks it with
// every namespace at once and no exec (init_fork.c): a second Go runtime
// would start its threads, heap and packages on every run, charged to the
// run. The supervisor compiles the whole plan in Go (plan.go); the
// init only makes system calls with it, in the order tj_init_main lists:
//
//   - descriptors into place, everything else the supervisor had closed;
//   - wait until the supervisor has written the id maps and opened the
//     host paths, become uid 0 of the namespace (the jail's host identity,
//     never the host's root), take the sources' descriptors;
//   - the filesystem view (mounts/mounts.c), the way bubblewrap builds it: a
//     tmpfs becomes a temporary root with the host's root moved below it
//     (/oldroot), the jail's root is a second tmpfs (/newroot) populated
//     from /oldroot, and a final pivot_root enters it and detaches
//     everything else;
//   - host name and loopback, and the allow mode's listeners, which go to
//     the supervisor (init_net.c), the Landlock ruleset
//     (init_landlock.c, its paths resolve in the jail);
//   - stage 2 (stage2.c), then reap every orphan and forward signals until
//     the command ends, report its status and exit (init_reap.c), which
//     makes the kernel kill whatever else is left in the PID namespace.
//
// A step that fails records why (tj_failed) and returns -1; tj_die sends
// the record to the supervisor, which turns it into the run's error with
// the texts of init_steps.h. A step that fails because the supervisor is
// gone records nothing: there is no one to tell.
//
// The init is a fork of a multi-threaded Go process: it runs on a copy of
// the calling thread only, so it must not touch the Go runtime, malloc or
// stdio: system calls, stack memory and the plan (a copy of the
// supervisor's memory at the fork).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "init_internal.h"

static int tj_become_root(struct tj_builder *b);

void tj_step(struct tj_builder *b, int result) {
	if (result < 0) {
		tj_die(b);
	}
}

void tj_builder_start(struct tj_builder *b, const struct tj_init *p) {
	memset(b, 0, sizeof *b);
	b->p = p;
	// Stage 2 is prepared in the plan; the steps complete this process's
	// copy (its Landlock ruleset, its seccomp filter).
	b->stage2 = (struct tj_stage2 *)&p->stage2;
	b->sock = p->fds[3];
	b->oldroot = b->newroot = b->emptyfile = b->held_mntns = -1;
}

void tj_init_main(const struct tj_init *p) {
	// Static: the builder holds the owned mount ids and a failure record,
	// too much for a stack frame. The init is a process of its own.
	static struct tj_builder b;
	tj_builder_start(&b, p);

	// The init itself: its descriptors, the supervisor's go, uid 0 of the jail.
	tj_default_handlers();
	// The supervisor's thread that forked this process stays until it has
	// reaped it; if the supervisor dies before the sync, the init sees the
	// end of the pipe.
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	tj_step(&b, tj_take_fds(&b));
	tj_step(&b, tj_wait_for_sync());
	tj_hide();
	tj_step(&b, tj_become_root(&b));
	tj_step(&b, tj_recv_fds(&b));

	// The jail's filesystem (mounts/mounts.c). Its directories, mount
	// points and /etc files get the same modes whatever the caller's
	// umask, as in a root template (jail/internal/roottpl); the command
	// gets the caller's umask back.
	mode_t caller_umask = umask(022);
	tj_step(&b, tj_temporary_root(&b));
	tj_step(&b, tj_jail_root(&b));
	tj_step(&b, tj_proc(&b));
	tj_step(&b, tj_proc_knobs(&b));
	tj_step(&b, tj_dev(&b));
	tj_step(&b, tj_etc(&b));
	tj_step(&b, tj_mounts(&b));
	tj_step(&b, tj_overbinds(&b));
	tj_step(&b, tj_masks(&b));
	tj_step(&b, tj_enter_root(&b));
	umask(caller_umask);

	// The rest of the jail (init_net.c, init_landlock.c).
	tj_step(&b, tj_hostname(&b));
	tj_step(&b, tj_loopback(&b));
	tj_step(&b, tj_net_listeners(&b));
	tj_step(&b, tj_landlock(&b));
	tj_close_sources(&b);

	// The command (init_reap.c, stage2.c), or a session's calls
	// (init_session.c).
	if (p->session) {
		tj_session(&b);
	}
	tj_step(&b, tj_start_stage2(&b));
	tj_reap(&b);
}

// tj_die sends the failure, if one was recorded, and exits.
void tj_die(struct tj_builder *b) {
	if (b->rec.type != 0) {
		tj_send_record(b->sock, &b->rec, tj_record_size(&b->rec), -1);
	}
	_exit(125);
}

void tj_utoa(char *buf, size_t n, uint64_t v, int base) {
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

// tj_take_fds starts a session of the init's own and moves the
// supervisor's descriptors to 0..4, closing every other one the fork
// copied: only stdio and the supervisor socket may cross into the jail,
// and a copy of another run's descriptor would keep that run's pipes open.
int tj_take_fds(struct tj_builder *b) {
	if (setsid() < 0) {
		return tj_failed(b, TJ_I_FDS, TJ_OP_NONE, errno, -1, NULL);
	}
	int tmp[5];
	for (int i = 0; i < 5; i++) {
		tmp[i] = fcntl(b->p->fds[i], F_DUPFD_CLOEXEC, 5);
		if (tmp[i] < 0) {
			return tj_failed(b, TJ_I_FDS, TJ_OP_NONE, errno, -1, NULL);
		}
	}
	for (int i = 0; i < 5; i++) {
		// 0, 1 and 2 are the command's; 3 and 4 are close-on-exec.
		if (dup3(tmp[i], i, i < 3 ? 0 : O_CLOEXEC) < 0) {
			return tj_failed(b, TJ_I_FDS, TJ_OP_NONE, errno, -1, NULL);
		}
		if (i == 3) {
			b->sock = 3;
		}
	}
	if (syscall(SYS_close_range, 5, ~0U, 0) < 0) {
		return tj_failed(b, TJ_I_FDS, TJ_OP_NONE, errno, -1, NULL);
	}
	return 0;
}

// tj_wait_for_sync waits for the supervisor's sync byte: the id maps are
// written and the late part of the plan is filled in.
int tj_wait_for_sync(void) {
	char c;
	ssize_t n;
	do {
		n = read(4, &c, 1);
	} while (n < 0 && errno == EINTR);
	if (n != 1) {
		return -1; // the supervisor is gone, or gave up on this run
	}
	close(4);
	return 0;
}

// tj_hide keeps the init out of the jail's reach: nothing in the jail may
// ptrace it or open its /proc files. Not before the sync: the supervisor
// writes the id maps in /proc/PID.
void tj_hide(void) {
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	// /proc/1/cmdline is readable in the jail even so, and this memory is
	// a copy of the supervisor's: blank its arguments (host paths, flags).
	static const char name[] = "tooljail-init";
	if (tj_args_start != NULL && tj_args_len > 0) {
		memset(tj_args_start, 0, tj_args_len);
		memcpy(tj_args_start, name, tj_args_len < sizeof name ? tj_args_len - 1 : sizeof name);
	}
	prctl(PR_SET_NAME, name, 0, 0, 0);
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
	// The change of credentials cleared the parent-death signal: arm it
	// again, then make sure the supervisor did not die in between (its end
	// of the socket would have hung up).
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	struct pollfd hup = {.fd = b->sock, .events = POLLRDHUP};
	if (poll(&hup, 1, 0) < 0 || (hup.revents & (POLLHUP | POLLRDHUP | POLLERR | POLLNVAL))) {
		return -1;
	}
	return 0;
}

// tj_recv_fds takes the descriptors of the sources, which the supervisor
// sent over the socket before the sync byte, TJ_FDS_PER_MSG a message.
int tj_recv_fds(struct tj_builder *b) {
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
		ssize_t n = recvmsg(b->sock, &mh, MSG_CMSG_CLOEXEC);
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

// tj_close_sources closes the sources' descriptors: they are mounted and
// their Landlock rules made.
void tj_close_sources(struct tj_builder *b) {
	for (int i = 0; i < b->nfds; i++) {
		close(b->fds[i]);
	}
	b->nfds = 0;
}
