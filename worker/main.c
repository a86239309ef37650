/*
 * main.c - trainyard-worker: the worker runtime a job's batch script
 * starts once inside its allocation. `run` drives the job's training to
 * its outcome (driver.h) with local files as the sink (sink.h); `attempt`
 * runs one attempt of a platform job with the API as the sink (attempt.h).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attempt.h"
#include "driver.h"
#include "failure.h"
#include "sink.h"
#include "specopt.h"
#include "task.h"

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: trainyard-worker run --spec FILE --ckpt-dir DIR --metrics-out FILE\n"
	        "                            --log-out FILE [options]\n"
	        "       trainyard-worker attempt [--url URL] [--slots N]\n"
	        "                            [--rank-memory-limit BYTES] [--set ...]\n"
	        "       trainyard-worker task [--memory-limit BYTES] -- ARGV...\n"
	        "\n"
	        "Runs the job's trainer ranks (mpirun; srun --mpi=pmix when SLURM_JOB_ID is set),\n"
	        "and after an out-of-memory, a communication failure or a lost rank runs them\n"
	        "again in the next fallback layout that fits, from the last checkpoint.\n"
	        "\n"
	        "  --spec FILE          the job spec JSON\n"
	        "  --set SECTION.FIELD=VALUE  override one spec field (repeatable)\n"
	        "  --ckpt-dir DIR       the job's checkpoints: written there, resumed from there\n"
	        "  --data-root DIR      the spec's data paths resolve beneath DIR\n"
	        "                       (trainyard-train --data-root; default: its current one)\n"
	        "  --metrics-out FILE   the trainer's step metrics, JSON lines (appended)\n"
	        "  --log-out FILE       every line the launches and the worker print (appended)\n"
	        "  --events-out FILE    checkpoints, launches, fallbacks and the outcome, JSON\n"
	        "                       lines (appended; default: into the log)\n"
	        "  --slots N            ranks the allocation holds (default: the spec's ranks)\n"
	        "  --rank-memory-limit BYTES  address space of each rank (trainyard-train\n"
	        "                       --memory-limit)\n"
	        "  --code-dir DIR       a command job's program (docs/own-code.md): its files\n"
	        "  --work-dir DIR       a command job's checkpoints being written and the one\n"
	        "                       resumed from (default: a new directory in $TMPDIR)\n"
	        "\n"
	        "attempt runs attempt TRAINYARD_ATTEMPT of a platform job with the credential\n"
	        "TRAINYARD_ATTEMPT_TOKEN (both from the environment; the credential is removed\n"
	        "from it once read): the spec and the data key from the API at --url (default\n"
	        "TRAINYARD_URL), checkpoints and the sealed log under TRAINYARD_STORAGE_ROOT,\n"
	        "the data in the tenant's directory of TRAINYARD_DATA_ROOT, metrics,\n"
	        "checkpoints, fallbacks and the end reported to the API.\n"
	        "\n"
	        "task is one rank of a command job, as the launcher starts it (worker/README.md).\n"
	        "\n"
	        "The trainer is TRAINYARD_TRAIN_BIN, else trainyard-train next to this program.\n"
	        "Exit status: 0 succeeded, 16 stopped, else the failure class's trainer status\n"
	        "(rank_lost is 12, comm_failure); 2 for a wrong command line.\n");
}

/* A whole number at least min. RET 0, or -1. */
static int parse_count(const char *text, unsigned long long min, unsigned long long max,
                       unsigned long long *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(text, &end, 10);
	if (errno || end == text || *end || text[0] == '-' || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

/* This program's own path (each rank of a command job runs its `task`). */
static void self_path(char *out, size_t n, const char *argv0)
{
	ssize_t len = readlink("/proc/self/exe", out, n - 1);
	if (len > 0)
		out[len] = '\0';
	else
		snprintf(out, n, "%s", argv0);
}

/*
 * The Python module of the report protocol (sdk/python): TRAINYARD_SDK_PYTHON,
 * else sdk/python of the source tree this program was built in (build/bin/..),
 * else none. RET out, or NULL.
 */
static const char *find_sdk_python(char *out, size_t n, const char *self)
{
	const char *env = getenv("TRAINYARD_SDK_PYTHON");
	if (env && *env) {
		snprintf(out, n, "%s", env);
		return out;
	}
	const char *slash = strrchr(self, '/');
	if (!slash)
		return NULL;
	snprintf(out, n, "%.*s/../../sdk/python/trainyard.py", (int)(slash - self), self);
	if (access(out, R_OK) != 0)
		return NULL;
	out[strlen(out) - strlen("/trainyard.py")] = '\0';
	return out;
}

/* trainyard-train: TRAINYARD_TRAIN_BIN, else next to this program, else from PATH. */
static void find_train_bin(char *out, size_t n, const char *argv0)
{
	const char *env = getenv("TRAINYARD_TRAIN_BIN");
	if (env && *env) {
		snprintf(out, n, "%s", env);
		return;
	}
	char self[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len > 0)
		self[len] = '\0';
	else
		snprintf(self, sizeof(self), "%s", argv0);
	char *slash = strrchr(self, '/');
	if (slash) {
		*slash = '\0';
		snprintf(out, n, "%s/trainyard-train", self);
		if (access(out, X_OK) == 0)
			return;
	}
	snprintf(out, n, "trainyard-train");
}

static int cmd_run(int argc, char **argv, const char *argv0, bool attempt)
{
	static const struct option opts[] = {SPECOPT_ROW_SPEC,
	                                     {"url", required_argument, 0, 'u'},
	                                     SPECOPT_ROW_SET,
	                                     {"ckpt-dir", required_argument, 0, 'c'},
	                                     {"data-root", required_argument, 0, 'D'},
	                                     {"metrics-out", required_argument, 0, 'm'},
	                                     {"log-out", required_argument, 0, 'l'},
	                                     {"events-out", required_argument, 0, 'e'},
	                                     {"slots", required_argument, 0, 'n'},
	                                     {"rank-memory-limit", required_argument, 0, 'M'},
	                                     {"code-dir", required_argument, 0, 'C'},
	                                     {"work-dir", required_argument, 0, 'W'},
	                                     {"help", no_argument, 0, 'h'},
	                                     {0, 0, 0, 0}};
	runtime_options o = {0};
	const char *metrics = NULL, *log = NULL, *events = NULL, *url = NULL;
	specopt so;
	unsigned long long v;
	bool bad = specopt_init(&so, argc) < 0;
	int c;
	while (!bad && (c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (specopt_take(&so, c, optarg)) {
			bad = attempt && so.spec; /* an attempt's spec comes from the API */
			continue;
		}
		switch (c) {
		case 'u':
			url = optarg;
			bad = !attempt;
			break;
		case 'c':
			o.ckpt_dir = optarg;
			bad = attempt;
			break;
		case 'D':
			o.data_root = optarg;
			o.program_data_dir = optarg;
			bad = attempt;
			break;
		case 'C':
			o.code_dir = optarg;
			bad = attempt;
			break;
		case 'W':
			o.work_dir = optarg;
			bad = attempt;
			break;
		case 'm':
			metrics = optarg;
			bad = attempt;
			break;
		case 'l':
			log = optarg;
			bad = attempt;
			break;
		case 'e':
			events = optarg;
			bad = attempt;
			break;
		case 'n':
			bad = parse_count(optarg, 1, INT_MAX, &v) < 0;
			o.slots = (int)v;
			break;
		case 'M':
			bad = parse_count(optarg, 1, SIZE_MAX, &v) < 0;
			o.rank_memory_limit = (size_t)v;
			break;
		case 'h':
			usage(stdout);
			specopt_release(&so);
			return TRAIN_OK;
		default:
			bad = true;
		}
	}
	o.spec_path = so.spec;
	o.overrides = so.overrides;
	o.n_overrides = so.n_overrides;
	char self[PATH_MAX], sdk[PATH_MAX + 32], work[PATH_MAX] = "";
	self_path(self, sizeof(self), argv0);
	o.worker_bin = self;
	o.sdk_python = find_sdk_python(sdk, sizeof(sdk), self);
	if (attempt && !bad && optind == argc) {
		char train_bin[PATH_MAX + 32];
		find_train_bin(train_bin, sizeof(train_bin), argv0);
		o.train_bin = train_bin;
		int rc = attempt_run(url, &o);
		specopt_release(&so);
		return rc;
	}
	/* the trainer reads the spec again: it must be a file */
	if (bad || attempt || optind != argc || !o.spec_path || strcmp(o.spec_path, "-") == 0 ||
	    !o.ckpt_dir || !metrics || !log) {
		usage(stderr);
		specopt_release(&so);
		return TRAIN_USAGE;
	}
	char train_bin[PATH_MAX + 32];
	find_train_bin(train_bin, sizeof(train_bin), argv0);
	o.train_bin = train_bin;
	if (o.code_dir && !o.work_dir) {
		const char *tmp = getenv("TMPDIR");
		snprintf(work, sizeof(work), "%s/trainyard-work-XXXXXX",
		         tmp && *tmp ? tmp : "/tmp");
		o.work_dir = mkdtemp(work);
	}
	char err[1024];
	runtime_sink *sink = sink_file_new(metrics, log, events, err, sizeof(err));
	if (!sink) {
		fprintf(stderr, "trainyard-worker: %s\n", err);
		specopt_release(&so);
		return TRAIN_USAGE;
	}
	int rc = runtime_run(&o, sink);
	sink_free(sink);
	specopt_release(&so);
	if (work[0])
		rmdir(work);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? TRAIN_USAGE : TRAIN_OK;
	}
	if (strcmp(argv[1], "run") == 0)
		return cmd_run(argc - 1, argv + 1, argv[0], false);
	if (strcmp(argv[1], "attempt") == 0)
		return cmd_run(argc - 1, argv + 1, argv[0], true);
	if (strcmp(argv[1], "task") == 0)
		return task_main(argc - 2, argv + 2);
	fprintf(stderr, "trainyard-worker: unknown command \"%s\"\n", argv[1]);
	usage(stderr);
	return TRAIN_USAGE;
}
