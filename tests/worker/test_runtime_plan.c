/*
 * test_runtime_plan.c - the worker runtime's decisions: the fallback
 * ladder (auto rule, explicit, none, picking a rung), the launcher's argv,
 * and the classification of a launch's end.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "classify.h"
#include "jobspec.h"
#include "ladder.h"
#include "launch.h"
#include "unit.h"

/* A valid spec from a parallel section and a fault_tolerance section (JSON text). */
static jobspec parse(const char *parallel, int ranks, const char *fault)
{
	char text[2048];
	snprintf(text, sizeof(text),
	         "{\"name\":\"t\",\"model\":{\"layers\":4,\"d_model\":64,\"heads\":4,"
	         "\"vocab_size\":256,\"seq_len\":64},\"data\":{\"train\":\"d/*.bin\"},"
	         "\"parallel\":%s,\"resources\":{\"nodes\":1,\"ranks_per_node\":%d},"
	         "\"training\":{\"steps\":10,\"lr\":0.001}%s%s}",
	         parallel, ranks, fault ? ",\"fault_tolerance\":" : "", fault ? fault : "");
	json_t *in = json_loads(text, 0, NULL);
	ck_assert_ptr_nonnull(in);
	jobspec s;
	verrs v;
	verrs_init(&v);
	int rc = jobspec_parse(in, NULL, &s, NULL, &v);
	ck_assert_msg(rc == 0, "spec refused: %s", json_dumps(v.list, 0));
	verrs_release(&v);
	json_decref(in);
	return s;
}

static void assert_layout(const layout *p, int dp, int tp, int pp, int mb, int accum)
{
	ck_assert_int_eq(p->data_parallel, dp);
	ck_assert_int_eq(p->tensor_parallel, tp);
	ck_assert_int_eq(p->pipeline_parallel, pp);
	ck_assert_int_eq(p->micro_batch, mb);
	ck_assert_int_eq(p->grad_accum, accum);
}

START_TEST(auto_shrinks_dp_then_pp_then_tp)
{
	jobspec s = parse("{\"data_parallel\":8,\"tensor_parallel\":2,\"pipeline_parallel\":2,"
	                  "\"zero_stage\":1,\"micro_batch\":2,\"global_batch\":64}",
	                  32, NULL);
	ck_assert(s.fallback_auto);
	layout r[LADDER_MAX];
	int n = ladder_build(&s, r);
	ck_assert_int_eq(n, 6);
	assert_layout(&r[0], 8, 2, 2, 2, 4);
	assert_layout(&r[1], 4, 2, 2, 2, 8);
	assert_layout(&r[2], 2, 2, 2, 2, 16);
	assert_layout(&r[3], 1, 2, 2, 2, 32);
	assert_layout(&r[4], 1, 2, 1, 2, 32);
	assert_layout(&r[5], 1, 1, 1, 2, 32);
	for (int i = 0; i < n; i++)
		ck_assert_int_eq(r[i].zero_stage, 1);
	for (int i = 1; i < n; i++)
		ck_assert_int_lt(layout_ranks(&r[i]), layout_ranks(&r[i - 1]));
}
END_TEST

START_TEST(auto_keeps_global_batch_whole)
{
	/* dp 6 -> 3 -> 1: every rung a whole grad_accum */
	jobspec s = parse("{\"data_parallel\":6,\"micro_batch\":1,\"global_batch\":6}", 6, NULL);
	layout r[LADDER_MAX];
	ck_assert_int_eq(ladder_build(&s, r), 3);
	assert_layout(&r[1], 3, 1, 1, 1, 2);
	assert_layout(&r[2], 1, 1, 1, 1, 6);
	/* dp 5 of global 10 at mb 2: dp 2 would need 2.5 micro-batches; dp 1 takes 5 */
	s = parse("{\"data_parallel\":5,\"micro_batch\":2,\"global_batch\":10}", 5, NULL);
	ck_assert_int_eq(ladder_build(&s, r), 2);
	assert_layout(&r[1], 1, 1, 1, 2, 5);
	/* one rank: no fallback */
	s = parse("{\"data_parallel\":1,\"micro_batch\":2,\"global_batch\":4}", 1, NULL);
	ck_assert_int_eq(ladder_build(&s, r), 1);
}
END_TEST

START_TEST(explicit_and_empty_fallbacks)
{
	jobspec s = parse("{\"data_parallel\":4,\"micro_batch\":4,\"global_batch\":32}", 4,
	                  "{\"fallback\":[{\"data_parallel\":2,\"tensor_parallel\":1,"
	                  "\"pipeline_parallel\":1,\"micro_batch\":2},{\"data_parallel\":1,"
	                  "\"tensor_parallel\":1,\"pipeline_parallel\":1}]}");
	layout r[LADDER_MAX];
	ck_assert_int_eq(ladder_build(&s, r), 3);
	assert_layout(&r[0], 4, 1, 1, 4, 2);
	assert_layout(&r[1], 2, 1, 1, 2, 8);
	assert_layout(&r[2], 1, 1, 1, 4, 8);
	s = parse("{\"data_parallel\":4,\"micro_batch\":4,\"global_batch\":32}", 4,
	          "{\"fallback\":[]}");
	ck_assert(!s.fallback_auto);
	ck_assert_int_eq(ladder_build(&s, r), 1);
}
END_TEST

START_TEST(pick_the_first_rung_that_fits)
{
	jobspec s = parse("{\"data_parallel\":8,\"micro_batch\":1,\"global_batch\":8}", 8, NULL);
	layout r[LADDER_MAX];
	int n = ladder_build(&s, r); /* 8, 4, 2, 1 ranks */
	ck_assert_int_eq(n, 4);
	ck_assert_int_eq(ladder_pick(r, n, 0, 8, false), 0);
	ck_assert_int_eq(ladder_pick(r, n, 0, 7, false), 1);
	ck_assert_int_eq(ladder_pick(r, n, 1, 8, false),
	                 1); /* after rung 0, even with every slot */
	ck_assert_int_eq(ladder_pick(r, n, 2, 3, false), 2);
	ck_assert_int_eq(ladder_pick(r, n, 2, 1, false), 3);
	ck_assert_int_eq(ladder_pick(r, n, 4, 8, false), -1);
	ck_assert_int_eq(ladder_pick(r, n, 0, 0, false), -1);
}
END_TEST

/* On GPUs in 16 bits the ladder passes over the layouts the trainer's GPU path does not train. */
START_TEST(pick_on_gpus_passes_over_what_the_device_does_not_train)
{
	jobspec s = parse("{\"data_parallel\":8,\"zero_stage\":1,\"micro_batch\":1,"
	                  "\"global_batch\":48}",
	                  8,
	                  "{\"fallback\":[{\"data_parallel\":2,\"tensor_parallel\":1,"
	                  "\"pipeline_parallel\":2},{\"data_parallel\":3,\"tensor_parallel\":1,"
	                  "\"pipeline_parallel\":1,\"zero_stage\":3},{\"data_parallel\":1,"
	                  "\"tensor_parallel\":2,\"pipeline_parallel\":1},{\"data_parallel\":1,"
	                  "\"tensor_parallel\":1,\"pipeline_parallel\":1,\"zero_stage\":3}]}");
	layout r[LADDER_MAX];
	int n = ladder_build(&s, r);
	ck_assert_int_eq(n, 5);
	char why[256];
	const layout_device F = LAYOUT_GPU_FP32, H = LAYOUT_GPU_16BIT;
	for (int i = 0; i < n; i++) { /* the CPU and fp32 GPUs train every layout */
		ck_assert(layout_on_device(&r[i], LAYOUT_CPU, NULL, 0));
		ck_assert(layout_on_device(&r[i], F, NULL, 0));
	}
	ck_assert(layout_on_device(&r[0], H, why, sizeof(why)));  /* dp 8, ZeRO 1 */
	ck_assert(!layout_on_device(&r[1], H, why, sizeof(why))); /* dp 2 x pp 2 */
	ck_assert_ptr_nonnull(strstr(why, "not 2x1x2"));
	ck_assert(layout_on_device(&r[2], H, NULL, 0));  /* dp 3, ZeRO 3 */
	ck_assert(!layout_on_device(&r[3], H, NULL, 0)); /* tp 2 */
	ck_assert(layout_on_device(&r[4], H, NULL, 0));  /* one rank */
	ck_assert_int_eq(ladder_pick(r, n, 1, 8, LAYOUT_CPU), 1);
	ck_assert_int_eq(ladder_pick(r, n, 1, 8, F), 1);
	ck_assert_int_eq(ladder_pick(r, n, 1, 8, H), 2);
	ck_assert_int_eq(ladder_pick(r, n, 3, 8, F), 3);
	ck_assert_int_eq(ladder_pick(r, n, 3, 8, H), 4);
	ck_assert_int_eq(ladder_pick(r, n, 1, 2, H), 4);
}
END_TEST

static void assert_argv(char **argv, const char *const *want)
{
	size_t i = 0;
	for (; want[i]; i++) {
		ck_assert_ptr_nonnull(argv[i]);
		ck_assert_str_eq(argv[i], want[i]);
	}
	ck_assert_ptr_null(argv[i]);
}

START_TEST(mpirun_argv)
{
	char steps[] = "training.steps=7", data[] = "data.train=/x y/$(rm -rf)*.bin";
	char *over[] = {steps, data};
	launch_plan p = {.train_bin = "/opt/ty/trainyard-train",
	                 .spec_path = "/jobs/a b.json",
	                 .ckpt_dir = "/ck",
	                 .data_root = "/data/tenants/t",
	                 .overrides = over,
	                 .n_overrides = 2,
	                 .layout = {.data_parallel = 2,
	                            .tensor_parallel = 1,
	                            .pipeline_parallel = 1,
	                            .zero_stage = 1,
	                            .micro_batch = 4,
	                            .grad_accum = 3},
	                 .rank_memory_limit = 650000000};
	char **argv = launch_argv(&p);
	static const char *const want[] = {
	    "mpirun",
	    "--allow-run-as-root",
	    "--oversubscribe",
	    "--bind-to",
	    "none",
	    "-np",
	    "2",
	    "-x",
	    "OMP_NUM_THREADS",
	    "-x",
	    "OPENBLAS_NUM_THREADS",
	    "/opt/ty/trainyard-train",
	    "train",
	    "--spec",
	    "/jobs/a b.json",
	    "--ckpt-dir",
	    "/ck",
	    "--data-root",
	    "/data/tenants/t",
	    "--metrics",
	    "-",
	    "--memory-limit",
	    "650000000",
	    "--set",
	    "training.steps=7",
	    "--set",
	    "data.train=/x y/$(rm -rf)*.bin",
	    "--layout",
	    "data_parallel=2,tensor_parallel=1,pipeline_parallel=1,zero_stage=1,micro_batch=4",
	    NULL};
	assert_argv(argv, want);
	launch_argv_free(argv);
}
END_TEST

START_TEST(shown_argv_has_no_paths)
{
	launch_plan p = {.train_bin = "/opt/ty/bin/trainyard-train",
	                 .spec_path = "/tmp/trainyard-spec-Ab12Cd",
	                 .ckpt_dir = "/srv/ty/storage/tenants/t/jobs/j/checkpoints",
	                 .data_root = "/srv/ty/data/tenants/t",
	                 .layout = {.data_parallel = 1,
	                            .tensor_parallel = 1,
	                            .pipeline_parallel = 1,
	                            .micro_batch = 4,
	                            .grad_accum = 1},
	                 .slurm = true,
	                 .encrypt_for = "t:j",
	                 .init_ckpt = "/srv/ty/data/tenants/t/attempts/a/init",
	                 .init_encrypt_for = "t2:j2"};
	char **argv = launch_argv_shown(&p);
	static const char *const want[] = {
	    "srun",
	    "--mpi=pmix",
	    "--kill-on-bad-exit=1",
	    "-n",
	    "1",
	    "trainyard-train",
	    "train",
	    "--spec",
	    "<the job's spec>",
	    "--ckpt-dir",
	    "<the job's checkpoint store>",
	    "--data-root",
	    "<the tenant's data root>",
	    "--metrics",
	    "-",
	    "--encrypt",
	    "t:j",
	    "--init-ckpt",
	    "<the checkpoint started from>",
	    "--init-encrypt",
	    "t2:j2",
	    "--layout",
	    "data_parallel=1,tensor_parallel=1,pipeline_parallel=1,zero_stage=0,micro_batch=4",
	    NULL};
	assert_argv(argv, want);
	launch_argv_free(argv);
	/* the plan itself is untouched: the launch runs with the real paths */
	argv = launch_argv(&p);
	ck_assert_str_eq(argv[5], "/opt/ty/bin/trainyard-train");
	ck_assert_str_eq(argv[8], "/tmp/trainyard-spec-Ab12Cd");
	ck_assert_str_eq(argv[18], "/srv/ty/data/tenants/t/attempts/a/init");
	launch_argv_free(argv);
}
END_TEST

START_TEST(srun_argv)
{
	launch_plan p = {.train_bin = "trainyard-train",
	                 .spec_path = "s.json",
	                 .ckpt_dir = "ck",
	                 .layout = {.data_parallel = 2,
	                            .tensor_parallel = 2,
	                            .pipeline_parallel = 2,
	                            .micro_batch = 1,
	                            .grad_accum = 1},
	                 .slurm = true};
	char **argv = launch_argv(&p);
	static const char *const want[] = {
	    "srun",
	    "--mpi=pmix",
	    "--kill-on-bad-exit=1",
	    "-n",
	    "8",
	    "trainyard-train",
	    "train",
	    "--spec",
	    "s.json",
	    "--ckpt-dir",
	    "ck",
	    "--metrics",
	    "-",
	    "--layout",
	    "data_parallel=2,tensor_parallel=2,pipeline_parallel=2,zero_stage=0,micro_batch=1",
	    NULL};
	assert_argv(argv, want);
	launch_argv_free(argv);
}
END_TEST

/*
 * GPUs: --device cuda goes on the trainer's command line only when the job
 * asks for GPUs and the node has a driver (a probe file that exists);
 * asking for GPUs on a node without one (the local cluster's fake gres)
 * trains on CPU ranks.
 */
START_TEST(device_cuda_when_gpus_are_real)
{
	jobspec s = parse("{\"micro_batch\":4,\"global_batch\":8}", 1, NULL);
	char probe[] = "/tmp/test_runtime_probe.XXXXXX";
	int fd = mkstemp(probe);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert(!launch_device_cuda(&s, probe)); /* no GPUs asked for */
	s.resources.gpus_per_node = 2;
	ck_assert(launch_device_cuda(&s, probe));
	unlink(probe);
	unsetenv(GPU_BACKEND_ENV);
	ck_assert(!launch_device_cuda(&s, probe)); /* no driver */
	setenv(GPU_BACKEND_ENV, "/opt/backend.so", 1);
	ck_assert(launch_device_cuda(&s, probe)); /* a backend named instead */
	setenv(GPU_BACKEND_ENV, "", 1);
	ck_assert(!launch_device_cuda(&s, probe));
	unsetenv(GPU_BACKEND_ENV);

	launch_plan p = {.train_bin = "t",
	                 .spec_path = "s.json",
	                 .ckpt_dir = "ck",
	                 .layout = s.parallel,
	                 .slurm = true};
	char **argv = launch_argv(&p);
	for (size_t i = 0; argv[i]; i++)
		ck_assert_str_ne(argv[i], "--device");
	launch_argv_free(argv);
	p.cuda = true;
	argv = launch_argv(&p);
	size_t n = 0;
	while (argv[n])
		n++;
	ck_assert_uint_ge(n, 4);
	ck_assert_str_eq(argv[n - 4], "--device");
	ck_assert_str_eq(argv[n - 3], "cuda");
	ck_assert_str_eq(argv[n - 2], "--layout");
	launch_argv_free(argv);
}
END_TEST

START_TEST(attempt_argv)
{
	/* the attempt mode's launch: the key's name for mpirun -x, never its value */
	static const char *const exported[] = {"TRAINYARD_DATA_KEY", NULL};
	launch_plan p = {.train_bin = "t",
	                 .spec_path = "s.json",
	                 .ckpt_dir = "ck",
	                 .layout = {.data_parallel = 1,
	                            .tensor_parallel = 1,
	                            .pipeline_parallel = 1,
	                            .micro_batch = 1,
	                            .grad_accum = 1},
	                 .encrypt_for = "tenant:job",
	                 .export_env = exported};
	char **argv = launch_argv(&p);
	ck_assert_ptr_nonnull(argv);
	static const char *const head[] = {"-x",         "OPENBLAS_NUM_THREADS",
	                                   "-x",         "TRAINYARD_DATA_KEY",
	                                   "t",          "train",
	                                   "--spec",     "s.json",
	                                   "--ckpt-dir", "ck",
	                                   "--metrics",  "-",
	                                   "--encrypt",  "tenant:job",
	                                   "--layout"};
	for (size_t i = 0; i < sizeof(head) / sizeof(head[0]); i++)
		ck_assert_str_eq(argv[9 + i], head[i]);
	launch_argv_free(argv);
	p.slurm = true; /* srun passes the whole environment: no -x */
	argv = launch_argv(&p);
	for (size_t i = 0; argv[i]; i++)
		ck_assert_str_ne(argv[i], "TRAINYARD_DATA_KEY");
	launch_argv_free(argv);
}
END_TEST

START_TEST(classification_table)
{
	static const struct {
		launch_end end;
		const char *name;
		bool retry;
		int status;
	} rows[] = {
	    {{.exit_status = 0}, "ok", false, 0},
	    {{.exit_status = 16}, "stopped", false, 16},
	    {{.exit_status = 137}, "rank_lost", true, 12}, /* mpirun: a rank got SIGKILL */
	    {{.exit_status = 139}, "rank_lost", true, 12},
	    {{.exit_status = 12, .ranks_lost = 1}, "rank_lost", true, 12},
	    {{.exit_status = 11}, "out_of_memory", true, 11},
	    {{.exit_status = 12}, "comm_failure", true, 12},
	    {{.exit_status = 10}, "invalid_config", false, 10},
	    {{.exit_status = 13}, "data_error", false, 13},
	    {{.exit_status = 14}, "numerical_failure", false, 14},
	    {{.exit_status = 15}, "checkpoint_corrupt", false, 15},
	    {{.exit_status = 1}, "internal", false, 1},
	    {{.exit_status = 2}, "internal", false, 1},
	    {{.exit_status = 128}, "internal", false, 1},
	    {{.start_failed = true}, "launch_failed", false, 1},
	    {{.exit_status = 132, .start_failed = true}, "launch_failed", false, 1}, /* mpirun */
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		failure_class c = launch_classify(&rows[i].end);
		ck_assert_msg(strcmp(failure_name(c), rows[i].name) == 0, "status %d: %s, not %s",
		              rows[i].end.exit_status, failure_name(c), rows[i].name);
		ck_assert_int_eq(failure_falls_back(c), rows[i].retry);
		ck_assert_int_eq(failure_status(c), rows[i].status);
	}
}
END_TEST

START_TEST(mpirun_messages)
{
	/* as Open MPI 4.1's mpirun printed them when a rank got SIGKILL, or the trainer is missing
	 */
	ck_assert_int_eq(
	    launch_line_kind("mpirun noticed that process rank 1 with PID 0 on node vm "
	                     "exited on signal 9 (Killed)."),
	    LAUNCH_LINE_RANK_LOST);
	ck_assert_int_eq(launch_line_kind("mpirun was unable to launch the specified application "
	                                  "as it could not access"),
	                 LAUNCH_LINE_START_FAILED);
	ck_assert_int_eq(launch_line_kind("2 total processes failed to start"),
	                 LAUNCH_LINE_START_FAILED);
	ck_assert_int_eq(launch_line_kind("mpirun detected that one or more processes exited with "
	                                  "non-zero status, thus causing"),
	                 LAUNCH_LINE_OTHER);
	ck_assert_int_eq(launch_line_kind("trainyard-train[0]: could not open data"),
	                 LAUNCH_LINE_OTHER);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("runtime_plan");
	TCase *tc = tcase_create("plan");
	tcase_add_test(tc, auto_shrinks_dp_then_pp_then_tp);
	tcase_add_test(tc, auto_keeps_global_batch_whole);
	tcase_add_test(tc, explicit_and_empty_fallbacks);
	tcase_add_test(tc, pick_the_first_rung_that_fits);
	tcase_add_test(tc, pick_on_gpus_passes_over_what_the_device_does_not_train);
	tcase_add_test(tc, mpirun_argv);
	tcase_add_test(tc, srun_argv);
	tcase_add_test(tc, shown_argv_has_no_paths);
	tcase_add_test(tc, attempt_argv);
	tcase_add_test(tc, device_cuda_when_gpus_are_real);
	tcase_add_test(tc, classification_table);
	tcase_add_test(tc, mpirun_messages);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
