/*
 * specopt.h - the command-line options that name a job spec and how it
 * runs, as trainyard-train (train, reshard) and trainyard-worker (run,
 * attempt) take them: --spec FILE, --set SECTION.FIELD=VALUE (repeatable;
 * jobspec_load() applies them in the order given) and --layout L
 * (layout_parse()'s form). Their getopt_long rows and the one case that
 * takes them are written here once: a program lists the rows it accepts
 * in its own option table and hands every option to specopt_take()
 * before its own switch.
 *
 * Values point into argv; the overrides array is the struct's own
 * (specopt_release()).
 */
#ifndef TY_SPECOPT_H
#define TY_SPECOPT_H

#include <getopt.h>
#include <stdbool.h>

/* What getopt_long returns for each; a program's own options use other values. */
enum { SPECOPT_SPEC = 's', SPECOPT_SET = 'o', SPECOPT_LAYOUT = 'L' };

/* The rows of a struct option table. */
/* clang-format off */
#define SPECOPT_ROW_SPEC   {"spec", required_argument, 0, SPECOPT_SPEC}
#define SPECOPT_ROW_SET    {"set", required_argument, 0, SPECOPT_SET}
#define SPECOPT_ROW_LAYOUT {"layout", required_argument, 0, SPECOPT_LAYOUT}
/* clang-format on */

typedef struct specopt {
	const char *spec;   /* --spec FILE ("-": stdin), or NULL */
	char **overrides;   /* the --set values in the order given */
	int n_overrides;    /* how many */
	const char *layout; /* --layout L, or NULL */
} specopt;

/* Room for the --set values of argc arguments. RET 0, or -1 when out of memory. */
int specopt_init(specopt *s, int argc);

/*
 * Take option c, getopt_long's value for it, with its argument arg, when
 * it is one of the three (the last --spec or --layout wins; every --set
 * is kept). RET: whether it was.
 */
bool specopt_take(specopt *s, int c, char *arg);

/* Free the overrides array; the values stay argv's. */
void specopt_release(specopt *s);

#endif
