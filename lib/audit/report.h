/*
 * report.h - evidence reports for auditors, computed from the verifiable
 * audit log (docs/audit.md): access-review, permission-changes,
 * data-access, denials, key-management and admin-actions.
 *
 * A report is computed from one signed tree head: only records the head
 * covers (sequence number below its size) count, and each row carries the
 * sequence numbers of the records behind it, so that any row can be held
 * against the log with an inclusion proof. A report has sections, each
 * one query of fixed columns; its rows are read one at a time (libpq's
 * single-row mode) and written out as they come, so memory stays that of
 * one row whatever the log's size. One transaction (repeatable read)
 * holds the sections to one snapshot.
 *
 * A report covers the period [from, to) - access-review the moment `to` -
 * and, with a tenant, only that tenant's records.
 */
#ifndef TY_REPORT_H
#define TY_REPORT_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "auditlog.h"

/* The longest period one report covers. */
#define REPORT_PERIOD_MAX_DAYS 366
/* The period when none is asked for: this many days up to now. */
#define REPORT_PERIOD_DAYS 30
/* access-review: users whose tokens went unused this long are idle. */
#define REPORT_IDLE_DAYS 90

typedef enum report_format { REPORT_JSON, REPORT_CSV, REPORT_HTML } report_format;

/* A column's kind: how JSON writes it. */
typedef enum report_type { RT_TEXT, RT_INT, RT_TIME } report_type;

typedef struct report_column {
	const char *name;
	report_type type;
} report_column;

/* One section: its query's columns, in order, then the records' sequence numbers. */
typedef struct report_section {
	const char *name;
	const char *title;
	const report_column *columns; /* {NULL} ends */
	const char *sql;              /* $1 head size, $2 from, $3 to, $4 tenant id or NULL */
	bool platform_only;           /* left out of a tenant's report */
} report_section;

typedef struct report_kind {
	const char *name;
	const char *title;
	const char *about; /* one sentence */
	bool at_time;      /* a moment (to), not a period */
	const report_section *sections;
	int nsections;
} report_kind;

/* The kinds, in their documented order. */
const report_kind *report_kinds(size_t *n);
/* The kind named name, or NULL. */
const report_kind *report_kind_find(const char *name);

/* RET 0 with *f set, or -1: name is not csv, json or html. */
int report_format_parse(const char *name, report_format *f);
const char *report_format_type(report_format f); /* its Content-Type */

/*
 * An RFC 3339 time (2026-12-04T08:00:00Z, with fractions of a second or an
 * offset) or a date (2026-12-04, midnight UTC). OUT: *t, seconds since the
 * epoch. RET 0, or -1 when s is neither (no message).
 */
int report_time_parse(const char *s, double *t);
/* OUT: out, t as RFC 3339 UTC with milliseconds. */
void report_time_format(double t, char out[32]);

/* What a report is asked for. */
typedef struct report_params {
	const report_kind *kind;
	report_format format;
	char from[32], to[32]; /* RFC 3339 UTC */
	char tenant_id[40];    /* "" for all tenants */
	char tenant_name[72];  /* shown */
	char generated_at[32]; /* shown */
	auditlog_head head;    /* computed from */
	bool head_verified;    /* its signature verified under the server's key */
	char public_key[2 * AUDIT_KEY_LEN + 1];
} report_params;

/* The output as it is made, a chunk at a time. */
typedef struct report_out {
	char *buf;
	size_t len, cap;
	bool oom;
} report_out;

void report_out_add(report_out *o, const char *s, size_t n);
void report_out_adds(report_out *o, const char *s);
void report_out_release(report_out *o);

/* A report being made. */
typedef struct report_run {
	PGconn *c; /* its own connection; the run owns it */
	report_params p;
	int section; /* the section being read; -1 before the first */
	bool querying;
	bool done;
	int64_t rows, records; /* of the section being read */
	char problem[256];
} report_run;

/*
 * Begin a report on connection c (taken over: report_run_release closes
 * it): its transaction, and the document's head into o. RET 0, or -1 with
 * why in r->problem.
 */
int report_run_begin(report_run *r, PGconn *c, const report_params *p, report_out *o);

/*
 * Add the next part of the report to o: rows of the current section until
 * o holds at least want bytes, a section's end, or the document's end.
 * RET 1 while more is to come, 0 once the document is complete, -1 on a
 * failure with why in r->problem (the output is cut short).
 */
int report_run_step(report_run *r, report_out *o, size_t want);

void report_run_release(report_run *r);

/* ---- the writers (report_fmt.c) ----------------------------------------- */

void report_fmt_begin(report_out *o, const report_params *p);
void report_fmt_section_begin(report_out *o, const report_params *p, const report_section *s,
                              bool first);
/* One row: the section's values (NULL for SQL NULL), then the records' "{1,2,3}". */
void report_fmt_row(report_out *o, const report_params *p, const report_section *s,
                    const char *const *values, const char *seqs, bool first);
void report_fmt_section_end(report_out *o, const report_params *p, const report_section *s,
                            int64_t rows, int64_t records);
void report_fmt_end(report_out *o, const report_params *p);

#endif
