// The reaper of a run without namespaces (--allow-degraded namespaces,
// nons.go): what the init is to a jail, where no namespace can be made.
// The supervisor forks it as it forks the init (init_fork.c), with no
// CLONE_NEW* flag, and it
//
//   - takes its descriptors and waits for the supervisor's go, as the init
//     does (init.c), and becomes the run's child subreaper, so that every
//     process the command leaves becomes its child rather than escaping
//     to the host's init;
//   - builds the Landlock ruleset on the host paths the supervisor opened
//     (init_landlock.c) and starts stage 2 (stage2.c), which has no id
//     maps to wait for; a root supervisor's stage 2 becomes the jail's
//     unprivileged host identity first;
//   - reaps and forwards signals until the command ends, or until the
//     supervisor asks for the end (TJ_SIG_KILLALL, also its parent death
//     signal), then kills every process left, reaps them, reports the
//     command's status and exits.
//
// There is no PID namespace whose end kills the rest: the processes left
// are found as this process's children (/proc/thread-self/children),
// killed, and their own children, reparented here, found next, until
// none is left. With a cgroup the supervisor kills the group as well.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "init_internal.h" // in initc, the parent directory (-I)

// tj_children_readable checks, before anything runs, that the processes
// the command will leave can be found.
static int tj_children_readable(struct tj_builder *b) {
	int fd = open("/proc/thread-self/children", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		return tj_failed(b, TJ_I_CHILDREN, TJ_OP_NONE, errno, -1, NULL);
	}
	close(fd);
	return 0;
}

// tj_kill_children sends SIGKILL to every child of this process.
static void tj_kill_children(void) {
	int fd = open("/proc/thread-self/children", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		return; // checked at the start; the loop of tj_kill_all waits on
	}
	char buf[4096];
	long pid = -1;
	ssize_t n;
	while ((n = read(fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)) {
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] >= '0' && buf[i] <= '9') {
				pid = (pid < 0 ? 0 : pid * 10) + (buf[i] - '0');
				continue;
			}
			if (pid > 0) {
				kill((pid_t)pid, SIGKILL);
			}
			pid = -1;
		}
	}
	if (pid > 0) {
		kill((pid_t)pid, SIGKILL);
	}
	close(fd);
}

// tj_kill_all kills and reaps every process of the run until none is
// left; the command's status goes to *ws unless it was reaped already.
// A child forked while its parent was being killed is reparented here
// before that parent can be reaped, so the next round finds it. It
// returns how many processes other than the command died of the kill:
// the orphans that had ended already are reaped first, uncounted (as
// tj_end_jail does in init_reap.c).
static int tj_kill_all(pid_t command, int *have, int *ws) {
	const struct timespec pause = {0, 1000000};
	for (;;) {
		int st;
		pid_t got = waitpid(-1, &st, WNOHANG | __WALL);
		if (got < 0 && errno == EINTR) {
			continue;
		}
		if (got <= 0) {
			break;
		}
		if (got == command && !*have) {
			*ws = st;
			*have = 1;
		}
	}
	int killed = 0;
	for (;;) {
		tj_kill_children();
		int st;
		pid_t got = waitpid(-1, &st, WNOHANG | __WALL);
		if (got < 0 && errno == EINTR) {
			continue;
		}
		if (got < 0) {
			return killed; // ECHILD: nothing is left
		}
		if (got == 0) {
			nanosleep(&pause, NULL); // killed, not yet dead
			continue;
		}
		if (got == command && !*have) {
			*ws = st;
			*have = 1;
		} else if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) {
			killed++;
		}
	}
}

// tj_nons_reap is tj_reap without a PID namespace: it ends with every
// process of the run killed.
static __attribute__((noreturn)) void tj_nons_reap(struct tj_builder *b) {
	pid_t pid = b->command;
	sigset_t set;
	tj_reaper_signals(&set);
	sigaddset(&set, TJ_SIG_KILLALL);
	int have = 0, ws = 0;
	while (!have) {
		int sig = sigwaitinfo(&set, NULL);
		if (sig < 0) {
			if (errno == EINTR) {
				continue;
			}
			tj_failed(b, TJ_I_WAIT, TJ_OP_NONE, errno, -1, NULL);
			break; // killed below, then reported
		}
		if (sig == TJ_SIG_KILLALL) {
			break;
		}
		if (sig != SIGCHLD) {
			tj_forward(pid, sig);
			continue;
		}
		for (;;) {
			int st;
			pid_t got = waitpid(-1, &st, WNOHANG | __WALL);
			if (got < 0 && errno == EINTR) {
				continue;
			}
			if (got <= 0) {
				break;
			}
			if (got == pid) {
				ws = st;
				have = 1;
				break;
			}
		}
	}
	// Leftovers are counted when the command had ended on its own; a kill
	// the supervisor asked for, or a failed wait, ends it with the rest.
	int ended = have;
	int killed = tj_kill_all(pid, &have, &ws);
	if (b->rec.type != 0) {
		tj_die(b);
	}
	tj_report(b, ws, ended ? killed : -1);
}

void tj_nons_main(const struct tj_init *p) {
	static struct tj_builder b;
	tj_builder_start(&b, p);

	tj_default_handlers();
	// Should the supervisor die, the run ends as if it had asked: every
	// process killed (the signal stays pending until tj_nons_reap).
	prctl(PR_SET_PDEATHSIG, TJ_SIG_KILLALL, 0, 0, 0);
	tj_step(&b, tj_take_fds(&b));
	tj_step(&b, tj_wait_for_sync());
	tj_hide();
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) {
		tj_failed(&b, TJ_I_SUBREAPER, TJ_OP_NONE, errno, -1, NULL);
		tj_die(&b);
	}
	tj_step(&b, tj_children_readable(&b));
	tj_step(&b, tj_recv_fds(&b));
	tj_step(&b, tj_landlock(&b));
	tj_close_sources(&b);
	tj_step(&b, tj_start_stage2(&b));
	tj_nons_reap(&b);
}
