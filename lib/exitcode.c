/*
 * exitcode.c - names of trainyard-train's exit statuses.
 */
#include "exitcode.h"

const char *train_exit_name(int status)
{
	switch (status) {
#define X(e, st, name, doc)                                                                        \
	case st:                                                                                   \
		return name;
		TRAIN_EXIT_CODES(X)
#undef X
	default:
		return "unknown";
	}
}
