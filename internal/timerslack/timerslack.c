// tooljail's threads get a timer slack of 1 ms. Go's sysmon thread polls
// every 20 µs while the process works, from the first system call of each
// burst of work until every P is idle again, and on the VMs tooljail runs
// on each wake-up is a context switch that costs more than its work: with
// the slack its sleeps stretch to about 1 ms (BENCHMARKS.md, issue 31's
// fourth pass: a quarter of a server's CPU per session call, a seventh of
// `tooljail version`'s). tooljail's own timers are timeouts and retries,
// where 1 ms late is nothing. Threads inherit the slack of the thread that
// starts them, so this runs before the Go runtime starts any; a caller's
// slack above 1 ms is kept. The jail package noted the caller's slack
// first (a constructor of priority 101), and stage 2 gives it back to the
// command. It is the importing program's choice (cmd/tooljail's), not the
// jail package's: a program that embeds jail keeps its own slack.
#include <sys/prctl.h>

#define TJ_SUPERVISOR_SLACK_NS 1000000L

__attribute__((constructor)) static void tj_raise_timer_slack(void) {
	long slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
	if (slack > 0 && slack < TJ_SUPERVISOR_SLACK_NS) {
		prctl(PR_SET_TIMERSLACK, TJ_SUPERVISOR_SLACK_NS, 0, 0, 0);
	}
}
