/*
 * report_fmt.c - a report written as JSON, CSV or one printable HTML page
 * (report.h; docs/audit.md shows each).
 *
 * JSON: one document, the head and each section's rows, every row with
 * "seqs", the sequence numbers of its records. CSV: lines starting with
 * '#' say what the report is and where each section starts; each section
 * has a header line, and its "seqs" cell lists the records as ranges
 * ("3-5 9"); a cell starting with = + - @ is prefixed with ' so that no
 * spreadsheet reads it as a formula. HTML: a self-contained page (no
 * script, no external asset), every value escaped.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hex.h"
#include "report.h"

/* ---- escaping ---------------------------------------------------------------------------- */

static void json_str(report_out *o, const char *s)
{
	report_out_add(o, "\"", 1);
	const char *run = s;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		report_out_add(o, run, (size_t)(s - run));
		char esc[8];
		if (c == '"' || c == '\\')
			snprintf(esc, sizeof(esc), "\\%c", c);
		else
			snprintf(esc, sizeof(esc), "\\u%04x", c);
		report_out_adds(o, esc);
		run = s + 1;
	}
	report_out_add(o, run, (size_t)(s - run));
	report_out_add(o, "\"", 1);
}

static void csv_cell(report_out *o, const char *s)
{
	bool formula = strchr("=+-@", s[0]) && s[0];
	if (!formula && !strpbrk(s, ",\"\r\n")) {
		report_out_adds(o, s);
		return;
	}
	report_out_add(o, "\"", 1);
	if (formula)
		report_out_add(o, "'", 1);
	for (const char *p = s; *p; p++) {
		if (*p == '"')
			report_out_add(o, "\"\"", 2);
		else
			report_out_add(o, p, 1);
	}
	report_out_add(o, "\"", 1);
}

static void html_text(report_out *o, const char *s)
{
	const char *run = s;
	for (; *s; s++) {
		const char *e = *s == '&'    ? "&amp;"
		                : *s == '<'  ? "&lt;"
		                : *s == '>'  ? "&gt;"
		                : *s == '"'  ? "&quot;"
		                : *s == '\'' ? "&#39;"
		                             : NULL;
		if (!e)
			continue;
		report_out_add(o, run, (size_t)(s - run));
		report_out_adds(o, e);
		run = s + 1;
	}
	report_out_add(o, run, (size_t)(s - run));
}

static void addf(report_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void addf(report_out *o, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	report_out_add(o, buf, n < 0 ? 0 : (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

/*
 * The records of "{1,2,3,7}" as JSON numbers ("[1,2,3,7]") or as ranges
 * ("1-3 7").
 */
static void seqs_out(report_out *o, const char *seqs, bool json)
{
	if (json)
		report_out_add(o, "[", 1);
	const char *p = seqs + (seqs[0] == '{');
	bool first = true;
	long long lo = -1, hi = -1;
	for (;;) {
		char *end;
		long long v = strtoll(p, &end, 10);
		bool have = end != p;
		if (have && json) {
			addf(o, first ? "%lld" : ",%lld", v);
			first = false;
		} else if (!json && have && lo >= 0 && v == hi + 1) {
			hi = v;
		} else if (!json) {
			if (lo >= 0)
				addf(o, lo == hi ? "%s%lld" : "%s%lld-%lld", first ? "" : " ", lo,
				     hi),
				    first = false;
			lo = hi = have ? v : -1;
		}
		if (!have || *end != ',')
			break;
		p = end + 1;
	}
	if (!json && lo >= 0)
		addf(o, lo == hi ? "%s%lld" : "%s%lld-%lld", first ? "" : " ", lo, hi);
	if (json)
		report_out_add(o, "]", 1);
}

/* ---- the document's head ----------------------------------------------------------------- */

static void hexes(const report_params *p, char root[2 * MERKLE_HASH_LEN + 1],
                  char sig[2 * AUDIT_SIG_LEN + 1])
{
	hex_encode(p->head.root, MERKLE_HASH_LEN, root);
	hex_encode(p->head.signature, AUDIT_SIG_LEN, sig);
}

static const char *signature_status(const report_params *p)
{
	return p->head_verified ? "verified" : "does not verify";
}

static void begin_json(report_out *o, const report_params *p)
{
	char root[2 * MERKLE_HASH_LEN + 1], sig[2 * AUDIT_SIG_LEN + 1];
	hexes(p, root, sig);
	report_out_adds(o, "{\"report\":");
	json_str(o, p->kind->name);
	report_out_adds(o, ",\"title\":");
	json_str(o, p->kind->title);
	addf(o, ",\"generated_at\":\"%s\",", p->generated_at);
	if (p->kind->at_time)
		addf(o, "\"at\":\"%s\",", p->to);
	else
		addf(o, "\"from\":\"%s\",\"to\":\"%s\",", p->from, p->to);
	report_out_adds(o, "\"tenant\":");
	if (p->tenant_id[0])
		json_str(o, p->tenant_name);
	else
		report_out_adds(o, "null");
	addf(o,
	     ",\"head\":{\"type\":\"head\",\"size\":%lld,\"root\":\"%s\",\"signed_at\":\"%s\","
	     "\"algorithm\":"
	     "\"ed25519\",\"key_id\":\"%s\",",
	     (long long)p->head.size, root, p->head.at, p->head.key_id);
	addf(o, "\"signature\":\"%s\",\"public_key\":\"%s\",\"signature_status\":\"%s\"},", sig,
	     p->public_key, signature_status(p));
	report_out_adds(o, "\"sections\":[");
}

static void begin_csv(report_out *o, const report_params *p)
{
	char root[2 * MERKLE_HASH_LEN + 1], sig[2 * AUDIT_SIG_LEN + 1];
	hexes(p, root, sig);
	addf(o, "# trainyard report: %s (%s)\n", p->kind->name, p->kind->title);
	if (p->kind->at_time)
		addf(o, "# at: %s\n", p->to);
	else
		addf(o, "# period: from %s to %s\n", p->from, p->to);
	addf(o, "# tenant: %s\n", p->tenant_id[0] ? p->tenant_name : "all");
	addf(o, "# tree head: size %lld, root %s, signed at %s, key id %s\n",
	     (long long)p->head.size, root, p->head.at, p->head.key_id);
	addf(o, "# signature: %s (ed25519, public key %s)\n", signature_status(p), p->public_key);
	addf(o, "# signature hex: %s\n", sig);
	addf(o, "# generated at: %s\n", p->generated_at);
}

static const char html_style[] =
    "body{font:11pt/1.4 sans-serif;margin:2em;color:#111}"
    "h1{font-size:18pt;margin:0 0 .2em}h2{font-size:13pt;margin:1.6em 0 .4em}"
    "table{border-collapse:collapse;margin:.4em 0 1em;width:100%}"
    "th,td{border:1px solid #999;padding:.2em .4em;text-align:left;vertical-align:top;"
    "font-size:9pt;overflow-wrap:anywhere}"
    "th{background:#eee}table.meta th{width:12em}table.summary{width:auto}"
    "code{font-size:8.5pt}.ok{color:#060;font-weight:bold}.bad{color:#a00;font-weight:bold}"
    "td.n{white-space:nowrap}"
    "@page{size:A4 landscape;margin:12mm}"
    "@media print{body{margin:0}thead{display:table-header-group}tr{break-inside:avoid}}";

static void meta_row(report_out *o, const char *th, const char *td)
{
	report_out_adds(o, "<tr><th>");
	html_text(o, th);
	report_out_adds(o, "</th><td>");
	html_text(o, td);
	report_out_adds(o, "</td></tr>");
}

static void begin_html(report_out *o, const report_params *p)
{
	char root[2 * MERKLE_HASH_LEN + 1], sig[2 * AUDIT_SIG_LEN + 1], buf[256];
	hexes(p, root, sig);
	report_out_adds(o, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
	                   "<title>trainyard report: ");
	html_text(o, p->kind->title);
	report_out_adds(o, "</title><style>");
	report_out_adds(o, html_style);
	report_out_adds(o, "</style></head><body>\n<h1>");
	html_text(o, p->kind->title);
	report_out_adds(o, "</h1><p>");
	html_text(o, p->kind->about);
	report_out_adds(o, "</p>\n<table class=\"meta\">");
	meta_row(o, "Report", p->kind->name);
	if (p->kind->at_time) {
		meta_row(o, "At", p->to);
	} else {
		snprintf(buf, sizeof(buf), "from %s to %s", p->from, p->to);
		meta_row(o, "Period", buf);
	}
	meta_row(o, "Tenant", p->tenant_id[0] ? p->tenant_name : "all tenants");
	snprintf(buf, sizeof(buf), "%lld records", (long long)p->head.size);
	meta_row(o, "Tree head size", buf);
	meta_row(o, "Tree head root", root);
	meta_row(o, "Signed at", p->head.at);
	report_out_adds(o, "<tr><th>Signature</th><td><span class=\"");
	report_out_adds(o, p->head_verified ? "ok" : "bad");
	report_out_adds(o, "\">");
	report_out_adds(o, signature_status(p));
	report_out_adds(o, "</span> (Ed25519, key id ");
	html_text(o, p->head.key_id);
	report_out_adds(o, ")</td></tr>");
	meta_row(o, "Signature hex", sig);
	meta_row(o, "Public key", p->public_key);
	meta_row(o, "Generated at", p->generated_at);
	report_out_adds(o, "</table>\n");
}

void report_fmt_begin(report_out *o, const report_params *p)
{
	if (p->format == REPORT_JSON)
		begin_json(o, p);
	else if (p->format == REPORT_CSV)
		begin_csv(o, p);
	else
		begin_html(o, p);
}

/* ---- sections and rows ------------------------------------------------------------------- */

void report_fmt_section_begin(report_out *o, const report_params *p, const report_section *s,
                              bool first)
{
	if (p->format == REPORT_JSON) {
		report_out_adds(o, first ? "{\"name\":" : ",{\"name\":");
		json_str(o, s->name);
		report_out_adds(o, ",\"title\":");
		json_str(o, s->title);
		report_out_adds(o, ",\"columns\":[");
		for (const report_column *c = s->columns; c->name; c++) {
			json_str(o, c->name);
			report_out_add(o, ",", 1);
		}
		report_out_adds(o, "\"seqs\"],\"rows\":[");
	} else if (p->format == REPORT_CSV) {
		addf(o, "\n# section: %s (%s)\n", s->name, s->title);
		for (const report_column *c = s->columns; c->name; c++) {
			report_out_adds(o, c->name);
			report_out_add(o, ",", 1);
		}
		report_out_adds(o, "seqs\n");
	} else {
		report_out_adds(o, "<h2>");
		html_text(o, s->title);
		report_out_adds(o, "</h2>\n<table class=\"rows\"><thead><tr>");
		for (const report_column *c = s->columns; c->name; c++) {
			report_out_adds(o, "<th>");
			html_text(o, c->name);
			report_out_adds(o, "</th>");
		}
		report_out_adds(o, "<th>records (seq)</th></tr></thead><tbody>\n");
	}
}

void report_fmt_row(report_out *o, const report_params *p, const report_section *s,
                    const char *const *values, const char *seqs, bool first)
{
	int i = 0;
	if (p->format == REPORT_JSON) {
		report_out_adds(o, first ? "{" : ",\n{");
		for (const report_column *c = s->columns; c->name; c++, i++) {
			json_str(o, c->name);
			report_out_add(o, ":", 1);
			if (!values[i])
				report_out_adds(o, "null");
			else if (c->type == RT_INT)
				report_out_adds(o, values[i]);
			else
				json_str(o, values[i]);
			report_out_add(o, ",", 1);
		}
		report_out_adds(o, "\"seqs\":");
		seqs_out(o, seqs, true);
		report_out_add(o, "}", 1);
	} else if (p->format == REPORT_CSV) {
		for (const report_column *c = s->columns; c->name; c++, i++) {
			csv_cell(o, values[i] ? values[i] : "");
			report_out_add(o, ",", 1);
		}
		seqs_out(o, seqs, false);
		report_out_add(o, "\n", 1);
	} else {
		report_out_adds(o, "<tr>");
		for (const report_column *c = s->columns; c->name; c++, i++) {
			/* numbers and times never break across lines */
			report_out_adds(o, c->type == RT_TEXT ? "<td>" : "<td class=\"n\">");
			html_text(o, values[i] ? values[i] : "");
			report_out_adds(o, "</td>");
		}
		report_out_adds(o, "<td><code>");
		seqs_out(o, seqs, false);
		report_out_adds(o, "</code></td></tr>\n");
	}
}

void report_fmt_section_end(report_out *o, const report_params *p, const report_section *s,
                            int64_t rows, int64_t records)
{
	if (p->format == REPORT_JSON) {
		addf(o, "],\"summary\":{\"rows\":%lld,\"records\":%lld}}", (long long)rows,
		     (long long)records);
	} else if (p->format == REPORT_CSV) {
		addf(o, "# summary: %lld rows from %lld records\n", (long long)rows,
		     (long long)records);
	} else {
		if (rows == 0) {
			int n = 1;
			for (const report_column *c = s->columns; c->name; c++)
				n++;
			addf(o, "<tr><td colspan=\"%d\">none</td></tr>\n", n);
		}
		report_out_adds(o, "</tbody></table>\n<table class=\"summary\"><tr><th>");
		html_text(o, s->title);
		addf(o,
		     ": rows</th><td>%lld</td></tr><tr><th>records behind them</th><td>%lld</td>"
		     "</tr></table>\n",
		     (long long)rows, (long long)records);
	}
}

void report_fmt_end(report_out *o, const report_params *p)
{
	if (p->format == REPORT_JSON)
		report_out_adds(o, "]}\n");
	else if (p->format == REPORT_HTML)
		report_out_adds(
		    o, "<p>Every row names the sequence numbers of the audit records "
		       "behind it: check any of them against the tree head above with "
		       "<code>yardctl audit proof inclusion --seq N --tree-size SIZE</code>."
		       "</p>\n</body></html>\n");
}
