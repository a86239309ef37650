/*
 * output.c - tables, JSON and error lines.
 */
#include "output.h"

#include <stdlib.h>
#include <string.h>

#include "sbuf.h"

/* A copy of s with control characters replaced by '?' (NULL: "-"). */
static char *cell_dup(const char *s)
{
	char *c = strdup(s ? s : "-");
	for (char *p = c; p && *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	return c;
}

int table_init(table *t, size_t ncols, const char *const *headers)
{
	memset(t, 0, sizeof(*t));
	t->ncols = ncols;
	return headers ? table_add(t, headers) : 0;
}

int table_add(table *t, const char *const *cells)
{
	if (t->nrows == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 16;
		char **p = realloc(t->cells, cap * t->ncols * sizeof(*p));
		if (!p)
			return -1;
		t->cells = p;
		t->cap = cap;
	}
	char **row = t->cells + t->nrows * t->ncols;
	for (size_t i = 0; i < t->ncols; i++) {
		row[i] = cell_dup(cells[i]);
		if (!row[i]) {
			while (i > 0)
				free(row[--i]);
			return -1;
		}
	}
	t->nrows++;
	return 0;
}

/* RET: the number of characters of the UTF-8 string s. */
static size_t text_width(const char *s)
{
	size_t w = 0;
	for (; *s; s++)
		w += ((unsigned char)*s & 0xc0) != 0x80;
	return w;
}

void table_print(const table *t, FILE *f)
{
	size_t *width = calloc(t->ncols ? t->ncols : 1, sizeof(*width));
	if (!width)
		return;
	for (size_t r = 0; r < t->nrows; r++)
		for (size_t c = 0; c < t->ncols; c++) {
			size_t w = text_width(t->cells[r * t->ncols + c]);
			width[c] = w > width[c] ? w : width[c];
		}
	for (size_t r = 0; r < t->nrows; r++) {
		for (size_t c = 0; c < t->ncols; c++) {
			const char *cell = t->cells[r * t->ncols + c];
			if (c + 1 == t->ncols) {
				fprintf(f, "%s\n", cell);
				break;
			}
			fprintf(f, "%s%*s", cell, (int)(width[c] - text_width(cell) + 2), "");
		}
	}
	free(width);
}

void table_release(table *t)
{
	for (size_t i = 0; i < t->nrows * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	memset(t, 0, sizeof(*t));
}

const json_t *out_lookup(const json_t *obj, const char *key)
{
	char part[128];
	while (obj && *key) {
		size_t n = strcspn(key, ".");
		if (n >= sizeof(part))
			return NULL;
		memcpy(part, key, n);
		part[n] = '\0';
		obj = json_is_object(obj) ? json_object_get(obj, part) : NULL;
		key += n + (key[n] == '.');
	}
	return obj;
}

char *out_cell(const json_t *v)
{
	char buf[64];
	switch (json_typeof(v ? v : json_null())) {
	case JSON_STRING: /* an empty string would leave a hole in the columns */
		return strdup(*json_string_value(v) ? json_string_value(v) : "-");
	case JSON_INTEGER:
		snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		return strdup(buf);
	case JSON_REAL:
		snprintf(buf, sizeof(buf), "%g", json_real_value(v));
		return strdup(buf);
	case JSON_TRUE:
		return strdup("true");
	case JSON_FALSE:
		return strdup("false");
	case JSON_NULL:
		return strdup("-");
	default:
		return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(15));
	}
}

/* Add the row for one object. RET 0 or -1. */
static int table_add_object(table *t, const json_t *obj, const out_col *cols)
{
	char *cells[16] = {0};
	int rc = 0;
	if (t->ncols > 16)
		return -1;
	for (size_t c = 0; c < t->ncols; c++)
		if (!(cells[c] = out_cell(out_lookup(obj, cols[c].key))))
			rc = -1;
	if (!rc)
		rc = table_add(t, (const char *const *)cells);
	for (size_t c = 0; c < t->ncols; c++)
		free(cells[c]);
	return rc;
}

int table_add_items(table *t, const json_t *items, const out_col *cols)
{
	size_t i;
	const json_t *obj;
	json_array_foreach (items, i, obj) {
		if (table_add_object(t, obj, cols))
			return -1;
	}
	return 0;
}

void output_json(FILE *f, const json_t *j)
{
	json_dumpf(j, f, JSON_INDENT(2) | JSON_ENCODE_ANY | JSON_REAL_PRECISION(15));
	fputc('\n', f);
}

void output_json_block(FILE *f, const char *title, const json_t *j)
{
	char *text = json_dumps(j, JSON_INDENT(2) | JSON_ENCODE_ANY | JSON_REAL_PRECISION(15));
	fprintf(f, "%s:\n", title);
	/* jansson escapes the control characters of strings but DEL */
	for (char *p = text; p && *p; p++)
		if (*p == 0x7f)
			*p = '?';
	for (const char *line = text; line && *line;) {
		size_t n = strcspn(line, "\n");
		fprintf(f, "  %.*s\n", (int)n, line);
		line += n + (line[n] == '\n');
	}
	free(text);
}

/* Print s with control characters as '?'. */
static void put_clean(FILE *f, const char *s)
{
	for (; *s; s++)
		fputc(((unsigned char)*s < 0x20 || *s == 0x7f) ? '?' : *s, f);
}

static const char *str_member(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

void output_problem(FILE *f, const json_t *problem, long status)
{
	const char *detail = str_member(problem, "detail"), *code = str_member(problem, "code");
	size_t i;
	const json_t *row;
	if (!detail || !*detail)
		detail = str_member(problem, "title");
	if (!detail) {
		fprintf(f, "yardctl: the server answered HTTP %ld\n", status);
		return;
	}
	fputs("yardctl: ", f);
	put_clean(f, detail);
	if (code) {
		fputs(" (", f);
		put_clean(f, code);
		fputs(")\n", f);
	} else {
		fprintf(f, " (HTTP %ld)\n", status);
	}
	json_array_foreach (json_object_get(problem, "errors"), i, row) {
		const char *p = str_member(row, "pointer"), *m = str_member(row, "message"),
		           *c = str_member(row, "code");
		fputs("  ", f);
		put_clean(f, p ? p : "");
		fputs(": ", f);
		put_clean(f, m ? m : "");
		fputs(" (", f);
		put_clean(f, c ? c : "?");
		fputs(")\n", f);
	}
}

static size_t cols_count(const out_col *cols)
{
	size_t n = 0;
	while (cols[n].header)
		n++;
	return n;
}

int output_list(const cli_ctx *ctx, const json_t *answer, const json_t *items, const out_col *cols)
{
	const char *headers[16];
	table t;
	size_t n = cols_count(cols);
	if (ctx->format == CLI_FMT_JSON) {
		output_json(stdout, answer);
		return CLI_OK;
	}
	if (n > 16)
		return CLI_SERVER;
	for (size_t c = 0; c < n; c++)
		headers[c] = cols[c].header;
	int rc = table_init(&t, n, headers);
	if (!rc)
		rc = table_add_items(&t, items, cols);
	if (!rc)
		table_print(&t, stdout);
	table_release(&t);
	if (rc)
		fprintf(stderr, "yardctl: out of memory\n");
	return rc ? CLI_SERVER : CLI_OK;
}

int output_object(const cli_ctx *ctx, const json_t *obj, const out_col *fields)
{
	table t;
	int rc = 0;
	if (ctx->format == CLI_FMT_JSON) {
		output_json(stdout, obj);
		return CLI_OK;
	}
	table_init(&t, 2, NULL);
	for (size_t i = 0; fields[i].header && !rc; i++) {
		char *v = out_cell(out_lookup(obj, fields[i].key));
		const char *row[] = {fields[i].header, v};
		rc = v ? table_add(&t, row) : -1;
		free(v);
	}
	if (!rc)
		table_print(&t, stdout);
	table_release(&t);
	if (rc)
		fprintf(stderr, "yardctl: out of memory\n");
	return rc ? CLI_SERVER : CLI_OK;
}
