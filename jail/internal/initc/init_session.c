// A session's init (jail.Session): the jail is built once, as for a run,
// and then the init runs one call after another, each a new stage 2 that
// the supervisor's message describes (the warm call's message, received
// here, so that stage 2 starts fresh and confines itself for each call).
// Between calls it reaps what the calls that kept their processes left,
// and it ends the session, killing everything, when the supervisor closes
// its socket (or dies: the parent death signal).
//
// Every call runs in the session's PID namespace (so /proc, ps and
// signals work as in one jail; a namespace of its own per call would
// need a /proc of its own, which a mount namespace the jail cannot
// change refuses). When a call that does not keep its processes ends,
// the init kills every process of the session that is neither one a
// call kept nor a descendant of one (tj_kill_unkept): what the call left
// is gone before its exit record, as a run's leftovers are. A call that
// keeps them (TJ_CALL_KEEP) adds every process then alive to the kept.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "init_internal.h"
#include "stage2.h"

// The plan's working directory, each call's unless it names its own.
static const char *tj_base_dir;
// The plan's clone flags for stage 2.
static unsigned long tj_base_flags;

// The next call's stage 2, started ahead (tj_start_ahead) while the
// session waits: it confines itself and parks before its ready record
// until the call comes, so that a call costs the supervisor's message,
// the go and the command's execve, not stage 2's namespaces and
// confinement. pid 0: none.
static struct {
	pid_t pid;
	int go_fd;     // the init's end of the socket the call's stdio goes on
	int status_fd; // stage 2's status pipe (tj_fork_stage2)
	int mntns_fd;  // its mount namespace, held once it takes the call
} tj_ahead = {0, -1, -1, -1};

// The init's own huge page setting: stage 2 sets the command's on the
// memory they share before it parks.
static int tj_init_thp = -1;

// tj_session_fail ends the session with a failure record of its own step.
static __attribute__((noreturn)) void tj_session_fail(struct tj_builder *b, int err) {
	tj_failed(b, TJ_I_SESSION, TJ_OP_NONE, err, -1, NULL);
	tj_die(b);
}

// The processes the calls kept, by pid and start time (a pid can be
// reused): at most TJ_MAX_KEPT, more than any pids limit a session has.
#define TJ_MAX_KEPT 4096
struct tj_proc {
	pid_t pid, ppid;
	unsigned long long start;
	int zombie;
};
static struct tj_proc tj_kept[TJ_MAX_KEPT];
static int tj_nkept;
static struct tj_proc tj_procs[TJ_MAX_KEPT];
static struct tj_proc tj_killed[TJ_MAX_KEPT];

// tj_proc_stat reads pid's parent, start time and state from
// /proc/PID/stat (the comm field may hold spaces and parentheses: the
// fields follow its last ')'); 0, or -1 when it is gone.
static int tj_proc_stat(int procfd, const char *name, struct tj_proc *p) {
	char path[64], buf[1024];
	size_t n = strlen(name);
	if (n + sizeof "/stat" > sizeof path) {
		return -1;
	}
	memcpy(path, name, n);
	memcpy(path + n, "/stat", sizeof "/stat");
	int fd = openat(procfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		return -1;
	}
	ssize_t r = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (r <= 0) {
		return -1;
	}
	buf[r] = 0;
	char *at = strrchr(buf, ')');
	if (at == NULL || at[1] != ' ') {
		return -1;
	}
	at += 2;
	p->zombie = *at == 'Z' || *at == 'X';
	// Fields 3 (state) to 22 (starttime); ppid is field 4.
	unsigned long long v = 0;
	for (int field = 3; field <= 22; field++) {
		while (*at == ' ') {
			at++;
		}
		v = 0;
		while (*at >= '0' && *at <= '9') {
			v = v * 10 + (unsigned long long)(*at - '0');
			at++;
		}
		if (field == 4) {
			p->ppid = (pid_t)v;
		}
		while (*at != ' ' && *at != 0) {
			at++;
		}
		if (*at == 0 && field < 22) {
			return -1;
		}
	}
	p->start = v;
	return 0;
}

// tj_scan lists the session's processes but the init (pid 1) into
// tj_procs; their number.
static int tj_scan(void) {
	int procfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (procfd < 0) {
		return 0;
	}
	int n = 0;
	char buf[4096];
	for (;;) {
		long got = syscall(SYS_getdents64, procfd, buf, sizeof buf);
		if (got <= 0) {
			break;
		}
		for (long off = 0; off < got;) {
			struct {
				uint64_t ino;
				int64_t off;
				unsigned short reclen;
				unsigned char type;
				char name[];
			} *d = (void *)(buf + off);
			off += d->reclen;
			if (d->name[0] < '1' || d->name[0] > '9' || n >= TJ_MAX_KEPT) {
				continue;
			}
			struct tj_proc p;
			memset(&p, 0, sizeof p);
			p.pid = 0;
			for (const char *c = d->name; *c >= '0' && *c <= '9'; c++) {
				p.pid = p.pid * 10 + (*c - '0');
			}
			if (p.pid > 1 && tj_proc_stat(procfd, d->name, &p) == 0) {
				tj_procs[n++] = p;
			}
		}
	}
	close(procfd);
	return n;
}

static int tj_in(const struct tj_proc *set, int n, pid_t pid, unsigned long long start) {
	for (int i = 0; i < n; i++) {
		if (set[i].pid == pid && set[i].start == start) {
			return 1;
		}
	}
	return 0;
}

// tj_is_kept: p is kept, or descends from a kept process (its children
// made after its call, a server's workers); the parents are looked up in
// the scan of n processes.
static int tj_is_kept(const struct tj_proc *p, int n) {
	for (int depth = 0; p != NULL && depth < 64; depth++) {
		if (tj_in(tj_kept, tj_nkept, p->pid, p->start)) {
			return 1;
		}
		const struct tj_proc *parent = NULL;
		for (int i = 0; i < n && p->ppid > 1; i++) {
			if (tj_procs[i].pid == p->ppid) {
				parent = &tj_procs[i];
				break;
			}
		}
		p = parent;
	}
	return 0;
}

// tj_keep_all keeps every process of the session now alive, and forgets
// the kept ones that are gone.
static void tj_keep_all(void) {
	int n = tj_scan();
	int k = 0;
	for (int i = 0; i < n; i++) {
		if (!tj_procs[i].zombie && tj_procs[i].pid != tj_ahead.pid && k < TJ_MAX_KEPT) {
			tj_kept[k++] = tj_procs[i];
		}
	}
	tj_nkept = k;
}

// tj_kill_unkept kills every process of the session that is not kept,
// scan after scan until one finds none alive (what forks meanwhile is
// found by the next), and returns how many it killed.
static int tj_kill_unkept(void) {
	int nkilled = 0;
	for (int round = 0; round < 1000; round++) {
		int n = tj_scan(), alive = 0;
		for (int i = 0; i < n; i++) {
			const struct tj_proc *p = &tj_procs[i];
			if (p->zombie || p->pid == tj_ahead.pid || tj_is_kept(p, n)) {
				continue;
			}
			alive++;
			kill(p->pid, SIGKILL);
			if (nkilled < TJ_MAX_KEPT && !tj_in(tj_killed, nkilled, p->pid, p->start)) {
				tj_killed[nkilled++] = *p;
			}
		}
		if (alive == 0) {
			break;
		}
		sched_yield();
	}
	// The kept that are gone are forgotten: their pids may come again.
	if (tj_nkept == 0) {
		return nkilled;
	}
	int n = tj_scan(), k = 0;
	for (int i = 0; i < tj_nkept; i++) {
		for (int j = 0; j < n; j++) {
			if (tj_procs[j].pid == tj_kept[i].pid && tj_procs[j].start == tj_kept[i].start && !tj_procs[j].zombie) {
				tj_kept[k++] = tj_kept[i];
				break;
			}
		}
	}
	tj_nkept = k;
	return nkilled;
}

// tj_kill_call kills the running call: the command, and the rest of what
// it started when its exit is reaped (tj_kill_unkept); the process group
// too of a call that keeps its processes, whose others stay.
static void tj_kill_call(pid_t call, int keep) {
	if (call <= 0) {
		return;
	}
	if (keep) {
		kill(-call, SIGKILL);
	}
	kill(call, SIGKILL);
}

// tj_ahead_forget closes what the init holds of the stage 2 started ahead.
static void tj_ahead_forget(void) {
	if (tj_ahead.go_fd >= 0) {
		close(tj_ahead.go_fd);
	}
	if (tj_ahead.status_fd >= 0) {
		close(tj_ahead.status_fd);
	}
	if (tj_ahead.mntns_fd >= 0) {
		close(tj_ahead.mntns_fd);
	}
	tj_ahead.pid = 0;
	tj_ahead.go_fd = tj_ahead.status_fd = tj_ahead.mntns_fd = -1;
}

// tj_drop_ahead kills the stage 2 started ahead, before the init starts
// another (they would share the plan's memory).
static void tj_drop_ahead(void) {
	if (tj_ahead.pid > 0) {
		kill(tj_ahead.pid, SIGKILL);
		waitpid(tj_ahead.pid, NULL, __WALL);
		tj_stage2_release(tj_ahead.pid);
	}
	tj_ahead_forget();
	if (tj_init_thp >= 0) {
		prctl(PR_SET_THP_DISABLE, tj_init_thp, 0, 0, 0);
	}
}

// tj_start_ahead starts the next call's stage 2, to park. A failure is
// not the session's: the call then starts its own, which reports it.
static void tj_start_ahead(struct tj_builder *b, unsigned long base) {
	if (tj_ahead.pid > 0) {
		return;
	}
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		return;
	}
	struct tj_stage2 *s = b->stage2;
	s->clone_flags = base;
	s->warm = 0;
	s->ahead = 1;
	s->ahead_fd = sv[1];
	s->dir = tj_base_dir;
	s->tty = 0;
	struct tj_fork_fail f;
	int status, mntns;
	long pid = tj_fork_stage2(b, &status, &mntns, &f);
	close(sv[1]);
	if (pid < 0) {
		close(sv[0]);
		s->ahead = 0;
		return;
	}
	tj_ahead.pid = (pid_t)pid;
	tj_ahead.go_fd = sv[0];
	tj_ahead.status_fd = status;
	tj_ahead.mntns_fd = mntns;
}

// tj_go_ahead gives the call parsed into the plan to the stage 2 started
// ahead, with its stdio, and waits for its execve as tj_start_stage2
// does; 0, or -1 when there is none that can take it. One that parked in
// another working directory than the call's is dropped.
static int tj_go_ahead(struct tj_builder *b, const int fds[3]) {
	if (tj_ahead.pid <= 0) {
		return -1;
	}
	if (strcmp(b->stage2->dir, tj_base_dir) != 0) {
		tj_drop_ahead();
		return -1;
	}
	char go = 'g';
	long n = tj_send_fds(tj_ahead.go_fd, &go, 1, fds, 3);
	char took = 0;
	if (n == 0) {
		do {
			n = read(tj_ahead.go_fd, &took, 1);
		} while (n < 0 && errno == EINTR);
	}
	if (n != 1) {
		// It died waiting (killed from the host, or by a kept process
		// where Landlock does not scope signals), not yet reaped.
		tj_drop_ahead();
		return -1;
	}
	long pid = tj_ahead.pid;
	int status = tj_ahead.status_fd;
	tj_hold_mntns(b, tj_ahead.mntns_fd);
	tj_ahead.status_fd = tj_ahead.mntns_fd = -1;
	tj_ahead_forget();
	tj_await_stage2(b, pid, status, tj_init_thp);
	return 0;
}

// tj_start_call starts the call of a message already parsed into s, with
// the received descriptors as its stdin, stdout and stderr: by the stage
// 2 started ahead, or else by one of its own.
// The running call keeps its processes (TJ_CALL_KEEP).
static int tj_call_keeps;

static void tj_start_call(struct tj_builder *b, const int fds[3], int null_fd, unsigned long base, uint32_t flags) {
	struct tj_stage2 *s = b->stage2;
	tj_call_keeps = (flags & TJ_CALL_KEEP) != 0;
	// The watched mounts' findings are the call's.
	for (int i = 0; i < b->nwatch; i++) {
		b->watch[i].full = 0;
		b->watch[i].peak_used_bytes = 0;
	}
	if (tj_go_ahead(b, fds) == 0) {
		for (int i = 0; i < 3; i++) {
			close(fds[i]);
		}
		return;
	}
	for (int i = 0; i < 3; i++) {
		if (dup2(fds[i], i) < 0) {
			tj_session_fail(b, errno);
		}
		close(fds[i]);
	}
	s->clone_flags = base;
	s->warm = 0;
	s->ahead = 0;
	tj_step(b, tj_start_stage2(b));
	// Stage 2 has its copies: the call's outputs end with it.
	for (int i = 0; i < 3; i++) {
		dup2(null_fd, i);
	}
}

// tj_session_message takes one message of the supervisor: a call, a kill
// of the running call, or the session's end (the socket closed).
static void tj_session_message(struct tj_builder *b, pid_t *call, int null_fd, unsigned long base) {
	struct iovec iov = {tj_call_buf, sizeof tj_call_buf};
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
	ssize_t n = recvmsg(b->sock, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
		return;
	}
	if (n <= 0) {
		// The supervisor is done with the session, or gone.
		tj_end_jail();
		_exit(0);
	}
	int fds[3] = {-1, -1, -1}, nfds = 0;
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	if (c != NULL && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
		nfds = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		memcpy(fds, CMSG_DATA(c), sizeof(int) * (size_t)(nfds < 3 ? nfds : 3));
	}
	uint32_t magic = 0, flags = 0;
	memcpy(&magic, tj_call_buf, sizeof magic < (size_t)n ? sizeof magic : (size_t)n);
	if (n == sizeof magic && magic == TJ_KILL_MAGIC && nfds == 0) {
		tj_kill_call(*call, tj_call_keeps);
		return;
	}
	// The plan's working directory, unless the call names one.
	b->stage2->dir = tj_base_dir;
	if (*call > 0 || nfds != 3 || tj_call_parse(b->stage2, n, mh.msg_flags, &flags) < 0) {
		// The supervisor sends one call at a time, well formed.
		tj_session_fail(b, EPROTO);
	}
	tj_start_call(b, fds, null_fd, base, flags);
	*call = b->command;
}

// tj_session_reap reaps what has ended; the call's end is its exit record:
// the command's status and usage, and how many of its processes were
// killed after it (0 when it keeps them).
static void tj_session_reap(struct tj_builder *b, pid_t *call) {
	for (;;) {
		int ws;
		struct rusage ru;
		pid_t got = wait4(-1, &ws, WNOHANG | __WALL, &ru);
		if (got < 0 && errno == EINTR) {
			continue;
		}
		if (got <= 0) {
			return;
		}
		// A stage 2 that failed, or died parked, ran on its stack until
		// its end.
		tj_stage2_release(got);
		if (got == tj_ahead.pid) {
			tj_ahead_forget(); // it died parked: the next call starts its own
			continue;
		}
		if (got != *call) {
			continue; // left by a call that kept its processes
		}
		int leftover = 0;
		if (tj_call_keeps) {
			tj_keep_all();
		} else {
			leftover = tj_kill_unkept();
		}
		tj_exit_record(b, ws, leftover, &ru);
		*call = 0;
		// While the supervisor answers and its client asks again.
		tj_start_ahead(b, tj_base_flags);
	}
}

void tj_session(struct tj_builder *b) {
	sigset_t set;
	tj_reaper_signals(&set);
	int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	// The supervisor's placeholder stdio (/dev/null) between calls.
	int null_fd = fcntl(0, F_DUPFD_CLOEXEC, 3);
	if (sfd < 0 || null_fd < 0) {
		tj_session_fail(b, errno);
	}
	unsigned long base = b->stage2->clone_flags;
	tj_base_dir = b->stage2->dir;
	tj_base_flags = base;
	tj_init_thp = prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0);
	struct tj_record ready;
	memset(&ready, 0, offsetof(struct tj_record, path) + 1);
	ready.type = TJ_REC_SESSION;
	if (tj_send_record(b->sock, &ready, tj_record_size(&ready), -1) < 0) {
		_exit(0);
	}
	tj_start_ahead(b, base);
	pid_t call = 0;
	for (;;) {
		struct pollfd p[2] = {{.fd = b->sock, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
		int n = poll(p, 2, call > 0 && b->nwatch > 0 ? TJ_SAMPLE_MS : -1);
		if (call > 0) {
			tj_sample_mounts(b);
		}
		if (n < 0) {
			if (errno == EINTR) {
				continue;
			}
			tj_session_fail(b, errno);
		}
		// Signals first: a call's end is reported before the next call
		// is read (the supervisor sends it only after that record).
		if (p[1].revents != 0) {
			struct signalfd_siginfo si;
			while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
				if (si.ssi_signo != SIGCHLD && call > 0) {
					tj_forward(call, (int)si.ssi_signo);
				}
			}
			tj_session_reap(b, &call);
		}
		if (p[0].revents != 0) {
			tj_session_message(b, &call, null_fd, base);
		}
	}
}
