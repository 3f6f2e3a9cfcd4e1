// The init's last steps: start stage 2 (stage2.c), which becomes the
// command, then live as the jail's PID 1: reap every orphan and forward
// signals until the command ends, report its status and exit, which makes
// the kernel kill whatever else is left in the PID namespace.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "init_internal.h"

// tj_default_handlers puts back the default action of every signal that
// has a handler: Go's handlers would run Go code in this process. Ignored
// signals stay ignored, as at an execve, except SIGCHLD: the init reaps.
// Stage 2 inherits the result.
void tj_default_handlers(void) {
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

// tj_stage2_maps writes the id maps of stage 2 (pid): the nested namespace
// maps the jail user (1000) to the init's uid 0, so files the command
// writes belong to the invoking host user. It returns 0, or the failed
// file's index (0 setgroups, 1 uid_map, 2 gid_map) + 1.
static int tj_stage2_maps(long pid) {
	char dir[32] = "/proc/", num[24], path[48];
	tj_utoa(num, sizeof num, (uint64_t)pid, 10);
	strcat(dir, num);
	static const char *const files[] = {"/setgroups", "/uid_map", "/gid_map"};
	static const char *const data[] = {"deny", "1000 0 1\n", "1000 0 1\n"};
	for (int i = 0; i < 3; i++) {
		strcpy(path, dir);
		strcat(path, files[i]);
		if (tj_write_file(path, data[i]) < 0) {
			return i + 1;
		}
	}
	return 0;
}

// tj_stage2_copy completes the init's copy of stage 2's plan: the seccomp
// filter from the late part, the supervisor socket. The Landlock ruleset
// is there already (tj_landlock).
static struct tj_stage2 *tj_stage2_copy(struct tj_builder *b) {
	struct tj_stage2 *s = b->stage2;
	const struct tj_late *l = b->p->late;
	if (l->filter_len > 0) {
		s->filter = l->filter;
		s->filter_len = l->filter_len;
		s->seccomp_flags = l->seccomp_flags;
		s->notify = l->notify;
	}
	s->sock = b->sock;
	return s;
}

// tj_pass_failure hands a failure record of stage 2 on to the supervisor.
// execve says EACCES for a directory too: the init sees the command's
// files, so it can tell which.
static void tj_pass_failure(struct tj_builder *b, struct tj_record *r) {
	const struct tj_stage2 *s = b->stage2;
	r->path[sizeof r->path - 1] = 0;
	r->is_dir = 0;
	if (r->step == TJ_STEP_EXEC_DENIED && r->index >= 0 && r->index < s->npaths) {
		struct stat st;
		r->is_dir = stat(s->paths[r->index], &st) == 0 && S_ISDIR(st.st_mode);
	}
	tj_send_record(b->sock, r, tj_record_size(r), -1);
}

// tj_fork_stage2 forks stage 2 and writes its id maps: stage 2 goes on
// to its confinement, and the read end of its status pipe (a failure
// record, or the end of file at its execve) is in *status, its mount
// namespace in *mntns_fd (-1 when it has none of its own, or it could not
// be opened: nothing is held). It returns the pid, or -1 with what failed
// in *f.
long tj_fork_stage2(struct tj_builder *b, int *status_fd, int *mntns_fd, struct tj_fork_fail *f) {
	struct tj_stage2 *s = tj_stage2_copy(b);
	int sync[2], status[2];
	memset(f, 0, sizeof *f);
	f->step = TJ_I_STAGE2;
	f->op = TJ_OP_NONE;
	f->index = -1;
	if (pipe2(sync, O_CLOEXEC) < 0) {
		f->err = errno;
		return -1;
	}
	if (pipe2(status, O_CLOEXEC) < 0) {
		f->err = errno;
		close(sync[0]);
		close(sync[1]);
		return -1;
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
	long pid = tj_stage2_start(s);
	close(sync[0]);
	close(status[1]);
	if (pid < 0) {
		close(sync[1]);
		close(status[0]);
		f->err = (int)-pid;
		return -1;
	}
	// Without namespaces stage 2 has no id maps: only the sync byte.
	int failed = b->p->nons ? 0 : tj_stage2_maps(pid), e = errno;
	*mntns_fd = -1;
	if (failed == 0 && !b->p->nons) {
		char path[48] = "/proc/", num[24];
		tj_utoa(num, sizeof num, (uint64_t)pid, 10);
		strcat(path, num);
		strcat(path, "/ns/mnt");
		*mntns_fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	// Not dumpable again before stage 2 may go on to the command.
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	if (failed != 0) {
		f->step = TJ_I_STAGE2_MAP;
		f->op = TJ_OP_WRITE;
		f->err = e;
		f->index = failed - 1;
	} else {
		ssize_t w;
		do {
			w = write(sync[1], "", 1);
		} while (w < 0 && errno == EINTR);
		if (w != 1) {
			f->op = TJ_OP_WRITE;
			f->err = w < 0 ? errno : EIO;
		}
	}
	close(sync[1]);
	if (f->err != 0) {
		if (*mntns_fd >= 0) {
			close(*mntns_fd);
			*mntns_fd = -1;
		}
		close(status[0]);
		kill((pid_t)pid, SIGKILL);
		waitpid((pid_t)pid, NULL, __WALL);
		tj_stage2_release(pid);
		return -1;
	}
	*status_fd = status[0];
	return pid;
}

// tj_hold_mntns holds fd, the command's mount namespace, until its exit
// record is sent (tj_exit_record), in place of one held before.
void tj_hold_mntns(struct tj_builder *b, int fd) {
	if (b->held_mntns >= 0) {
		close(b->held_mntns);
	}
	b->held_mntns = fd;
}

// tj_await_stage2 waits until stage 2 (pid) has exec'd the command or
// failed: a failure goes on to the supervisor, and the reaper reports
// stage 2's end after it. Stage 2 sets the command's huge page setting on
// the memory it shares with the init; own_thp, the init's, comes back.
void tj_await_stage2(struct tj_builder *b, long pid, int status_fd, int own_thp) {
	struct tj_stage2 *s = b->stage2;
	struct tj_record rec;
	ssize_t n;
	do {
		n = read(status_fd, &rec, sizeof rec);
	} while (n < 0 && errno == EINTR);
	close(status_fd);
	if (own_thp >= 0 && prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0) != own_thp) {
		prctl(PR_SET_THP_DISABLE, own_thp, 0, 0, 0);
	}
	if (n > (ssize_t)offsetof(struct tj_record, path)) {
		tj_pass_failure(b, &rec); // stage 2 failed, and exits
	} else if (n == 0) {
		// Its execve closed the pipe (or its end did): it runs on its
		// stack no more.
		tj_stage2_release(pid);
		if (tj_stage2_execing) {
			// The supervisor's Cmd.WaitExec, as os/exec's Start
			// returns once the child has exec'd.
			struct tj_record r;
			memset(&r, 0, offsetof(struct tj_record, path) + 1);
			r.type = TJ_REC_EXECED;
			tj_send_record(b->sock, &r, tj_record_size(&r), -1);
		}
	}
	tj_stage2_execing = 0;
	// A session's next call restricts itself with the same ruleset.
	if (s->landlock_fd >= 0 && !b->p->session) {
		close(s->landlock_fd);
	}
	b->command = (pid_t)pid;
}

// tj_start_stage2 forks stage 2, writes its id maps and waits until it has
// exec'd the command or failed (tj_await_stage2).
int tj_start_stage2(struct tj_builder *b) {
	int own_thp = prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0), status, mntns;
	struct tj_fork_fail f;
	long pid = tj_fork_stage2(b, &status, &mntns, &f);
	if (pid < 0) {
		return tj_failed(b, f.step, f.op, f.err, f.index, NULL);
	}
	tj_hold_mntns(b, mntns);
	tj_await_stage2(b, pid, status, own_thp);
	return 0;
}

// A tmpfs of the jail that fills up makes the command's writes fail with
// ENOSPC, which it may report in words of its own, or not at all, and
// then clean up (pip removes its temporary files): the space is free
// again by the end. So the init samples each writable tmpfs mount it made
// (one without a size too: the kernel's default, half of RAM, can fill),
// by the mount's own descriptor (the command cannot unmount or replace
// it), every TJ_SAMPLE_MS while the command runs, whenever it wakes, and
// once after the end, and reports a mount that any sample found without
// a free block or inode. Filling up and cleaning up within one interval
// goes unseen; a fill that is left, or that lasts an interval, is seen.

void tj_watch_mount(struct tj_builder *b, int fd, int mount, int64_t size) {
	if (b->nwatch == TJ_MAX_WATCH) {
		close(fd);
		return;
	}
	struct tj_fill *f = &b->watch[b->nwatch];
	memset(f, 0, sizeof *f);
	f->mount = mount;
	f->size_bytes = size;
	struct statfs st;
	if (fstatfs(fd, &st) == 0) {
		f->size_bytes = (int64_t)st.f_blocks * (int64_t)st.f_bsize; // as the kernel rounded it
	}
	b->watch_fd[b->nwatch++] = fd;
}

void tj_sample_mounts(struct tj_builder *b) {
	for (int i = 0; i < b->nwatch; i++) {
		struct statfs st;
		if (fstatfs(b->watch_fd[i], &st) != 0) {
			continue;
		}
		struct tj_fill *f = &b->watch[i];
		int64_t used = (int64_t)(st.f_blocks - st.f_bfree) * (int64_t)st.f_bsize;
		if (used > f->peak_used_bytes) {
			f->peak_used_bytes = used;
		}
		if (st.f_blocks > 0 && st.f_bavail == 0) {
			f->full |= TJ_FULL_SPACE;
		}
		if (st.f_files > 0 && st.f_ffree == 0) {
			f->full |= TJ_FULL_INODES;
		}
	}
}

// tj_report sends the command's end: how it ended and what it and every
// orphan reaped used, how many processes it left running, how full the
// watched tmpfs mounts got. The init's copies of the command's stdio are
// closed first: nothing of the run writes there any more (tj_end_jail, or
// the reaper of a run without namespaces, has killed it all), so the
// outputs end with the record.
__attribute__((noreturn)) void tj_report(struct tj_builder *b, int ws, int leftover) {
	close(0);
	close(1);
	close(2);
	tj_exit_record(b, ws, leftover, NULL);
	_exit(0);
}

void tj_exit_record(struct tj_builder *b, int ws, int leftover, const struct rusage *usage) {
	tj_sample_mounts(b);
	struct tj_record r;
	memset(&r, 0, offsetof(struct tj_record, path) + 1);
	r.type = TJ_REC_EXIT;
	r.leftover = leftover;
	r.nfills = b->nwatch;
	memcpy(r.fills, b->watch, sizeof r.fills[0] * (size_t)b->nwatch);
	if (WIFEXITED(ws)) {
		r.exit_code = WEXITSTATUS(ws);
	} else if (WIFSIGNALED(ws)) {
		r.signal = WTERMSIG(ws);
		r.exit_code = 128 + r.signal;
	}
	struct rusage ru;
	if (usage != NULL) {
		ru = *usage;
	}
	if (usage != NULL || getrusage(RUSAGE_CHILDREN, &ru) == 0) {
		r.utime_us = (int64_t)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec;
		r.stime_us = (int64_t)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec;
		r.maxrss_kib = ru.ru_maxrss;
	}
	tj_send_record(b->sock, &r, tj_record_size(&r), -1);
	// The command's mounts go now, after the record (tj_builder).
	tj_hold_mntns(b, -1);
}

// tj_reaper_signals is what a reaper waits for: the children's ends and
// the signals it forwards to the command (tj_forward).
void tj_reaper_signals(sigset_t *set) {
	sigemptyset(set);
	static const int fwd[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH, SIGCONT, SIGALRM};
	for (size_t i = 0; i < sizeof fwd / sizeof fwd[0]; i++) {
		sigaddset(set, fwd[i]);
	}
	sigaddset(set, SIGCHLD);
}

// tj_forward sends sig to the command's process group, as a terminal
// would; to the command itself too only when it has left that group, or
// it would get the signal twice.
void tj_forward(pid_t command, int sig) {
	kill(-command, sig);
	if (getpgid(command) != command) {
		kill(command, sig);
	}
}

// tj_end_jail kills and reaps everything left in the jail's PID namespace
// once the command has ended: its exit record then means that nothing of
// the run is left but the init, which exits next, so the supervisor can
// answer on it without waiting for the namespaces' teardown. Only PID 1 of
// a namespace of its own may do this: kill(-1) anywhere else would reach
// every process of the user.
//
// It returns how many processes were still running and were killed (-1
// when it is not PID 1): the orphans that had ended already are reaped
// first, uncounted (the kernel reparents a process's children before the
// process itself becomes a zombie, so the command's are all here), and
// then every process that dies of the SIGKILL is one. A zombie whose
// living parent is killed comes here with its own status: not counted.
int tj_end_jail(void) {
	if (getpid() != 1) {
		return -1;
	}
	for (;;) {
		pid_t got = waitpid(-1, NULL, WNOHANG | __WALL);
		if (got < 0 && errno == EINTR) {
			continue;
		}
		if (got <= 0) {
			break;
		}
	}
	kill(-1, SIGKILL);
	int killed = 0;
	for (;;) {
		int ws;
		pid_t got = waitpid(-1, &ws, __WALL);
		if (got < 0 && errno != EINTR) {
			break; // ECHILD: none left
		}
		if (got > 0 && WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL) {
			killed++;
		}
	}
	return killed;
}

// tj_reap waits for every child until the command ends, forwarding the
// signals a terminal would send to its process group, then reports and
// exits.
void tj_reap(struct tj_builder *b) {
	pid_t pid = b->command;
	sigset_t set;
	tj_reaper_signals(&set);
	const struct timespec tick = {0, TJ_SAMPLE_MS * 1000000L};
	for (;;) {
		int sig = b->nwatch > 0 ? sigtimedwait(&set, NULL, &tick) : sigwaitinfo(&set, NULL);
		tj_sample_mounts(b);
		if (sig < 0) {
			if (errno == EINTR || errno == EAGAIN) {
				continue;
			}
			tj_failed(b, TJ_I_WAIT, TJ_OP_NONE, errno, -1, NULL);
			tj_die(b);
		}
		if (sig != SIGCHLD) {
			tj_forward(pid, sig);
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
			if (got == pid) {
				int leftover = tj_end_jail();
				tj_report(b, ws, leftover);
			}
			// else an orphan
		}
	}
}
