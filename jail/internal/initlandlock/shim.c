// The jail init's Landlock step and its failure record, compiled from
// their own sources (jail/internal/initc/init_landlock.c, init_fail.c)
// for the tests of this package. Their external names are renamed: the test binary also
// links the initc package (for the build cache, see initlandlock.go), which
// has the originals.
#define tj_landlock tjt_landlock
#define tj_failed tjt_failed
#include "../initc/init_landlock.c"
#include "../initc/init_fail.c"

#include <string.h>

#include "shim.h"

// Static, as in the init: the builder is too big for a stack frame.
static struct tj_builder tjt_b;
static struct tj_init tjt_init;
static struct tj_late tjt_late;

int tjt_build(struct tj_landlock *l, struct tj_source *sources, const int *fds, int nfds,
	      unsigned int *flags, struct tj_record *rec) {
	memset(&tjt_b, 0, sizeof tjt_b);
	memset(&tjt_init, 0, sizeof tjt_init);
	memset(&tjt_late, 0, sizeof tjt_late);
	tjt_late.sources = sources;
	tjt_late.nfds = nfds;
	tjt_init.late = &tjt_late;
	tjt_init.landlock = l;
	tjt_b.p = &tjt_init;
	tjt_b.stage2 = &tjt_init.stage2;
	tjt_b.sock = tjt_b.oldroot = tjt_b.newroot = tjt_b.emptyfile = -1;
	for (int i = 0; i < nfds && i < TJ_MAX_SOURCES; i++) {
		tjt_b.fds[i] = fds[i];
	}
	tjt_b.nfds = nfds;
	if (tj_landlock(&tjt_b) < 0) {
		*rec = tjt_b.rec;
		return -1;
	}
	*flags = tjt_b.stage2->landlock_flags;
	return tjt_b.stage2->landlock_fd;
}

#define TJT_NAME_I(name, text) [TJ_I_##name] = #name,
#define TJT_NAME_OP(name, text) [TJ_OP_##name] = #name,
static const char *const tjt_steps[TJ_I_COUNT] = {TJ_INIT_STEPS(TJT_NAME_I)};
static const char *const tjt_ops[TJ_OP_COUNT] = {TJ_CALLS(TJT_NAME_OP) TJ_REASONS(TJT_NAME_OP)};

const char *tjt_step_name(int step) {
	return step >= 0 && step < TJ_I_COUNT ? tjt_steps[step] : NULL;
}

const char *tjt_op_name(int op) {
	return op >= 0 && op < TJ_OP_COUNT ? tjt_ops[op] : NULL;
}
