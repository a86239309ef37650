/*
 * output.h - what yardctl prints: aligned tables, pretty JSON and the
 * server's problem+json as error lines.
 *
 * A table owns copies of its cells (control characters replaced by '?',
 * so server data cannot move the terminal's cursor); table_release()
 * frees them. Columns are as wide as their widest cell in characters,
 * two spaces apart, the last one unpadded.
 */
#ifndef YARDCTL_OUTPUT_H
#define YARDCTL_OUTPUT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "cli.h"

typedef struct table {
	size_t ncols;
	size_t nrows; /* including the header row, when there is one */
	size_t cap;   /* rows allocated */
	char **cells; /* nrows * ncols, row-major */
} table;

/* RET 0, or -1 when out of memory. headers: ncols names, the first row, or NULL for none. */
int table_init(table *t, size_t ncols, const char *const *headers);
/* Add a row of ncols cells (NULL prints as "-"). RET 0, or -1 when out of memory. */
int table_add(table *t, const char *const *cells);
void table_print(const table *t, FILE *f);
void table_release(table *t);

/* A column shown from a JSON object: its header and the member, "a.b" for nested. */
typedef struct out_col {
	const char *header;
	const char *key;
} out_col;

/* RET: the member at the dotted path key of obj, or NULL. */
const json_t *out_lookup(const json_t *obj, const char *key);

/* RET: v as a table cell, "-" for null, missing or "" (caller frees; NULL when out of memory). */
char *out_cell(const json_t *v);

/*
 * Add one row per object of items, with the columns cols (ended by a NULL
 * header). RET 0, or -1 when out of memory.
 */
int table_add_items(table *t, const json_t *items, const out_col *cols);

/* Print j indented by 2 and a newline. */
void output_json(FILE *f, const json_t *j);

/* Print "title:", then j indented by 2 under it: a nested document (a job's spec) in table format.
 */
void output_json_block(FILE *f, const char *title, const json_t *j);

/*
 * Print a problem+json answer: "yardctl: <detail> (<code>)" and one line
 * "  <pointer>: <message> (<code>)" per errors[] row. problem may be NULL
 * or not a problem; then the HTTP status is named instead.
 */
void output_problem(FILE *f, const json_t *problem, long status);

/*
 * Show a list: with -o json the whole answer (borrowed), else a table of
 * items with a header row. RET: the exit status.
 */
int output_list(const cli_ctx *ctx, const json_t *answer, const json_t *items, const out_col *cols);

/* Show one object: with -o json as it is, else one "field  value" line per col. RET: exit status.
 */
int output_object(const cli_ctx *ctx, const json_t *obj, const out_col *fields);

#endif
