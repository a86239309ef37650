/*
 * main.c - trainyard-train: `train` runs a job spec, `tokenize` turns text
 * files into token shards, `reshard` rewrites a checkpoint for another
 * parallel layout. Exit statuses: lib/job/failure.def.
 */
#include <errno.h>
#include <getopt.h>
#include <openssl/crypto.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypt.h"
#include "failure.h"
#include "reshard.h"
#include "specopt.h"
#include "tokenize.h"
#include "train_config.h"
#include "trainer.h"

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: trainyard-train train --spec FILE [options]\n"
	        "       trainyard-train tokenize --out PREFIX [--shard-tokens N] FILE...\n"
	        "       trainyard-train reshard --spec FILE [--set ...] [--layout L] --from DIR "
	        "--to DIR [--step N]\n"
	        "\n"
	        "train options:\n"
	        "  --spec FILE          job spec JSON, as the API accepts it (\"-\": stdin)\n"
	        "  --set SECTION.FIELD=VALUE  override one spec field (repeatable)\n"
	        "  --layout L           train in layout L instead of the spec's parallel one:\n"
	        "                       data_parallel=N,tensor_parallel=N,pipeline_parallel=N,\n"
	        "                       zero_stage=N,micro_batch=N (the worker runtime's\n"
	        "                       fallbacks); the spec's model and global batch stay\n"
	        "  --ckpt-dir DIR       write checkpoints there; resume from the newest valid one\n"
	        "  --data-root DIR      the spec's data paths resolve beneath DIR, following no\n"
	        "                       symbolic link (default: the current directory)\n"
	        "  --no-resume          start from scratch even when checkpoints exist\n"
	        "  --metrics DEST       JSON lines per step: \"-\", \"fd:N\" or a file\n"
	        "  --init-from FILE     start from weights in the llm.c model format (made\n"
	        "                       for as many positions as seq_len or more)\n"
	        "  --init-ckpt DIR      start from the weights alone of the newest checkpoint in\n"
	        "                       that store (another run's; step 0, a fresh optimizer)\n"
	        "  --init-encrypt TENANT_ID:JOB_ID  DIR is sealed for that tenant and job, with\n"
	        "                       the data key ring in TRAINYARD_INIT_KEY\n"
	        "  --export FILE        write the final weights in the llm.c model format\n"
	        "  --stop-after N       take at most N optimizer steps in this run\n"
	        "  --peak-flops F       per-rank peak FLOP/s for MFU\n"
	        "  --threads N          OpenMP threads per rank\n"
	        "  --loss-scale S       fp16: the initial dynamic loss scale (default 65536)\n"
	        "  --memory-limit BYTES cap each rank's address space; beyond it: out of memory\n"
	        "  --device cpu|cuda    where the model trains (default cpu); cuda: one GPU,\n"
	        "                       fp32, through the GPU backend (make GPU=1)\n"
	        "  --encrypt TENANT_ID:JOB_ID  seal checkpoints for that tenant and job with the\n"
	        "                       data key ring in TRAINYARD_DATA_KEY: keys of 64 hex\n"
	        "                       digits, oldest generation first, separated by commas;\n"
	        "                       the last seals (the variable is cleared once read)\n"
	        "\n"
	        "\n"
	        "reshard: rewrite the newest valid checkpoint of --from (or --step N) into --to\n"
	        "for the spec's parallel layout (or --layout's), so a run of that layout resumes\n"
	        "from it.\n"
	        "\n"
	        "Run under mpirun or srun --mpi=pmix for several ranks: the world size must\n"
	        "equal data_parallel x tensor_parallel x pipeline_parallel of the layout it\n"
	        "trains. Exit statuses:\n");
	for (int c = 0; c < FAILURE__COUNT; c++)
		if (failure_is_exit((failure_class)c))
			fprintf(f, "  %3d %-19s %s\n", failure_status((failure_class)c),
			        failure_name((failure_class)c), failure_doc((failure_class)c));
}

/* The --spec with the --set overrides, validated, and the --layout. RET a train_exit. */
static int load_config(train_config *tc, const specopt *so)
{
	char err[4096];
	if (train_config_load(tc, so->spec, so->overrides, so->n_overrides, so->layout, err,
	                      sizeof(err)) < 0) {
		fprintf(stderr, "trainyard-train: %s\n", err);
		return TRAIN_INVALID_CONFIG;
	}
	return TRAIN_OK;
}

/* A whole number of bytes, at least 1. RET 0, or -1. */
static int parse_bytes(const char *text, size_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(text, &end, 10);
	if (errno || end == text || *end || v == 0 || text[0] == '-' || v > SIZE_MAX)
		return -1;
	*out = (size_t)v;
	return 0;
}

/*
 * The sealing context of --OPTION TENANT_ID:JOB_ID, with the data key ring
 * of the environment variable env (crypt_object_ctx_init_text: one key or
 * several generations, the last sealing), which is then wiped from the
 * environment (a key is never on a command line). RET 0, or -1 after
 * saying why.
 */
static int sealing_ctx(const char *option, const char *arg, const char *env, crypt_object_ctx *out)
{
	char ids[2 * CRYPT_ID_MAX + 2];
	snprintf(ids, sizeof(ids), "%s", arg);
	char *job = strchr(ids, ':');
	char *text = getenv(env);
	int rc = -1;
	if (!job) {
		fprintf(stderr, "trainyard-train: --%s takes TENANT_ID:JOB_ID\n", option);
	} else {
		*job++ = '\0';
		rc = crypt_object_ctx_init_text(out, ids, job, text);
		if (rc < 0)
			fprintf(
			    stderr,
			    "trainyard-train: --%s needs %s, keys of 64 hex digits separated by "
			    "commas, and a tenant and job id\n",
			    option, env);
	}
	if (text) {
		OPENSSL_cleanse(text, strlen(text));
		unsetenv(env);
	}
	return rc < 0 ? -1 : 0;
}

static int cmd_train(int argc, char **argv)
{
	static const struct option opts[] = {SPECOPT_ROW_SPEC,
	                                     SPECOPT_ROW_SET,
	                                     SPECOPT_ROW_LAYOUT,
	                                     {"ckpt-dir", required_argument, 0, 'c'},
	                                     {"data-root", required_argument, 0, 'D'},
	                                     {"no-resume", no_argument, 0, 'R'},
	                                     {"metrics", required_argument, 0, 'm'},
	                                     {"init-from", required_argument, 0, 'i'},
	                                     {"export", required_argument, 0, 'e'},
	                                     {"stop-after", required_argument, 0, 'n'},
	                                     {"peak-flops", required_argument, 0, 'p'},
	                                     {"threads", required_argument, 0, 't'},
	                                     {"loss-scale", required_argument, 0, 'l'},
	                                     {"memory-limit", required_argument, 0, 'M'},
	                                     {"encrypt", required_argument, 0, 'E'},
	                                     {"init-ckpt", required_argument, 0, 'I'},
	                                     {"init-encrypt", required_argument, 0, 'J'},
	                                     {"device", required_argument, 0, 'd'},
	                                     {"help", no_argument, 0, 'h'},
	                                     {0, 0, 0, 0}};
	train_options o = {.stop_after = -1};
	specopt so;
	int c;
	bool bad_limit = false, bad_device = false;
	const char *encrypt_for = NULL, *init_for = NULL;
	crypt_object_ctx sealed, init_sealed;
	if (specopt_init(&so, argc) < 0) {
		fprintf(stderr, "trainyard-train: out of memory\n");
		return TRAIN_OOM;
	}
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (specopt_take(&so, c, optarg))
			continue;
		switch (c) {
		case 'c':
			o.ckpt_dir = optarg;
			break;
		case 'D':
			o.data_root = optarg;
			break;
		case 'R':
			o.no_resume = true;
			break;
		case 'm':
			o.metrics = optarg;
			break;
		case 'i':
			o.init_from = optarg;
			break;
		case 'e':
			o.export_path = optarg;
			break;
		case 'n':
			o.stop_after = atoi(optarg);
			break;
		case 'p':
			o.peak_flops = atof(optarg);
			break;
		case 't':
			o.threads = atoi(optarg);
			break;
		case 'l':
			o.loss_scale = atof(optarg);
			break;
		case 'M':
			bad_limit = parse_bytes(optarg, &o.memory_limit) < 0;
			break;
		case 'E':
			encrypt_for = optarg;
			break;
		case 'I':
			o.init_ckpt = optarg;
			break;
		case 'J':
			init_for = optarg;
			break;
		case 'd':
			o.cuda = strcmp(optarg, "cuda") == 0;
			bad_device = !o.cuda && strcmp(optarg, "cpu") != 0;
			break;
		case 'h':
			usage(stdout);
			specopt_release(&so);
			return TRAIN_OK;
		default:
			usage(stderr);
			specopt_release(&so);
			return TRAIN_USAGE;
		}
	}
	if (!so.spec || optind != argc || o.stop_after < -1 || o.threads < 0 || bad_limit ||
	    bad_device || (init_for && !o.init_ckpt) || (o.init_ckpt && o.init_from)) {
		usage(stderr);
		specopt_release(&so);
		return TRAIN_USAGE;
	}
	if (encrypt_for) {
		if (sealing_ctx("encrypt", encrypt_for, "TRAINYARD_DATA_KEY", &sealed) < 0) {
			specopt_release(&so);
			return TRAIN_USAGE;
		}
		o.encrypt = &sealed;
	}
	if (init_for) {
		if (sealing_ctx("init-encrypt", init_for, "TRAINYARD_INIT_KEY", &init_sealed) < 0) {
			if (encrypt_for)
				crypt_object_ctx_clear(&sealed);
			specopt_release(&so);
			return TRAIN_USAGE;
		}
		o.init_encrypt = &init_sealed;
	}
	train_config tc;
	int rc = load_config(&tc, &so);
	specopt_release(&so);
	if (rc == TRAIN_OK) {
		rc = train_run(&tc, &o);
		train_config_release(&tc);
	}
	if (encrypt_for)
		crypt_object_ctx_clear(&sealed);
	if (init_for)
		crypt_object_ctx_clear(&init_sealed);
	return rc;
}

static int cmd_reshard(int argc, char **argv)
{
	static const struct option opts[] = {SPECOPT_ROW_SPEC,
	                                     SPECOPT_ROW_SET,
	                                     SPECOPT_ROW_LAYOUT,
	                                     {"from", required_argument, 0, 'f'},
	                                     {"to", required_argument, 0, 't'},
	                                     {"step", required_argument, 0, 'n'},
	                                     {"help", no_argument, 0, 'h'},
	                                     {0, 0, 0, 0}};
	reshard_options o = {0};
	specopt so;
	int c;
	if (specopt_init(&so, argc) < 0) {
		fprintf(stderr, "trainyard-train: out of memory\n");
		return TRAIN_OOM;
	}
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (specopt_take(&so, c, optarg))
			continue;
		switch (c) {
		case 'f':
			o.from = optarg;
			break;
		case 't':
			o.to = optarg;
			break;
		case 'n':
			o.step = atoi(optarg);
			break;
		case 'h':
			usage(stdout);
			specopt_release(&so);
			return TRAIN_OK;
		default:
			usage(stderr);
			specopt_release(&so);
			return TRAIN_USAGE;
		}
	}
	if (!so.spec || !o.from || !o.to || optind != argc || o.step < 0) {
		usage(stderr);
		specopt_release(&so);
		return TRAIN_USAGE;
	}
	char a[PATH_MAX], b[PATH_MAX];
	if (realpath(o.from, a) && realpath(o.to, b) && strcmp(a, b) == 0) {
		fprintf(stderr,
		        "trainyard-train reshard: --from and --to are the same directory\n");
		specopt_release(&so);
		return TRAIN_USAGE;
	}
	train_config tc;
	int rc = load_config(&tc, &so);
	specopt_release(&so);
	if (rc != TRAIN_OK)
		return rc;
	rc = reshard_run(&tc, &o);
	train_config_release(&tc);
	return rc;
}

static int cmd_tokenize(int argc, char **argv)
{
	static const struct option opts[] = {{"out", required_argument, 0, 'o'},
	                                     {"shard-tokens", required_argument, 0, 'n'},
	                                     {"help", no_argument, 0, 'h'},
	                                     {0, 0, 0, 0}};
	const char *out = NULL;
	long long shard = 100000000;
	int c;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'n':
			shard = atoll(optarg);
			break;
		case 'h':
			usage(stdout);
			return TRAIN_OK;
		default:
			usage(stderr);
			return TRAIN_USAGE;
		}
	}
	if (!out || optind >= argc || shard < 1) {
		usage(stderr);
		return TRAIN_USAGE;
	}
	char err[1024];
	size_t total = 0;
	if (tokenize_files(argv + optind, argc - optind, out, (size_t)shard, &total, err,
	                   sizeof(err)) < 0) {
		fprintf(stderr, "trainyard-train: %s\n", err);
		return TRAIN_DATA;
	}
	printf("wrote %zu tokens to %s_*.bin\n", total, out);
	return TRAIN_OK;
}

int main(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? TRAIN_USAGE : TRAIN_OK;
	}
	if (strcmp(argv[1], "train") == 0)
		return cmd_train(argc - 1, argv + 1);
	if (strcmp(argv[1], "tokenize") == 0)
		return cmd_tokenize(argc - 1, argv + 1);
	if (strcmp(argv[1], "reshard") == 0)
		return cmd_reshard(argc - 1, argv + 1);
	fprintf(stderr, "trainyard-train: unknown command \"%s\"\n", argv[1]);
	usage(stderr);
	return TRAIN_USAGE;
}
