// Stage 2 runs in C, in a child the init clones, so that no second Go
// runtime starts between the init and the command. The supervisor
// prepares every value in Go (stage2.go); the child only makes system
// calls, in the order bubblewrap and runc's nsexec use (tj_child lists
// them): wait for the id maps, drop capabilities, working directory,
// rlimits, Landlock, seccomp last, hand the listener to the supervisor,
// execve. A failure is a record whose step init_steps.h names.
//
// The child shares the init's memory (CLONE_VM, as posix_spawn does): the
// kernel neither copies the page tables at the clone (the init's memory is
// a copy of the supervisor's) nor tears them down at execve. It runs on a
// stack of its own, beside the init, so it must not touch malloc, stdio or
// even errno (the thread-local errno is the init's): it makes raw system
// calls (tj_sys) that return -errno, with every signal blocked until right
// before the execve (the init has put the handlers back to default
// already). Per-process state (credentials, signal handlers, file
// descriptors, rlimits) is its own; per-memory state is not: the huge page
// setting it makes for the command is the init's too until execve, and
// the init restores its own then (init_reap.c).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
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

// tj_sys makes a raw system call: the result, or -errno.
static inline long tj_sys(long n, long a, long b, long c, long d, long e) {
#if defined(__x86_64__)
	long ret;
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8)
			 : "rcx", "r11", "memory");
	return ret;
#elif defined(__aarch64__)
	register long x8 __asm__("x8") = n;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	register long x4 __asm__("x4") = e;
	__asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4) : "memory", "cc");
	return x0;
#else
#error "stage 2 needs a raw system call for this architecture (tj_sys)"
#endif
}

#define SYS0(n) tj_sys(n, 0, 0, 0, 0, 0)
#define SYS1(n, a) tj_sys(n, (long)(a), 0, 0, 0, 0)
#define SYS2(n, a, b) tj_sys(n, (long)(a), (long)(b), 0, 0, 0)
#define SYS3(n, a, b, c) tj_sys(n, (long)(a), (long)(b), (long)(c), 0, 0)
#define SYS4(n, a, b, c, d) tj_sys(n, (long)(a), (long)(b), (long)(c), (long)(d), 0)

uint64_t tj_orig_nofile_cur, tj_orig_nofile_max;
int tj_orig_nofile_ok;
unsigned long tj_orig_slack;
uint64_t tj_orig_sigign;

char *tj_args_start;
size_t tj_args_len;

// tj_read_sigign is this process's SigIgn from /proc/self/status (bit N-1:
// signal N); 0 when it cannot be read.
static uint64_t tj_read_sigign(void) {
	static char buf[16384];
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		return 0;
	}
	size_t n = 0;
	for (;;) {
		ssize_t r = read(fd, buf + n, sizeof buf - 1 - n);
		if (r < 0 && errno == EINTR) {
			continue;
		}
		if (r <= 0) {
			break;
		}
		n += (size_t)r;
		if (n == sizeof buf - 1) {
			break;
		}
	}
	close(fd);
	buf[n] = 0;
	const char *p = strstr(buf, "\nSigIgn:");
	if (p == NULL) {
		return 0;
	}
	return strtoull(p + 8, NULL, 16) & ~((1ULL << (SIGKILL - 1)) | (1ULL << (SIGSTOP - 1)));
}

// Runs before the Go runtime, which raises the soft RLIMIT_NOFILE to the
// hard one: the command gets the original back, as os/exec children do.
// It also notes where the process's arguments are (glibc passes main's
// arguments to constructors): the init, a fork of this process, blanks
// its copy, which /proc/1/cmdline would show inside the jail.
// And it notes the timer slack, which the command gets back: it runs first
// (priority 101), before a program's own constructor may raise the slack
// for its threads (internal/timerslack, which cmd/tooljail imports).
__attribute__((constructor(101))) static void tj_save_start(int argc, char **argv, char **envp) {
	(void)envp;
	struct rlimit r;
	if (getrlimit(RLIMIT_NOFILE, &r) == 0) {
		tj_orig_nofile_cur = r.rlim_cur;
		tj_orig_nofile_max = r.rlim_max;
		tj_orig_nofile_ok = 1;
	}
	long slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
	if (slack > 0) {
		tj_orig_slack = (unsigned long)slack;
	}
	// The signals it was started with ignored: the Go runtime keeps only
	// SIGHUP's and SIGINT's, and the CLI gives its command the rest back
	// (Cmd.IgnoredSignals), as an execve would have. One read of the
	// kernel's SigIgn costs half of 62 rt_sigaction queries.
	tj_orig_sigign = tj_read_sigign();
	if (argc > 0 && argv != NULL && argv[0] != NULL && argv[argc - 1] != NULL) {
		tj_args_start = argv[0];
		tj_args_len = (size_t)(argv[argc - 1] + strlen(argv[argc - 1]) + 1 - argv[0]);
	}
}

size_t tj_record_size(const struct tj_record *r) {
	return offsetof(struct tj_record, path) + strnlen(r->path, sizeof r->path - 1) + 1;
}

long tj_send_record(int sock, const struct tj_record *r, size_t n, int fd) {
	return tj_send_fds(sock, r, n, &fd, fd >= 0 ? 1 : 0);
}

long tj_send_fds(int sock, const void *data, size_t n, const int *fds, int nfds) {
	struct iovec iov = {(void *)data, n};
	struct msghdr mh;
	union {
		char buf[CMSG_SPACE(sizeof(int) * TJ_MAX_SEND_FDS)];
		struct cmsghdr align;
	} u;
	if (nfds < 0 || nfds > TJ_MAX_SEND_FDS) {
		return -EINVAL;
	}
	memset(&mh, 0, sizeof mh);
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	if (nfds > 0) {
		memset(&u, 0, sizeof u);
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
	}
	long r;
	while ((r = SYS3(SYS_sendmsg, sock, &mh, MSG_NOSIGNAL)) == -EINTR) {
	}
	return r < 0 ? r : 0;
}

// tj_fail tells the init what failed (it passes the record on to the
// supervisor) and exits with code.
static __attribute__((noreturn)) void tj_fail(const struct tj_stage2 *s, int step, int err, int index, int code) {
	struct tj_record r;
	memset(&r, 0, offsetof(struct tj_record, path) + 1);
	r.type = TJ_REC_STAGE2_FAIL;
	r.step = step;
	r.err = err;
	r.index = index;
	r.code = code;
	while (SYS3(SYS_write, s->status_fd, &r, tj_record_size(&r)) == -EINTR) {
	}
	for (;;) {
		SYS1(SYS_exit_group, code);
	}
}

// tj_check fails step with the raw system call result r when it is an
// error.
static void tj_check(const struct tj_stage2 *s, int step, long r) {
	if (r < 0) {
		tj_fail(s, step, (int)-r, -1, 125);
	}
}

// tj_wait_for_maps reads the init's byte: stage 2's id maps are written.
static void tj_wait_for_maps(const struct tj_stage2 *s) {
	char b;
	long r;
	while ((r = SYS3(SYS_read, s->sync_fd, &b, 1)) == -EINTR) {
	}
	if (r != 1) {
		// The init failed to write the id maps, or died.
		tj_fail(s, TJ_STEP_SYNC, r < 0 ? (int)-r : 0, -1, 125);
	}
}

// tj_die_with_init makes the kernel kill stage 2 when the init dies, and
// checks that the init was not gone already.
static void tj_die_with_init(const struct tj_stage2 *s) {
	tj_check(s, TJ_STEP_PDEATHSIG, SYS2(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL));
	if (SYS0(SYS_getppid) != s->parent_pid) {
		tj_fail(s, TJ_STEP_PDEATHSIG, 0, -1, 125);
	}
}

// tj_drop_bounding empties the capability bounding set, up to the
// kernel's last capability (where PR_CAPBSET_DROP says EINVAL); it fails
// step with the capability as index, or with index when given (>= 0).
static void tj_drop_bounding(const struct tj_stage2 *s, int step, int index) {
	for (int c = 0; c < 64; c++) {
		long r = SYS2(SYS_prctl, PR_CAPBSET_DROP, c);
		if (r == -EINVAL && c > 0) {
			break;
		}
		if (r < 0) {
			tj_fail(s, step, (int)-r, index >= 0 ? index : c, 125);
		}
	}
}

// tj_set_identity makes a root supervisor's stage 2 without namespaces the
// jail's unprivileged host identity: the bounding set emptied while it
// still has CAP_SETPCAP, no supplementary groups, then gid and uid, which
// clears every capability. Raw system calls: this process's credentials
// only (it has no other threads).
static void tj_set_identity(const struct tj_stage2 *s) {
	if (!s->setid) {
		return;
	}
	tj_drop_bounding(s, TJ_STEP_IDENTITY, 0);
	long r = SYS2(SYS_setgroups, 0, NULL);
	if (r < 0) {
		tj_fail(s, TJ_STEP_IDENTITY, (int)-r, 1, 125);
	}
	if ((r = SYS3(SYS_setresgid, s->gid, s->gid, s->gid)) < 0) {
		tj_fail(s, TJ_STEP_IDENTITY, (int)-r, 2, 125);
	}
	if ((r = SYS3(SYS_setresuid, s->uid, s->uid, s->uid)) < 0) {
		tj_fail(s, TJ_STEP_IDENTITY, (int)-r, 3, 125);
	}
}

// tj_drop_capabilities drops every capability the nested user namespace
// gave this child: it empties the bounding set, sets no_new_privs,
// clears the ambient, inheritable, permitted and effective sets. Without
// namespaces the bounding set is tj_set_identity's to empty, as root; an
// unprivileged stage 2 cannot (no CAP_SETPCAP), and needs not: with
// no_new_privs no execve grants a capability.
static void tj_drop_capabilities(const struct tj_stage2 *s) {
	if (!s->nons) {
		tj_drop_bounding(s, TJ_STEP_CAPBSET, -1);
	}
	tj_check(s, TJ_STEP_NNP, SYS2(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1));
	tj_check(s, TJ_STEP_AMBIENT, SYS2(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL));
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct data[2];
	memset(data, 0, sizeof data);
	tj_check(s, TJ_STEP_CAPSET, SYS2(SYS_capset, &hdr, data));
}

static void tj_set_rlimits(const struct tj_stage2 *s) {
	for (int i = 0; i < s->nrlimits; i++) {
		struct rlimit l = {s->rlimits[i].cur, s->rlimits[i].max};
		long r = SYS4(SYS_prlimit64, 0, s->rlimits[i].resource, &l, NULL);
		if (r < 0) {
			tj_fail(s, TJ_STEP_RLIMIT, (int)-r, i, 125);
		}
	}
}

static void tj_restrict_landlock(const struct tj_stage2 *s) {
	if (s->landlock_fd >= 0) {
		tj_check(s, TJ_STEP_LANDLOCK, SYS2(SYS_landlock_restrict_self, s->landlock_fd, s->landlock_flags));
	}
}

// tj_install_seccomp loads the filter, on this thread only (the child has
// no other), and returns its listener, or -1 when the supervisor did not
// ask for one.
static int tj_install_seccomp(const struct tj_stage2 *s) {
	if (s->filter == NULL) {
		return -1;
	}
	struct sock_fprog prog = {s->filter_len, s->filter};
	long r = SYS3(SYS_seccomp, SECCOMP_SET_MODE_FILTER, s->seccomp_flags, &prog);
	tj_check(s, TJ_STEP_SECCOMP, r);
	return s->notify ? (int)r : -1;
}

// tj_send_ready tells the supervisor that the command is next, with the
// seccomp listener (unless -1).
static void tj_send_ready(const struct tj_stage2 *s, int listener) {
	struct tj_record ready;
	memset(&ready, 0, offsetof(struct tj_record, path) + 1);
	ready.type = TJ_REC_READY;
	// An error: the supervisor is gone.
	tj_check(s, TJ_STEP_READY, tj_send_record(s->sock, &ready, tj_record_size(&ready), listener));
	if (listener >= 0) {
		SYS1(SYS_close, listener);
	}
}

// tj_wait_ack waits, when the supervisor asked for it, until it has
// registered this child.
static void tj_wait_ack(const struct tj_stage2 *s) {
	if (!s->wait_ack) {
		return;
	}
	char ack[256];
	struct iovec iov = {ack, sizeof ack};
	struct msghdr mh;
	memset(&mh, 0, sizeof mh);
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	long r;
	while ((r = SYS3(SYS_recvmsg, s->sock, &mh, 0)) == -EINTR) {
	}
	if (r <= 0) {
		tj_fail(s, TJ_STEP_ACK, r < 0 ? (int)-r : 0, -1, 125);
	}
}

// tj_split points out[0..n) at the n strings that start at *at, each
// NUL-terminated before end, and out[n] at NULL; -1 if they do not fit.
static int tj_split(char **at, char *end, char **out, uint32_t n) {
	char *s = *at;
	for (uint32_t i = 0; i < n; i++) {
		char *nul = s < end ? memchr(s, 0, (size_t)(end - s)) : NULL;
		if (nul == NULL) {
			return -1;
		}
		out[i] = s;
		s = nul + 1;
	}
	out[n] = NULL;
	*at = s;
	return 0;
}

// The warm call's message and its pointers. Static: stage 2 may not
// allocate, and the memory is the init's copy, which nothing else uses.
char tj_call_buf[TJ_CALL_MAX_BYTES];
static char *tj_call_ptrs[TJ_CALL_MAX_STRINGS + 4];

// tj_receive_stdio receives a message of at most size bytes on fd with
// three descriptors, which become 0, 1 and 2: it closes its own first, so
// that the kernel puts them there (the lowest free numbers, in order), and
// checks that it did; recvmsg is all the filter needs to allow. It returns
// the message's length; the end of the socket means the jail was closed
// unused: nothing ran, and stage 2 exits.
static long tj_receive_stdio(const struct tj_stage2 *s, int fd, char *buf, size_t size) {
	for (int i = 0; i < 3; i++) {
		SYS1(SYS_close, i);
	}
	struct iovec iov = {buf, size};
	union {
		char buf[CMSG_SPACE(sizeof(int) * 3)];
		struct cmsghdr align;
	} u;
	struct msghdr mh;
	memset(&mh, 0, sizeof mh);
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = u.buf;
	mh.msg_controllen = sizeof u.buf;
	long n;
	while ((n = SYS3(SYS_recvmsg, fd, &mh, 0)) == -EINTR) {
	}
	if (n == 0) {
		for (;;) {
			SYS1(SYS_exit_group, 0);
		}
	}
	if (n < 0) {
		tj_fail(s, TJ_STEP_CALL, (int)-n, -1, 125);
	}
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	int fds[3] = {-1, -1, -1};
	if (c != NULL && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof fds)) {
		memcpy(fds, CMSG_DATA(c), sizeof fds);
	}
	if (fds[0] != 0 || fds[1] != 1 || fds[2] != 2 || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
		tj_fail(s, TJ_STEP_CALL, EPROTO, -1, 125);
	}
	return n;
}

// tj_wait_for_call is a warm jail's park: confined already, stage 2 waits
// for the supervisor's one message with the command (warm.go's
// encodeCall) and its stdin, stdout and stderr. The strings go into s,
// whose memory the init shares: it reads the paths when the execve fails.
static void tj_wait_for_call(const struct tj_stage2 *s) {
	long n = tj_receive_stdio(s, s->sock, tj_call_buf, sizeof tj_call_buf);
	uint32_t flags;
	if (tj_call_parse((struct tj_stage2 *)s, n, 0, &flags) < 0) {
		tj_fail(s, TJ_STEP_CALL, EPROTO, -1, 125);
	}
}

// tj_wait_for_go is the park of a session's call started ahead: the init
// has parsed the call into s already and sends only its stdio. The byte
// back tells the init that this stage 2 took the call: one that dies
// before it is replaced, one that dies after it is the call's end.
static void tj_wait_for_go(const struct tj_stage2 *s) {
	char go;
	if (tj_receive_stdio(s, s->ahead_fd, &go, 1) != 1) {
		tj_fail(s, TJ_STEP_CALL, EPROTO, -1, 125);
	}
	tj_check(s, TJ_STEP_CALL, SYS3(SYS_write, s->ahead_fd, &go, 1));
	SYS1(SYS_close, s->ahead_fd);
}

int tj_call_parse(struct tj_stage2 *w, long n, int msg_flags, uint32_t *flags) {
	struct tj_call_header h;
	if (n < (long)sizeof h) {
		return -1;
	}
	char *at = tj_call_buf + sizeof h, *end = tj_call_buf + n;
	memcpy(&h, tj_call_buf, sizeof h);
	// The counts are checked one by one first: their sum cannot wrap.
	int bad = (msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || h.magic != TJ_CALL_MAGIC || h.argc == 0 ||
		  h.argc > TJ_CALL_MAX_STRINGS || h.envc > TJ_CALL_MAX_STRINGS || h.npaths > TJ_CALL_MAX_STRINGS ||
		  (uint64_t)h.argc + h.envc + h.npaths > TJ_CALL_MAX_STRINGS - 1 || h.ndir > 1 ||
		  (h.flags & ~(TJ_CALL_TTY | TJ_CALL_KEEP));
	if (bad) {
		return -1;
	}
	char **argv = tj_call_ptrs, **envp = argv + h.argc + 1, **paths = envp + h.envc + 1, **dir = paths + h.npaths + 1;
	if (tj_split(&at, end, argv, h.argc) < 0 || tj_split(&at, end, envp, h.envc) < 0 ||
	    tj_split(&at, end, paths, h.npaths) < 0 || tj_split(&at, end, dir, h.ndir) < 0 || at != end) {
		return -1;
	}
	if (h.ndir == 1) {
		w->dir = dir[0];
	}
	w->argv = argv;
	w->envp = envp;
	w->paths = paths;
	w->npaths = (int)h.npaths;
	w->tty = (h.flags & TJ_CALL_TTY) != 0;
	w->tty_rows = h.tty_rows;
	w->tty_cols = h.tty_cols;
	*flags = h.flags;
	return 0;
}

// tj_tty_step fails the terminal's step at sub-step index when r < 0.
static void tj_tty_step(const struct tj_stage2 *s, int index, long r) {
	if (r < 0) {
		tj_fail(s, TJ_STEP_TTY, (int)-r, index, 125);
	}
}

// tj_open_tty gives the command a terminal of the jail's own devpts
// instance (never the caller's: a host terminal would let TIOCSTI-like
// tricks and its other sessions near the jail): the peer becomes 0, 1
// and 2 and the controlling terminal of this session (setsid made stage 2
// its leader, so the command's group is the foreground one and ^C reaches
// it as SIGINT); the master goes to the supervisor, which relays it. It
// runs confined, as the command would: Landlock grants /dev/pts and
// /dev/ptmx, the filter allows these calls (and denies TIOCSTI on the
// terminal as everywhere). The window size is set before the command can
// ask for it.
static void tj_open_tty(const struct tj_stage2 *s) {
	if (!s->tty) {
		return;
	}
	long m = SYS4(SYS_openat, AT_FDCWD, "/dev/pts/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC, 0);
	tj_tty_step(s, 0, m);
	int unlock = 0;
	tj_tty_step(s, 1, SYS3(SYS_ioctl, m, TIOCSPTLCK, &unlock));
	struct winsize ws;
	memset(&ws, 0, sizeof ws);
	ws.ws_row = s->tty_rows;
	ws.ws_col = s->tty_cols;
	tj_tty_step(s, 2, SYS3(SYS_ioctl, m, TIOCSWINSZ, &ws));
	// By the master, not by a path: no lookup in /dev/pts to race.
	long p = SYS3(SYS_ioctl, m, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
	tj_tty_step(s, 3, p);
	for (int fd = 0; fd < 3; fd++) {
		tj_tty_step(s, 4, SYS3(SYS_dup3, p, fd, 0));
	}
	SYS1(SYS_close, p);
	tj_tty_step(s, 5, SYS3(SYS_ioctl, 0, TIOCSCTTY, 0));
	struct tj_record r;
	memset(&r, 0, offsetof(struct tj_record, path) + 1);
	r.type = TJ_REC_TTY;
	tj_tty_step(s, 6, tj_send_record(s->sock, &r, tj_record_size(&r), (int)m));
	SYS1(SYS_close, m);
}

// tj_ignore_signals ignores the signals the supervisor's caller had
// ignored (tj_stage2.sigign), which the command inherits across execve.
static void tj_ignore_signals(const struct tj_stage2 *s) {
	for (int sig = 1; sig <= 64; sig++) {
		if (!(s->sigign & (1ULL << (sig - 1))) || sig == SIGKILL || sig == SIGSTOP) {
			continue;
		}
		struct tj_ksigaction ign = {(void *)SIG_IGN, 0, NULL, 0};
		long r = SYS4(SYS_rt_sigaction, sig, &ign, NULL, sizeof ign.mask);
		if (r < 0) {
			tj_fail(s, TJ_STEP_SIGIGN, (int)-r, sig, 125);
		}
	}
}

volatile int tj_stage2_execing;

// tj_exec execs the command like a shell: the first candidate that execs;
// one that exists but may not be executed is reported only when none
// execs (126), nothing found is 127. Every signal is unblocked first.
static __attribute__((noreturn)) void tj_exec(const struct tj_stage2 *s) {
	uint64_t none = 0;
	SYS4(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, sizeof none);
	int denied = -1;
	tj_stage2_execing = 1;
	for (int i = 0; i < s->npaths; i++) {
		int e = (int)-SYS3(SYS_execve, s->paths[i], s->argv, s->envp);
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
		tj_fail(s, TJ_STEP_EXEC_DENIED, EACCES, denied, 126);
	}
	tj_fail(s, TJ_STEP_EXEC_NOT_FOUND, ENOENT, -1, 127);
}

// tj_child is stage 2: each step makes its system calls and, when one
// fails, sends its failure record and exits (tj_fail).
static int tj_child(void *arg) {
	const struct tj_stage2 *s = arg;
	// Signal handlers: the init's, back to default already (init_reap.c).
	tj_wait_for_maps(s);
	// No controlling terminal: no TIOCSTI on the caller's tty.
	tj_check(s, TJ_STEP_SETSID, SYS0(SYS_setsid));
	// Before the parent death signal: a change of credentials clears it.
	tj_set_identity(s);
	tj_die_with_init(s);
	tj_drop_capabilities(s);
	// As the jail user without capabilities, as the command will be.
	tj_check(s, TJ_STEP_CHDIR, SYS1(SYS_chdir, s->dir));
	tj_set_rlimits(s);
	// Per memory: the init's too, until execve gives the command its own.
	tj_check(s, TJ_STEP_THP, SYS2(SYS_prctl, PR_SET_THP_DISABLE, s->thp_disable));
	// The timer slack the supervisor started with, not the one it may
	// have raised for its own threads (tj_save_start).
	if (s->timer_slack != 0) {
		tj_check(s, TJ_STEP_TIMERSLACK, SYS2(SYS_prctl, PR_SET_TIMERSLACK, s->timer_slack));
	}
	tj_ignore_signals(s);
	// A warm jail, or a call started ahead, learns whether it has a
	// terminal with its call.
	if (!s->warm && !s->ahead) {
		tj_open_tty(s);
	}
	tj_restrict_landlock(s);
	int listener = tj_install_seccomp(s);
	// Under the filter from here: sendmsg, recvmsg, close, close_range,
	// rt_sigprocmask, write, exit_group and execve are in every allowlist
	// (seccomp's required calls).
	if (s->ahead) {
		// The ready record is the call's: it waits for the call.
		tj_wait_for_go(s);
	}
	tj_send_ready(s, listener);
	tj_wait_ack(s);
	if (s->warm) {
		tj_wait_for_call(s);
	}
	if (s->warm || s->ahead) {
		tj_open_tty(s);
	}
	// Only 0, 1 and 2 reach the command; status_fd closes at a successful
	// execve, which tells the init.
	tj_check(s, TJ_STEP_FDS, SYS3(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC));
	tj_exec(s);
}

// The child's stack. The child runs on it until it has exec'd or exited,
// which the init learns only later (tj_stage2_release).
#define TJ_STACK_SIZE (256 << 10)

// The stacks of the stage 2s that may still run on them: a run's one, or
// a session's running call's (until its execve) and the one parked ahead.
// A session's init starts a stage 2 per call: each stack must be given
// back, or the session's memory grows with every call (256 KiB of address
// space, a few pages of memory). A stack the table has no room for is
// left mapped, as before there was one.
#define TJ_MAX_STACKS 8
static struct {
	long pid;
	char *stack;
} tj_stacks[TJ_MAX_STACKS];

void tj_stage2_release(long pid) {
	for (int i = 0; i < TJ_MAX_STACKS; i++) {
		if (tj_stacks[i].pid == pid && pid > 0) {
			munmap(tj_stacks[i].stack, TJ_STACK_SIZE);
			tj_stacks[i].pid = 0;
			tj_stacks[i].stack = NULL;
		}
	}
}

static void tj_stack_note(long pid, char *stack) {
	for (int i = 0; i < TJ_MAX_STACKS; i++) {
		if (tj_stacks[i].pid == 0) {
			tj_stacks[i].pid = pid;
			tj_stacks[i].stack = stack;
			return;
		}
	}
}

long tj_stage2_start(const struct tj_stage2 *s) {
	char *stack = mmap(NULL, TJ_STACK_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stack == MAP_FAILED) {
		return -errno;
	}
	// A guard page below it.
	if (mprotect(stack, 4096, PROT_NONE) < 0) {
		int e = errno;
		munmap(stack, TJ_STACK_SIZE);
		return -e;
	}
	uint64_t all = ~(uint64_t)0, old;
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, &old, sizeof all);
	int pid = clone(tj_child, stack + TJ_STACK_SIZE, (int)(s->clone_flags | CLONE_VM | SIGCHLD), (void *)s);
	int e = errno;
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, sizeof old);
	if (pid < 0) {
		munmap(stack, TJ_STACK_SIZE);
		return -e;
	}
	tj_stack_note(pid, stack);
	return pid;
}
