/*
 * test_report.c - the reports' pieces that need no database: the kinds
 * and their sections, times and periods as the API takes them, and the
 * three writers: JSON that parses back to the rows given (numbers as
 * numbers, records as arrays), CSV quoted as RFC 4180 wants with formulas
 * defused, HTML with every value escaped, records as ranges.
 */
#include <check.h>
#include <jansson.h>
#include <string.h>

#include "report.h"
#include "unit.h"

static const report_column cols[] = {
    {"who", RT_TEXT},
    {"count", RT_INT},
    {"at", RT_TIME},
    {NULL, 0},
};
static const report_section section = {"rows", "Some <rows>", cols, "SELECT 1", false};
static const report_kind kind = {"test-kind", "Test & kind", "About <it>.", false, &section, 1};

static report_params params(report_format f)
{
	report_params p = {.kind = &kind, .format = f};
	strcpy(p.from, "2026-11-04T00:00:00.000Z");
	strcpy(p.to, "2026-12-04T00:00:00.000Z");
	strcpy(p.generated_at, "2026-12-04T00:00:01.000Z");
	strcpy(p.head.at, "2026-12-04T00:00:00.500Z");
	strcpy(p.head.key_id, "0123456789abcdef");
	p.head.size = 42;
	p.head_verified = true;
	memset(p.public_key, 'a', 64);
	return p;
}

/* The document of two rows. OUT: o (caller releases). */
static void write_doc(report_out *o, report_format f)
{
	report_params p = params(f);
	const char *r1[] = {"=cmd|' /C calc'!A0", "3", "2026-12-01T00:00:00.000Z"};
	const char *r2[] = {"<b>\"x\"</b>, \n'y'", NULL, NULL};
	report_fmt_begin(o, &p);
	report_fmt_section_begin(o, &p, &section, true);
	report_fmt_row(o, &p, &section, r1, "{3,4,5,9}", true);
	report_fmt_row(o, &p, &section, r2, "{}", false);
	report_fmt_section_end(o, &p, &section, 2, 4);
	report_fmt_end(o, &p);
	ck_assert(!o->oom);
}

START_TEST(kinds_are_the_documented_six)
{
	static const char *const names[] = {"access-review", "permission-changes", "data-access",
	                                    "denials",       "key-management",     "admin-actions"};
	size_t n;
	const report_kind *k = report_kinds(&n);
	ck_assert_uint_eq(n, 6);
	for (size_t i = 0; i < n; i++) {
		ck_assert_str_eq(k[i].name, names[i]);
		ck_assert_ptr_eq(report_kind_find(names[i]), &k[i]);
		ck_assert_int_gt(k[i].nsections, 0);
		for (int s = 0; s < k[i].nsections; s++) {
			const report_section *sec = &k[i].sections[s];
			ck_assert_ptr_nonnull(sec->columns[0].name);
			/* every section reads only what the head covers */
			ck_assert_msg(strstr(sec->sql, "seq < $1"), "%s/%s", k[i].name, sec->name);
		}
	}
	ck_assert(k[0].at_time);
	ck_assert_ptr_null(report_kind_find("everything"));
	ck_assert_ptr_null(report_kind_find(NULL));
}
END_TEST

START_TEST(times_and_formats)
{
	double t;
	ck_assert_int_eq(report_time_parse("2026-12-04T08:00:00Z", &t), 0);
	ck_assert(t == 1796342400.0 + 8 * 3600);
	ck_assert_int_eq(report_time_parse("2026-12-04", &t), 0);
	ck_assert(t == 1796342400.0);
	ck_assert_int_eq(report_time_parse("2026-12-04T10:00:00.250+02:00", &t), 0);
	ck_assert(t == 1796342400.0 + 8 * 3600 + 0.25);
	char out[32];
	report_time_format(t, out);
	ck_assert_str_eq(out, "2026-12-04T08:00:00.250Z");
	static const char *const bad[] = {"yesterday",
	                                  "2026-13-01",
	                                  "2026-02-29",
	                                  "2026-02-30",
	                                  "2026-12-04T25:00:00Z",
	                                  "2026-12-04T08:00:00",
	                                  "2026-12-04T08:00Z",
	                                  "2026-12-04T08:00:00Zjunk",
	                                  "2026-12-04T08:00:00.Z",
	                                  "1969-12-31",
	                                  "",
	                                  "2026-12-04 "};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(report_time_parse(bad[i], &t) < 0, "\"%s\" was taken", bad[i]);
	ck_assert_int_eq(report_time_parse("2028-02-29", &t), 0);
	report_format f;
	ck_assert_int_eq(report_format_parse("csv", &f), 0);
	ck_assert_int_eq(f, REPORT_CSV);
	ck_assert_int_eq(report_format_parse("html", &f), 0);
	ck_assert_int_eq(f, REPORT_HTML);
	ck_assert_int_eq(report_format_parse("xml", &f), -1);
	ck_assert_str_eq(report_format_type(REPORT_HTML), "text/html; charset=utf-8");
}
END_TEST

START_TEST(json_parses_back)
{
	report_out o = {0};
	write_doc(&o, REPORT_JSON);
	json_error_t je;
	json_t *j = json_loads(o.buf, 0, &je);
	ck_assert_msg(j != NULL, "%s: %s", je.text, o.buf);
	ck_assert_str_eq(json_string_value(json_object_get(j, "report")), "test-kind");
	json_t *head = json_object_get(j, "head");
	ck_assert_str_eq(json_string_value(json_object_get(head, "type")), "head");
	ck_assert_int_eq(json_integer_value(json_object_get(head, "size")), 42);
	ck_assert_str_eq(json_string_value(json_object_get(head, "signature_status")), "verified");
	json_t *sec = json_array_get(json_object_get(j, "sections"), 0);
	json_t *rows = json_object_get(sec, "rows");
	ck_assert_uint_eq(json_array_size(rows), 2);
	json_t *r1 = json_array_get(rows, 0), *r2 = json_array_get(rows, 1);
	ck_assert_str_eq(json_string_value(json_object_get(r1, "who")), "=cmd|' /C calc'!A0");
	ck_assert_int_eq(json_integer_value(json_object_get(r1, "count")), 3);
	json_t *seqs = json_object_get(r1, "seqs");
	ck_assert_uint_eq(json_array_size(seqs), 4);
	ck_assert_int_eq(json_integer_value(json_array_get(seqs, 3)), 9);
	ck_assert_str_eq(json_string_value(json_object_get(r2, "who")), "<b>\"x\"</b>, \n'y'");
	ck_assert(json_is_null(json_object_get(r2, "count")));
	ck_assert_uint_eq(json_array_size(json_object_get(r2, "seqs")), 0);
	json_t *sum = json_object_get(sec, "summary");
	ck_assert_int_eq(json_integer_value(json_object_get(sum, "records")), 4);
	json_decref(j);
	report_out_release(&o);
}
END_TEST

START_TEST(csv_quotes_and_defuses)
{
	report_out o = {0};
	write_doc(&o, REPORT_CSV);
	ck_assert_ptr_nonnull(strstr(o.buf, "# trainyard report: test-kind (Test & kind)\n"));
	ck_assert_ptr_nonnull(strstr(o.buf, "# tree head: size 42, root "));
	ck_assert_ptr_nonnull(strstr(o.buf, "\nwho,count,at,seqs\n"));
	/* a formula is quoted and starts with ' */
	ck_assert_ptr_nonnull(
	    strstr(o.buf, "\n\"'=cmd|' /C calc'!A0\",3,2026-12-01T00:00:00.000Z,3-5 9\n"));
	/* quotes doubled, the comma and the newline inside quotes */
	ck_assert_ptr_nonnull(strstr(o.buf, "\n\"<b>\"\"x\"\"</b>, \n'y'\",,,\n"));
	ck_assert_ptr_nonnull(strstr(o.buf, "# summary: 2 rows from 4 records\n"));
	report_out_release(&o);
}
END_TEST

START_TEST(html_escapes_everything)
{
	report_out o = {0};
	write_doc(&o, REPORT_HTML);
	ck_assert_ptr_nonnull(strstr(o.buf, "<title>trainyard report: Test &amp; kind</title>"));
	ck_assert_ptr_nonnull(strstr(o.buf, "<p>About &lt;it&gt;.</p>"));
	ck_assert_ptr_nonnull(strstr(o.buf, "<h2>Some &lt;rows&gt;</h2>"));
	ck_assert_ptr_nonnull(
	    strstr(o.buf, "<td>&lt;b&gt;&quot;x&quot;&lt;/b&gt;, \n&#39;y&#39;</td>"));
	ck_assert_ptr_null(strstr(o.buf, "<b>"));
	ck_assert_ptr_nonnull(strstr(o.buf, "<code>3-5 9</code>"));
	ck_assert_ptr_nonnull(strstr(o.buf, "<span class=\"ok\">verified</span>"));
	/* self-contained: no script, no fetched asset */
	ck_assert_ptr_null(strstr(o.buf, "<script"));
	ck_assert_ptr_null(strstr(o.buf, "src="));
	ck_assert_ptr_null(strstr(o.buf, "<link"));
	ck_assert_ptr_nonnull(strstr(o.buf, "</body></html>\n"));
	report_out_release(&o);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("report");
	TCase *tc = tcase_create("pieces");
	tcase_add_test(tc, kinds_are_the_documented_six);
	tcase_add_test(tc, times_and_formats);
	tcase_add_test(tc, json_parses_back);
	tcase_add_test(tc, csv_quotes_and_defuses);
	tcase_add_test(tc, html_escapes_everything);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
