/*
 * test_runtime_relay.c - a launch's output through the relay into a sink
 * that records every call: log lines, step batches (by count, by age, at
 * a checkpoint, at the end), checkpoint_done paths, trainer events,
 * lost-rank reports, long and unterminated lines; and the file sink's
 * files.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "relay.h"
#include "sink.h"
#include "unit.h"

/* Records deep copies: the relay reuses what it lends a sink. */
typedef struct recorder {
	runtime_sink base;
	json_t *calls; /* [{"call":..., ...}] in order */
} recorder;

static void record(recorder *r, json_t *call)
{
	json_array_append_new(r->calls, call);
}

static int rec_log(runtime_sink *s, runtime_stream from, const char *line)
{
	record((recorder *)s,
	       json_pack("{s:s, s:i, s:s}", "call", "log", "from", from, "line", line));
	return 0;
}

static int rec_batch(runtime_sink *s, json_t *lines)
{
	record((recorder *)s,
	       json_pack("{s:s, s:o}", "call", "batch", "lines", json_deep_copy(lines)));
	return 0;
}

static int rec_ckpt(runtime_sink *s, int step, const char *path)
{
	record((recorder *)s,
	       json_pack("{s:s, s:i, s:s}", "call", "checkpoint", "step", step, "path", path));
	return 0;
}

static int rec_event(runtime_sink *s, const char *kind, json_t *detail)
{
	record((recorder *)s, json_pack("{s:s, s:s, s:o}", "call", "event", "kind", kind, "detail",
	                                json_deep_copy(detail)));
	return 0;
}

static int rec_finish(runtime_sink *s, runtime_outcome *o)
{
	record((recorder *)s, json_pack("{s:s, s:s}", "call", "finish", "result", o->result));
	return 0;
}

static void rec_free(runtime_sink *s)
{
	(void)s;
}

static const runtime_sink_ops rec_ops = {.log_line = rec_log,
                                         .metrics_batch = rec_batch,
                                         .checkpoint_done = rec_ckpt,
                                         .event = rec_event,
                                         .finish = rec_finish,
                                         .free = rec_free};

static recorder rec;
static relay rl;

static void setup(void)
{
	rec.base.ops = &rec_ops;
	rec.calls = json_array();
	ck_assert_int_eq(relay_init(&rl, &rec.base, "/ck"), 0);
	relay_begin(&rl, 3);
}

static void teardown(void)
{
	relay_release(&rl);
	json_decref(rec.calls);
}

static void feed(runtime_stream from, const char *text, double t)
{
	relay_feed(&rl, from, text, strlen(text), t);
}

static json_t *call(size_t i)
{
	return json_array_get(rec.calls, i);
}

static const char *call_name(size_t i)
{
	return json_string_value(json_object_get(call(i), "call"));
}

static void step_line(char *buf, size_t n, int step)
{
	snprintf(buf, n, "{\"type\":\"step\",\"time_ms\":1,\"step\":%d,\"loss\":3.61452532}\n",
	         step);
}

START_TEST(lines_in_pieces_and_batches_by_age)
{
	feed(RUNTIME_STREAM_OUT, "{\"type\":\"step\",\"st", 10.0);
	ck_assert_uint_eq(json_array_size(rec.calls), 0);
	feed(RUNTIME_STREAM_OUT, "ep\":1,\"loss\":3.61452532}\nnot json\n", 10.0);
	ck_assert_uint_eq(json_array_size(rec.calls), 2);
	ck_assert_str_eq(call_name(0), "log");
	ck_assert_str_eq(json_string_value(json_object_get(call(0), "line")),
	                 "{\"type\":\"step\",\"step\":1,\"loss\":3.61452532}");
	ck_assert_str_eq(json_string_value(json_object_get(call(1), "line")), "not json");
	ck_assert_int_eq(rl.last_step, 1);
	ck_assert(relay_tick(&rl, 11.0) > 0.9); /* 1 s old: not yet */
	ck_assert_uint_eq(json_array_size(rec.calls), 2);
	ck_assert(relay_tick(&rl, 12.0) < 0); /* 2 s: sent */
	ck_assert_str_eq(call_name(2), "batch");
	json_t *lines = json_object_get(call(2), "lines");
	ck_assert_uint_eq(json_array_size(lines), 1);
	json_t *first = json_array_get(lines, 0);
	ck_assert_int_eq(json_integer_value(json_object_get(first, "launch")), 3);
	ck_assert_int_eq(json_integer_value(json_object_get(first, "step")), 1);
	char *text =
	    json_dumps(json_object_get(first, "loss"), JSON_ENCODE_ANY | JSON_REAL_PRECISION(9));
	ck_assert_str_eq(text, "3.61452532"); /* the trainer's digits survive */
	free(text);
}
END_TEST

START_TEST(batches_of_64_lines)
{
	char line[256];
	for (int s = 1; s <= 65; s++) {
		step_line(line, sizeof(line), s);
		feed(RUNTIME_STREAM_OUT, line, 0.0);
	}
	/* 65 log lines with one batch of 64 after the 64th */
	ck_assert_uint_eq(json_array_size(rec.calls), 66);
	ck_assert_str_eq(call_name(64), "batch");
	ck_assert_uint_eq(json_array_size(json_object_get(call(64), "lines")), 64);
	relay_end(&rl);
	ck_assert_str_eq(call_name(66), "batch");
	ck_assert_uint_eq(json_array_size(json_object_get(call(66), "lines")), 1);
}
END_TEST

START_TEST(checkpoints_and_trainer_events)
{
	char line[256];
	feed(RUNTIME_STREAM_OUT,
	     "{\"type\":\"event\",\"event\":\"resumed\",\"step\":5,\"from_world\":2}\n", 0.0);
	ck_assert_int_eq(rl.last_checkpoint, 5);
	ck_assert_int_eq(rl.last_step, 5);
	step_line(line, sizeof(line), 6);
	feed(RUNTIME_STREAM_OUT, line, 0.0);
	feed(RUNTIME_STREAM_OUT, "{\"type\":\"event\",\"event\":\"checkpoint\",\"step\":6}\n", 0.0);
	/* log, event(resumed), log, log, batch (before the checkpoint), checkpoint */
	ck_assert_uint_eq(json_array_size(rec.calls), 6);
	ck_assert_str_eq(call_name(1), "event");
	ck_assert_str_eq(json_string_value(json_object_get(call(1), "kind")), "trainer");
	ck_assert_str_eq(call_name(4), "batch");
	ck_assert_str_eq(call_name(5), "checkpoint");
	ck_assert_int_eq(json_integer_value(json_object_get(call(5), "step")), 6);
	ck_assert_str_eq(json_string_value(json_object_get(call(5), "path")),
	                 "/ck/step_00000006/manifest.json");
	ck_assert_int_eq(rl.last_checkpoint, 6);
}
END_TEST

START_TEST(lost_ranks_long_and_unterminated_lines)
{
	feed(RUNTIME_STREAM_ERR,
	     "mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 9 "
	     "(Killed).\n",
	     0.0);
	ck_assert_int_eq(rl.ranks_lost, 1);
	feed(RUNTIME_STREAM_ERR, "2 total processes failed to start\n", 0.0);
	ck_assert_int_eq(rl.start_failures, 1);
	/* the same words on stdout are not the launcher's */
	feed(RUNTIME_STREAM_OUT, "exited on signal 9\n", 0.0);
	ck_assert_int_eq(rl.ranks_lost, 1);
	char *big = malloc(RELAY_LINE_MAX + 11);
	memset(big, 'x', RELAY_LINE_MAX + 10);
	big[RELAY_LINE_MAX + 10] = '\0';
	feed(RUNTIME_STREAM_ERR, big, 0.0);
	free(big);
	ck_assert_uint_eq(json_array_size(rec.calls), 4); /* one piece of RELAY_LINE_MAX */
	ck_assert_uint_eq(strlen(json_string_value(json_object_get(call(3), "line"))),
	                  RELAY_LINE_MAX);
	relay_end(&rl); /* the rest, 10 bytes without a newline */
	ck_assert_uint_eq(strlen(json_string_value(json_object_get(call(4), "line"))), 10);
	relay_begin(&rl, 4);
	ck_assert_int_eq(rl.ranks_lost, 0);
	ck_assert_int_eq(rl.start_failures, 0);
}
END_TEST

START_TEST(file_sink_writes_its_files)
{
	char dir[] = "/tmp/test_runtime_relay.XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	char m[128], l[128], e[128];
	snprintf(m, sizeof(m), "%s/m", dir);
	snprintf(l, sizeof(l), "%s/l", dir);
	snprintf(e, sizeof(e), "%s/e", dir);
	char err[256];
	runtime_sink *s = sink_file_new(m, l, e, err, sizeof(err));
	ck_assert_ptr_nonnull(s);
	json_t *lines = json_pack("[{s:i, s:f}]", "step", 1, "loss", 3.61452532);
	ck_assert_int_eq(sink_metrics_batch(s, lines), 0);
	json_decref(lines);
	ck_assert_int_eq(sink_log_line(s, RUNTIME_STREAM_ERR, "hello"), 0);
	ck_assert_int_eq(sink_checkpoint_done(s, 5, "/ck/step_00000005/manifest.json"), 0);
	runtime_outcome o = {.result = "failed", .failure = "data_error", .exit_status = 13};
	ck_assert_int_eq(sink_finish(s, &o), 0);
	sink_free(s);
	char *text = unit_read_file(m);
	ck_assert_str_eq(text, "{\"step\":1,\"loss\":3.61452532}\n");
	free(text);
	text = unit_read_file(l);
	ck_assert_str_eq(text, "hello\n");
	free(text);
	text = unit_read_file(e);
	ck_assert_ptr_nonnull(strstr(text, "\"kind\":\"checkpoint_done\""));
	ck_assert_ptr_nonnull(strstr(text, "\"manifest\":\"/ck/step_00000005/manifest.json\""));
	ck_assert_ptr_nonnull(strstr(text, "\"kind\":\"finish\""));
	ck_assert_ptr_nonnull(strstr(text, "\"failure\":\"data_error\",\"exit\":13"));
	free(text);
	ck_assert_ptr_null(sink_file_new("/nonexistent/dir/m", l, NULL, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "could not open metrics file"));
	unlink(m);
	unlink(l);
	unlink(e);
	rmdir(dir);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("runtime_relay");
	TCase *tc = tcase_create("relay");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, lines_in_pieces_and_batches_by_age);
	tcase_add_test(tc, batches_of_64_lines);
	tcase_add_test(tc, checkpoints_and_trainer_events);
	tcase_add_test(tc, lost_ranks_long_and_unterminated_lines);
	tcase_add_test(tc, file_sink_writes_its_files);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
