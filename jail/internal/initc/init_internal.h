// What the init's C files share among themselves (init.c, mounts/mounts.c,
// nonsreap/nonsreap.c, init_net.c, init_landlock.c, init_reap.c, init_fork.c,
// init_fail.c); nothing outside the init includes it.
#ifndef TOOLJAIL_INIT_INTERNAL_H
#define TOOLJAIL_INIT_INTERNAL_H

#include <signal.h>
#include <sys/resource.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "init.h"

#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef SYS_openat2
#define SYS_openat2 437
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#endif

// tj_builder is the init's state while it sets the jail up.
struct tj_builder {
	const struct tj_init *p;
	struct tj_stage2 *stage2; // the init's copy of the plan's, completed by the steps
	int sock;      // the supervisor socket: the plan's descriptor, 3 once in place
	int oldroot;   // O_PATH of the host's root (/oldroot)
	int newroot;   // O_PATH of the jail's root tmpfs
	int emptyfile; // an empty read-only file, bound over masked files
	uint64_t owned[TJ_MAX_OWNED];
	int nowned;
	int fds[TJ_MAX_SOURCES]; // the sources' descriptors, as received
	int nfds;
	pid_t command; // stage 2, which becomes the command
	// The command's mount namespace, held (O_RDONLY of /proc/PID/ns/mnt)
	// until its exit record is sent: the last process of a namespace to
	// exit tears its mounts down on its exit path, which waits for RCU
	// grace periods; held, the init closes it after the record. -1: none.
	int held_mntns;
	// The sized tmpfs mounts watched for filling up: each one's mount fd
	// (close-on-exec) and what the samples found (tj_sample_mounts).
	int watch_fd[TJ_MAX_WATCH];
	struct tj_fill watch[TJ_MAX_WATCH];
	int nwatch;
	struct tj_record rec; // the failure, once one happened
};

// Every step below returns 0, or -1 with its failure recorded by
// tj_failed (none when the supervisor is gone: there is no one to tell).

// init.c: the steps in order, and the failure record (tj_failed is in
// init_fail.c).
__attribute__((noreturn)) void tj_init_main(const struct tj_init *p);
int tj_failed(struct tj_builder *b, int step, int op, int err, int index, const char *path);
__attribute__((noreturn)) void tj_die(struct tj_builder *b);
// tj_builder_start readies b for the steps of the plan p; tj_step ends the
// process (tj_die) when a step failed. The reaper of a run without
// namespaces (nonsreap.c) starts the same way.
void tj_builder_start(struct tj_builder *b, const struct tj_init *p);
void tj_step(struct tj_builder *b, int result);
// tj_utoa writes v in base (up to 16) into buf, NUL-terminated.
void tj_utoa(char *buf, size_t n, uint64_t v, int base);

// init.c's first steps, which the reaper of a run without namespaces
// takes too (nonsreap.c).
int tj_take_fds(struct tj_builder *b);
int tj_wait_for_sync(void);
void tj_hide(void);
int tj_recv_fds(struct tj_builder *b);
void tj_close_sources(struct tj_builder *b);

// nonsreap/nonsreap.c: the reaper of a run without namespaces, instead of the init.
__attribute__((noreturn)) void tj_nons_main(const struct tj_init *p);

// mounts/mounts.c: the jail's filesystem, in the order init.c builds it.
int tj_temporary_root(struct tj_builder *b);
int tj_jail_root(struct tj_builder *b);
int tj_proc(struct tj_builder *b);
int tj_proc_knobs(struct tj_builder *b);
int tj_dev(struct tj_builder *b);
int tj_etc(struct tj_builder *b);
int tj_mounts(struct tj_builder *b);
int tj_overbinds(struct tj_builder *b);
int tj_masks(struct tj_builder *b);
int tj_enter_root(struct tj_builder *b);

// init_net.c: the jail's host name and network.
int tj_hostname(struct tj_builder *b);
int tj_loopback(struct tj_builder *b);
int tj_net_listeners(struct tj_builder *b);

// init_landlock.c: the Landlock ruleset, for stage 2.
int tj_landlock(struct tj_builder *b);

// init_reap.c: stage 2, then the init's life as PID 1.
void tj_default_handlers(void);
int tj_start_stage2(struct tj_builder *b);
// tj_start_stage2 in two halves, for a session's call started ahead
// (init_session.c): the fork, which fails with what tj_failed would say,
// and the wait for the command's execve.
struct tj_fork_fail {
	int step, op, err, index;
};
long tj_fork_stage2(struct tj_builder *b, int *status_fd, int *mntns_fd, struct tj_fork_fail *f);
void tj_await_stage2(struct tj_builder *b, long pid, int status_fd, int own_thp);
void tj_hold_mntns(struct tj_builder *b, int fd);
__attribute__((noreturn)) void tj_reap(struct tj_builder *b);
// tj_report sends the command's end; leftover is how many processes were
// still running when the command ended and were killed (-1: not counted).
__attribute__((noreturn)) void tj_report(struct tj_builder *b, int ws, int leftover);
// tj_exit_record sends a command's end (tj_report's record) and goes on:
// ru is its usage, NULL for every child the init reaped.
void tj_exit_record(struct tj_builder *b, int ws, int leftover, const struct rusage *ru);
// tj_end_jail kills and reaps everything in the init's PID namespace and
// returns how many were killed (-1: not PID 1).
int tj_end_jail(void);

// How often the init samples the watched tmpfs mounts while a command
// runs, in milliseconds (init_reap.c).
#define TJ_SAMPLE_MS 10

// init_session.c: a session's init, which runs one call after another.
__attribute__((noreturn)) void tj_session(struct tj_builder *b);
// tj_watch_mount keeps fd, the root of a tmpfs of size bytes that the
// init mounted (plan index mount, -1 for /dev/shm), for
// tj_sample_mounts; it closes fd when there is no room or no size.
void tj_watch_mount(struct tj_builder *b, int fd, int mount, int64_t size);
void tj_sample_mounts(struct tj_builder *b);
// tj_reaper_signals fills set with what a reaper waits for (SIGCHLD and
// the signals it forwards); tj_forward forwards one to the command.
void tj_reaper_signals(sigset_t *set);
void tj_forward(pid_t command, int sig);

#endif
