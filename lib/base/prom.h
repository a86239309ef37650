/*
 * prom.h - metrics in the Prometheus text exposition format (version
 * 0.0.4): counters, gauges and histograms, each a family of series told
 * apart by the values of a fixed list of labels.
 *
 * A program registers its families once at start (names and label names
 * are checked then: a bad one is a bug, and registration returns NULL),
 * then updates series from any thread; prom_render() writes every family
 * in registration order, series in the order they first appeared.
 * Label values are caller data and are escaped on output; they must never
 * be user or job ids (unbounded series), which callers keep to routes,
 * statuses, tenants, states and classes.
 */
#ifndef TY_PROM_H
#define TY_PROM_H

#include <stddef.h>

#define PROM_MAX_LABELS  4
#define PROM_MAX_BUCKETS 16
/* The Content-Type of the text format. */
#define PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

typedef struct prom_registry prom_registry;
typedef struct prom_family prom_family;

prom_registry *prom_registry_new(void);
void prom_registry_free(prom_registry *r);

/*
 * A family: name ([a-zA-Z_:][a-zA-Z0-9_:]*, a counter's ending in
 * "_total"), one line of help, nlabels label names ([a-zA-Z_][a-zA-Z0-9_]*,
 * not "le", none starting "__"). A histogram's buckets are its upper bounds,
 * ascending, +Inf added. RET the family (owned by r), or NULL for a bad
 * name or label, or out of memory.
 */
prom_family *prom_counter(prom_registry *r, const char *name, const char *help, int nlabels,
                          const char *const *labels);
prom_family *prom_gauge(prom_registry *r, const char *name, const char *help, int nlabels,
                        const char *const *labels);
prom_family *prom_histogram(prom_registry *r, const char *name, const char *help, int nlabels,
                            const char *const *labels, const double *buckets, int nbuckets);

/*
 * Update the series of the given label values (nlabels strings; NULL when
 * the family has none), created at 0 on first use. A counter only goes up:
 * a negative or non-finite amount is ignored. Thread-safe.
 */
void prom_add(prom_family *f, const char *const *values, double amount);
void prom_set(prom_family *f, const char *const *values, double value);     /* gauges */
void prom_observe(prom_family *f, const char *const *values, double value); /* histograms */
/* Drop every series of f: a gauge refilled from a query at each scrape. */
void prom_reset(prom_family *f);

/* The exposition of every family. RET malloc'ed text (*len bytes), or NULL when out of memory. */
char *prom_render(prom_registry *r, size_t *len);

#endif
