/*
 * prom.c - metric families and the text exposition format (prom.h).
 *
 * Each family holds its series in an array searched linearly: the label
 * values callers use (routes, statuses, tenants, states) keep families to
 * a few hundred series. A family's mutex guards its series.
 */
#include "prom.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { K_COUNTER, K_GAUGE, K_HISTOGRAM } kind;

typedef struct series {
	char *values[PROM_MAX_LABELS];
	double value;                            /* counter, gauge; histogram: the sum */
	unsigned long long count;                /* histogram observations */
	unsigned long long le[PROM_MAX_BUCKETS]; /* histogram: observations <= bucket k */
} series;

struct prom_family {
	kind k;
	char *name, *help;
	int nlabels;
	char *labels[PROM_MAX_LABELS];
	int nbuckets;
	double buckets[PROM_MAX_BUCKETS];
	pthread_mutex_t mu;
	series *s;
	size_t n, cap;
	prom_family *next;
};

struct prom_registry {
	pthread_mutex_t mu;
	prom_family *first, **last;
};

prom_registry *prom_registry_new(void)
{
	prom_registry *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	pthread_mutex_init(&r->mu, NULL);
	r->last = &r->first;
	return r;
}

static void series_free(series *s, int nlabels)
{
	for (int i = 0; i < nlabels; i++)
		free(s->values[i]);
}

static void family_free(prom_family *f)
{
	for (size_t i = 0; i < f->n; i++)
		series_free(&f->s[i], f->nlabels);
	for (int i = 0; i < f->nlabels; i++)
		free(f->labels[i]);
	pthread_mutex_destroy(&f->mu);
	free(f->s);
	free(f->name);
	free(f->help);
	free(f);
}

void prom_registry_free(prom_registry *r)
{
	if (!r)
		return;
	for (prom_family *f = r->first, *next; f; f = next) {
		next = f->next;
		family_free(f);
	}
	pthread_mutex_destroy(&r->mu);
	free(r);
}

static bool name_ok(const char *s, bool colon)
{
	if (!s || !*s)
		return false;
	for (const char *p = s; *p; p++) {
		char c = *p;
		bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
		             (colon && c == ':');
		if (!alpha && !(p > s && c >= '0' && c <= '9'))
			return false;
	}
	return true;
}

static prom_family *family_new(prom_registry *r, kind k, const char *name, const char *help,
                               int nlabels, const char *const *labels, const double *buckets,
                               int nbuckets)
{
	if (!name_ok(name, true) || nlabels < 0 || nlabels > PROM_MAX_LABELS ||
	    (nlabels && !labels) || nbuckets < 0 || nbuckets > PROM_MAX_BUCKETS)
		return NULL;
	size_t nl = strlen(name);
	if (k == K_COUNTER && (nl < 6 || strcmp(name + nl - 6, "_total") != 0))
		return NULL;
	for (int i = 0; i < nlabels; i++)
		if (!name_ok(labels[i], false) || strncmp(labels[i], "__", 2) == 0 ||
		    strcmp(labels[i], "le") == 0)
			return NULL;
	for (int i = 1; i < nbuckets; i++)
		if (!(buckets[i] > buckets[i - 1]))
			return NULL;
	prom_family *f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->k = k;
	f->name = strdup(name);
	f->help = strdup(help ? help : "");
	f->nlabels = nlabels;
	bool ok = f->name && f->help;
	for (int i = 0; i < nlabels; i++)
		ok = (f->labels[i] = strdup(labels[i])) != NULL && ok;
	f->nbuckets = nbuckets;
	if (nbuckets)
		memcpy(f->buckets, buckets, (size_t)nbuckets * sizeof(double));
	pthread_mutex_init(&f->mu, NULL);
	if (!ok) {
		family_free(f);
		return NULL;
	}
	pthread_mutex_lock(&r->mu);
	*r->last = f;
	r->last = &f->next;
	pthread_mutex_unlock(&r->mu);
	return f;
}

prom_family *prom_counter(prom_registry *r, const char *name, const char *help, int nlabels,
                          const char *const *labels)
{
	return family_new(r, K_COUNTER, name, help, nlabels, labels, NULL, 0);
}

prom_family *prom_gauge(prom_registry *r, const char *name, const char *help, int nlabels,
                        const char *const *labels)
{
	return family_new(r, K_GAUGE, name, help, nlabels, labels, NULL, 0);
}

prom_family *prom_histogram(prom_registry *r, const char *name, const char *help, int nlabels,
                            const char *const *labels, const double *buckets, int nbuckets)
{
	if (nbuckets < 1 || !buckets)
		return NULL;
	return family_new(r, K_HISTOGRAM, name, help, nlabels, labels, buckets, nbuckets);
}

/* The series of values, created on first use. Called with f->mu held. RET NULL: out of memory. */
static series *find(prom_family *f, const char *const *values)
{
	for (size_t i = 0; i < f->n; i++) {
		int k = 0;
		while (k < f->nlabels && strcmp(f->s[i].values[k], values[k] ? values[k] : "") == 0)
			k++;
		if (k == f->nlabels)
			return &f->s[i];
	}
	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 16;
		series *s = realloc(f->s, cap * sizeof(*s));
		if (!s)
			return NULL;
		f->s = s;
		f->cap = cap;
	}
	series *s = &f->s[f->n];
	memset(s, 0, sizeof(*s));
	for (int k = 0; k < f->nlabels; k++)
		if (!(s->values[k] = strdup(values[k] ? values[k] : ""))) {
			series_free(s, k);
			return NULL;
		}
	f->n++;
	return s;
}

void prom_add(prom_family *f, const char *const *values, double amount)
{
	if (!f || f->k == K_HISTOGRAM || !isfinite(amount) || (f->k == K_COUNTER && amount < 0))
		return;
	pthread_mutex_lock(&f->mu);
	series *s = find(f, values);
	if (s)
		s->value += amount;
	pthread_mutex_unlock(&f->mu);
}

void prom_set(prom_family *f, const char *const *values, double value)
{
	if (!f || f->k != K_GAUGE)
		return;
	pthread_mutex_lock(&f->mu);
	series *s = find(f, values);
	if (s)
		s->value = value;
	pthread_mutex_unlock(&f->mu);
}

void prom_observe(prom_family *f, const char *const *values, double value)
{
	if (!f || f->k != K_HISTOGRAM || isnan(value))
		return;
	pthread_mutex_lock(&f->mu);
	series *s = find(f, values);
	if (s) {
		s->value += value;
		s->count++;
		for (int k = 0; k < f->nbuckets; k++)
			if (value <= f->buckets[k])
				s->le[k]++;
	}
	pthread_mutex_unlock(&f->mu);
}

void prom_reset(prom_family *f)
{
	if (!f)
		return;
	pthread_mutex_lock(&f->mu);
	for (size_t i = 0; i < f->n; i++)
		series_free(&f->s[i], f->nlabels);
	f->n = 0;
	pthread_mutex_unlock(&f->mu);
}

/* ---- the text format --------------------------------------------------- */

typedef struct out {
	char *buf;
	size_t len, cap;
	bool broken;
} out;

static void put(out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(out *o, const char *fmt, ...)
{
	if (o->broken)
		return;
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			o->broken = true;
			return;
		}
		if ((size_t)n < o->cap - o->len) {
			o->len += (size_t)n;
			return;
		}
		size_t cap = (o->cap + (size_t)n + 1) * 2;
		char *b = realloc(o->buf, cap);
		if (!b) {
			o->broken = true;
			return;
		}
		o->buf = b;
		o->cap = cap;
	}
}

/* s escaped as the format wants: in help, \ and newline; in label values, " too. */
static void put_escaped(out *o, const char *s, bool quote)
{
	for (const char *p = s; *p; p++) {
		if (*p == '\\')
			put(o, "\\\\");
		else if (*p == '\n')
			put(o, "\\n");
		else if (quote && *p == '"')
			put(o, "\\\"");
		else
			put(o, "%c", *p);
	}
}

/* The shortest decimal text that reads back as v (0.1, not 0.10000000000000001). */
static void shortest(char *buf, size_t len, double v)
{
	if (v == floor(v) && fabs(v) < 1e15) { /* counts: 200000, not 2e+05 */
		snprintf(buf, len, "%.0f", v);
		return;
	}
	for (int digits = 1; digits <= 17; digits++) {
		snprintf(buf, len, "%.*g", digits, v);
		if (strtod(buf, NULL) == v)
			return;
	}
}

static void put_number(out *o, double v)
{
	char buf[40];
	if (isnan(v))
		put(o, "NaN");
	else if (isinf(v))
		put(o, v > 0 ? "+Inf" : "-Inf");
	else {
		shortest(buf, sizeof(buf), v);
		put(o, "%s", buf);
	}
}

/* name{labels[,le="bound"]} value */
static void put_sample(out *o, const prom_family *f, const series *s, const char *suffix,
                       const char *le, double v)
{
	put(o, "%s%s", f->name, suffix);
	if (f->nlabels || le) {
		put(o, "{");
		for (int k = 0; k < f->nlabels; k++) {
			put(o, "%s%s=\"", k ? "," : "", f->labels[k]);
			put_escaped(o, s->values[k], true);
			put(o, "\"");
		}
		if (le)
			put(o, "%sle=\"%s\"", f->nlabels ? "," : "", le);
		put(o, "}");
	}
	put(o, " ");
	put_number(o, v);
	put(o, "\n");
}

static void put_family(out *o, prom_family *f)
{
	static const char *const type[] = {"counter", "gauge", "histogram"};
	put(o, "# HELP %s ", f->name);
	put_escaped(o, f->help, false);
	put(o, "\n# TYPE %s %s\n", f->name, type[f->k]);
	pthread_mutex_lock(&f->mu);
	for (size_t i = 0; i < f->n; i++) {
		const series *s = &f->s[i];
		if (f->k != K_HISTOGRAM) {
			put_sample(o, f, s, "", NULL, s->value);
			continue;
		}
		for (int k = 0; k < f->nbuckets; k++) {
			char le[40];
			shortest(le, sizeof(le), f->buckets[k]);
			put_sample(o, f, s, "_bucket", le, (double)s->le[k]);
		}
		put_sample(o, f, s, "_bucket", "+Inf", (double)s->count);
		put_sample(o, f, s, "_sum", NULL, s->value);
		put_sample(o, f, s, "_count", NULL, (double)s->count);
	}
	pthread_mutex_unlock(&f->mu);
}

char *prom_render(prom_registry *r, size_t *len)
{
	out o = {0};
	put(&o, "%s", "");
	pthread_mutex_lock(&r->mu);
	for (prom_family *f = r->first; f; f = f->next)
		put_family(&o, f);
	pthread_mutex_unlock(&r->mu);
	if (o.broken) {
		free(o.buf);
		return NULL;
	}
	*len = o.len;
	return o.buf;
}
