// The C side of the initlandlock package: the init's Landlock step run on
// a plan the test gives it (shim.c).
#ifndef TOOLJAIL_INITLANDLOCK_SHIM_H
#define TOOLJAIL_INITLANDLOCK_SHIM_H

#include "../initc/init.h"

// tjt_build runs the init's tj_landlock on plan l, with sources (one per
// bind, indexed by tj_ll_path.mount) and their descriptors fds, as the
// init has them after it received them. It returns the ruleset's
// descriptor (stage 2's landlock_fd) with landlock_restrict_self's flags
// in *flags, or -1 with the init's failure record in *rec. Not reentrant:
// the builder is static, as the init's is.
int tjt_build(struct tj_landlock *l, struct tj_source *sources, const int *fds, int nfds,
	      unsigned int *flags, struct tj_record *rec);

// The names of init_steps.h's steps (TJ_I_*) and operations (TJ_OP_*),
// without the prefix; NULL out of range.
const char *tjt_step_name(int step);
const char *tjt_op_name(int op);

#endif
