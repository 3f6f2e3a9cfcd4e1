// Stage 2 runs in C, in a child the init forks, so that no second Go
// runtime starts between the init and the command: a Go start costs
// milliseconds (threads, heap, package init), and its threads must be torn
// down again at execve. The init prepares every value in Go (stage2.go);
// the child only makes system calls, in the order bubblewrap and runc's
// nsexec use: wait for the id maps, drop capabilities, working directory,
// rlimits, Landlock, seccomp last, hand the listener to the supervisor,
// execve.
//
// The child is forked from a multi-threaded Go process: it runs on a copy
// of the calling thread only, so it must not touch the Go runtime, malloc
// or stdio. It uses raw system calls on stack memory, with every signal
// blocked from before the fork until its handlers are back to default.
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#include <linux/capability.h>
#include <linux/seccomp.h>

#include "stage2.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif

uint64_t tj_orig_nofile_cur, tj_orig_nofile_max;
int tj_orig_nofile_ok;

// Runs before the Go runtime, which raises the soft RLIMIT_NOFILE to the
// hard one: the command gets the original back, as os/exec children do.
__attribute__((constructor)) static void tj_save_nofile(void) {
	struct rlimit r;
	if (getrlimit(RLIMIT_NOFILE, &r) == 0) {
		tj_orig_nofile_cur = r.rlim_cur;
		tj_orig_nofile_max = r.rlim_max;
		tj_orig_nofile_ok = 1;
	}
}

// The kernel's struct sigaction, for raw rt_sigaction.
struct tj_ksigaction {
	void *handler;
	unsigned long flags;
	void *restorer;
	uint64_t mask;
};

static void tj_sigmask(uint64_t set, uint64_t *old) {
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &set, old, sizeof set);
}

static __attribute__((noreturn)) void tj_fail(const struct tj_stage2 *s, int step, int err, int index, int code) {
	struct tj_status st = {step, err, index, code};
	ssize_t n;
	do {
		n = write(s->status_fd, &st, sizeof st);
	} while (n < 0 && errno == EINTR);
	_exit(code);
}

// Go's handlers would run Go code in this child: back to default for every
// signal the Go runtime catches (ignored ones stay ignored, as at execve).
static void tj_default_handlers(void) {
	for (int sig = 1; sig <= 64; sig++) {
		struct tj_ksigaction old, dfl;
		if (sig == SIGKILL || sig == SIGSTOP) {
			continue;
		}
		if (syscall(SYS_rt_sigaction, sig, NULL, &old, sizeof old.mask) != 0) {
			continue;
		}
		if (old.handler == (void *)SIG_IGN || old.handler == (void *)SIG_DFL) {
			continue;
		}
		memset(&dfl, 0, sizeof dfl);
		dfl.handler = (void *)SIG_DFL;
		syscall(SYS_rt_sigaction, sig, &dfl, NULL, sizeof dfl.mask);
	}
}

static int tj_send_ready(const struct tj_stage2 *s, int listener) {
	struct iovec iov = {(void *)s->ready, s->ready_len};
	struct msghdr mh;
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	memset(&mh, 0, sizeof mh);
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	if (listener >= 0) {
		memset(&u, 0, sizeof u);
		mh.msg_control = u.buf;
		mh.msg_controllen = sizeof u.buf;
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &listener, sizeof(int));
	}
	ssize_t n;
	do {
		n = sendmsg(s->sock, &mh, MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	return n < 0 ? -1 : 0;
}

static __attribute__((noreturn)) void tj_child(const struct tj_stage2 *s) {
	char b;
	ssize_t n;

	tj_default_handlers();
	do {
		n = read(s->sync_fd, &b, 1);
	} while (n < 0 && errno == EINTR);
	if (n != 1) {
		// The init failed to write the id maps, or died.
		tj_fail(s, TJ_STEP_SYNC, n < 0 ? errno : 0, -1, 125);
	}
	if (setsid() < 0) {
		// No controlling terminal: no TIOCSTI on the caller's tty.
		tj_fail(s, TJ_STEP_SETSID, errno, -1, 125);
	}
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0) {
		tj_fail(s, TJ_STEP_PDEATHSIG, errno, -1, 125);
	}
	if (getppid() != s->parent_pid) {
		tj_fail(s, TJ_STEP_PDEATHSIG, 0, -1, 125); // the init is gone already
	}

	// The nested user namespace gave this child every capability in it:
	// empty the bounding set (up to the kernel's last capability, where
	// PR_CAPBSET_DROP says EINVAL), set no_new_privs, clear the ambient,
	// inheritable, permitted and effective sets.
	for (int c = 0; c < 64; c++) {
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0) {
			if (errno == EINVAL && c > 0) {
				break;
			}
			tj_fail(s, TJ_STEP_CAPBSET, errno, c, 125);
		}
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		tj_fail(s, TJ_STEP_NNP, errno, -1, 125);
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0) {
		tj_fail(s, TJ_STEP_AMBIENT, errno, -1, 125);
	}
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct data[2];
	memset(data, 0, sizeof data);
	if (syscall(SYS_capset, &hdr, data) < 0) {
		tj_fail(s, TJ_STEP_CAPSET, errno, -1, 125);
	}

	// As the jail user without capabilities, as the command will be.
	if (chdir(s->dir) < 0) {
		tj_fail(s, TJ_STEP_CHDIR, errno, -1, 125);
	}
	for (int i = 0; i < s->nrlimits; i++) {
		struct rlimit r = {s->rlimits[i].cur, s->rlimits[i].max};
		if (setrlimit(s->rlimits[i].resource, &r) < 0) {
			tj_fail(s, TJ_STEP_RLIMIT, errno, i, 125);
		}
	}
	if (prctl(PR_SET_THP_DISABLE, s->thp_disable, 0, 0, 0) < 0) {
		tj_fail(s, TJ_STEP_THP, errno, -1, 125);
	}
	if (s->landlock_fd >= 0 && syscall(SYS_landlock_restrict_self, s->landlock_fd, s->landlock_flags) < 0) {
		tj_fail(s, TJ_STEP_LANDLOCK, errno, -1, 125);
	}

	int listener = -1;
	if (s->filter != NULL) {
		// This thread only: the child has no other.
		struct sock_fprog prog = {s->filter_len, s->filter};
		long r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, s->seccomp_flags, &prog);
		if (r < 0) {
			tj_fail(s, TJ_STEP_SECCOMP, errno, -1, 125);
		}
		if (s->notify) {
			listener = (int)r;
		}
	}
	// Under the filter from here: sendmsg, recvmsg, close, close_range,
	// rt_sigprocmask, write, exit_group and execve are in every allowlist
	// (seccomp's required calls).
	if (tj_send_ready(s, listener) < 0) {
		tj_fail(s, TJ_STEP_READY, errno, -1, 125); // the supervisor is gone
	}
	if (listener >= 0) {
		close(listener);
	}
	if (s->wait_ack) {
		char ack[256];
		struct iovec iov = {ack, sizeof ack};
		struct msghdr mh;
		memset(&mh, 0, sizeof mh);
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		do {
			n = recvmsg(s->sock, &mh, 0);
		} while (n < 0 && errno == EINTR);
		if (n <= 0) {
			tj_fail(s, TJ_STEP_ACK, n < 0 ? errno : 0, -1, 125);
		}
	}
	// Only 0, 1 and 2 reach the command; status_fd closes at a successful
	// execve, which tells the init.
	if (syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC) < 0) {
		tj_fail(s, TJ_STEP_FDS, errno, -1, 125);
	}
	tj_sigmask(0, NULL);

	// Like a shell: the first candidate that execs; one that exists but
	// may not be executed is reported only when none execs (126), nothing
	// found is 127.
	int denied = -1;
	for (int i = 0; i < s->npaths; i++) {
		execve(s->paths[i], s->argv, s->envp);
		int e = errno;
		if (e == ENOENT || e == ENOTDIR) {
			continue;
		}
		if (e == EACCES) {
			if (denied < 0) {
				denied = i;
			}
			continue;
		}
		tj_fail(s, TJ_STEP_EXEC, e, i, 126);
	}
	if (denied >= 0) {
		tj_fail(s, TJ_STEP_EXEC, EACCES, denied, 126);
	}
	tj_fail(s, TJ_STEP_EXEC, ENOENT, -1, 127);
}

long tj_stage2_start(const struct tj_stage2 *s) {
	uint64_t old;
	tj_sigmask(~(uint64_t)0, &old);
	long pid = syscall(SYS_clone, s->clone_flags | SIGCHLD, NULL, NULL, NULL, 0);
	if (pid == 0) {
		tj_child(s);
	}
	int e = errno;
	tj_sigmask(old, NULL);
	return pid < 0 ? -e : pid;
}
