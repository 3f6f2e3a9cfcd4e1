// The init's failure record, apart from init.c so that the Landlock
// step's tests (jail/internal/initlandlock) compile the same function.
#define _GNU_SOURCE
#include <string.h>

#include "init_internal.h"

// tj_failed records a failure and returns -1, for the caller to return.
int tj_failed(struct tj_builder *b, int step, int op, int err, int index, const char *path) {
	b->rec.type = TJ_REC_INIT_FAIL;
	b->rec.step = step;
	b->rec.op = op;
	b->rec.err = err;
	b->rec.index = index;
	b->rec.code = 125;
	b->rec.is_dir = 0;
	b->rec.path[0] = 0;
	if (path != NULL) {
		size_t n = strnlen(path, sizeof b->rec.path - 1);
		memcpy(b->rec.path, path, n);
		b->rec.path[n] = 0;
	}
	return -1;
}
