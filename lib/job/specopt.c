/*
 * specopt.c - --spec, --set and --layout taken from a command line (specopt.h).
 */
#include "specopt.h"

#include <stdlib.h>
#include <string.h>

int specopt_init(specopt *s, int argc)
{
	memset(s, 0, sizeof(*s));
	s->overrides = calloc(argc > 0 ? (size_t)argc : 1, sizeof(char *));
	return s->overrides ? 0 : -1;
}

bool specopt_take(specopt *s, int c, char *arg)
{
	switch (c) {
	case SPECOPT_SPEC:
		s->spec = arg;
		return true;
	case SPECOPT_SET:
		s->overrides[s->n_overrides++] = arg;
		return true;
	case SPECOPT_LAYOUT:
		s->layout = arg;
		return true;
	default:
		return false;
	}
}

void specopt_release(specopt *s)
{
	free(s->overrides);
	s->overrides = NULL;
	s->n_overrides = 0;
}
