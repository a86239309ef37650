/*
 * attempt.c - one attempt of a platform job (attempt.h): the attempt's
 * spec and key from the API, the job's storage, then the driver with the
 * API sink.
 */
#include "attempt.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "codestore.h"
#include "config.h"
#include "crypt.h"
#include "datapath.h"
#include "datasets.h"
#include "failure.h"
#include "fileio.h"
#include "hex.h"
#include "identity.h"
#include "initfrom.h"
#include "program.h"
#include "sink.h"
#include "storage.h"
#include "tenantfs.h"

#define SETUP_RETRY_S 120.0 /* how long the set-up calls wait out an unreachable API */
#define KEY_ENV       "TRAINYARD_DATA_KEY"

typedef struct attempt {
	rt_client *client;
	char id[STORAGE_UUID_LEN + 1];
	char tenant_id[STORAGE_UUID_LEN + 1];
	char job_id[STORAGE_UUID_LEN + 1];
	int number;
	char spec_path[4096]; /* the private copy of the spec; "" until made */
	crypt_object_ctx ctx; /* tenant, job, data key */
	char *key_env;        /* "TRAINYARD_DATA_KEY=<ring>", for the launcher only */
	char *launch_env[3];  /* {key_env, init key, NULL}: what the driver adds for the launcher */
	const char *export_env[3]; /* the names of launch_env's variables */
	char encrypt_for[2 * STORAGE_UUID_LEN + 2];
	json_t *spec;           /* the normalised spec, until it is written for the trainer */
	json_t *datasets;       /* [{role, version_id}]: the registered datasets to unseal */
	char data_dir[4096];    /* where they were unsealed; "" when none */
	json_t *init_from;      /* the checkpoint to start from, or NULL */
	init_fetched init;      /* its copy */
	char refused[64];       /* the code of the last set-up call the API refused */
	bool command;           /* a command job: its code and work directories below */
	char attempt_dir[4096]; /* the tenant's data directory's attempts/<id>, for a command job */
	char code_dir[4200];
	char work_dir[4200];
} attempt;

static void sleep_s(double s)
{
	struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
	nanosleep(&ts, NULL);
}

/* A set-up call, tried again while the API is unreachable. RET 0 with *a, or -1 after saying why.
 */
static int call_setup(attempt *at, const char *method, const char *what, rt_answer *a)
{
	double waited = 0, backoff = 0.5;
	for (;;) {
		if (rt_client_call(at->client, method, what, NULL, a) == 0)
			return 0;
		if (!rt_answer_transient(a) || waited >= SETUP_RETRY_S) {
			fprintf(stderr, "trainyard-worker: %s %s: %s\n", method,
			        what[0] ? what : "the attempt", a->message);
			snprintf(at->refused, sizeof(at->refused), "%s", a->code);
			rt_answer_release(a);
			return -1;
		}
		fprintf(stderr, "trainyard-worker: %s %s: %s; trying again in %.1f s\n", method,
		        what[0] ? what : "the attempt", a->message, backoff);
		rt_answer_release(a);
		sleep_s(backoff);
		waited += backoff;
		backoff = backoff * 2 > 10 ? 10 : backoff * 2;
	}
}

static int copy_id(char *out, const json_t *v, const char *what)
{
	const char *s = json_string_value(v);
	if (!s || !storage_uuid_valid(s)) {
		fprintf(stderr, "trainyard-worker: the attempt's %s is not an id\n", what);
		return -1;
	}
	snprintf(out, STORAGE_UUID_LEN + 1, "%s", s);
	return 0;
}

/* The spec, in a private temporary file the trainer reads. RET 0 or -1. */
static int spec_write(attempt *at, const json_t *spec)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(at->spec_path, sizeof(at->spec_path), "%s/trainyard-spec-XXXXXX",
	         tmp && *tmp ? tmp : "/tmp");
	int fd = mkstemp(at->spec_path); /* 0600 */
	if (fd < 0) {
		fprintf(stderr, "trainyard-worker: could not create a file in \"%s\": %s\n",
		        tmp && *tmp ? tmp : "/tmp", strerror(errno));
		at->spec_path[0] = '\0';
		return -1;
	}
	int rc = json_dumpfd(spec, fd, JSON_INDENT(1));
	if (close(fd) < 0 || rc < 0) {
		fprintf(stderr, "trainyard-worker: could not write \"%s\"\n", at->spec_path);
		return -1;
	}
	return 0;
}

/* GET the attempt: ids, number, spec. RET 0 or -1. */
static int attempt_read(attempt *at)
{
	rt_answer a;
	if (call_setup(at, "GET", "", &a) < 0)
		return -1;
	int rc = -1;
	const json_t *spec = json_object_get(a.body, "spec");
	json_int_t number = json_integer_value(json_object_get(a.body, "number"));
	if (copy_id(at->tenant_id, json_object_get(a.body, "tenant_id"), "tenant") < 0 ||
	    copy_id(at->job_id, json_object_get(a.body, "job_id"), "job") < 0)
		goto out;
	if (number < 1 || number > 1000000 || !json_is_object(spec)) {
		fprintf(stderr, "trainyard-worker: the attempt has no number or no spec\n");
		goto out;
	}
	at->number = (int)number;
	at->spec = json_deep_copy(spec);
	at->datasets = json_incref(json_object_get(a.body, "datasets"));
	at->init_from = json_incref(json_object_get(a.body, "init_from"));
	rc = at->spec ? 0 : -1;
out:
	rt_answer_release(&a);
	return rc;
}

/* POST .../key: the data key ring into ctx and the launcher's environment. RET 0 or -1. */
static int attempt_key(attempt *at)
{
	rt_answer a;
	if (call_setup(at, "POST", "/key", &a) < 0)
		return -1;
	char *text = (char *)json_string_value(json_object_get(a.body, "keys"));
	int rc = -1;
	if (crypt_object_ctx_init_text(&at->ctx, at->tenant_id, at->job_id, text) != 0) {
		fprintf(stderr, "trainyard-worker: the API's answer holds no data key ring\n");
	} else {
		size_t n = strlen(KEY_ENV) + 1 + strlen(text) + 1;
		if ((at->key_env = malloc(n))) {
			snprintf(at->key_env, n, "%s=%s", KEY_ENV, text);
			rc = 0;
		}
	}
	if (text)
		OPENSSL_cleanse(text, strlen(text));
	rt_answer_release(&a);
	return rc;
}

/*
 * The credential from the file TRAINYARD_ATTEMPT_TOKEN_FILE names (how the
 * scheduler hands it over: a 0600 file, so it never sits in Slurm's copy
 * of the job's environment). The file is removed once read: the
 * credential is on disk only until the attempt starts, and an attempt
 * starts once. A batch job that Slurm runs again (slurmctld restarted
 * from a state saved before the job ran) finds no file.
 * RET 0, 1 when there is no such file, or -1 when it holds no credential.
 */
static int credential_from_file(const char *path, char *out, size_t n)
{
	/* the tenant's own spool directory: no FIFO may hold the worker up */
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 1 : -1;
	struct stat st;
	ssize_t k =
	    fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? fileio_pread_all(fd, out, n - 1, 0) : -1;
	close(fd);
	unlink(path);
	if (k < 0)
		return -1;
	size_t got = (size_t)k;
	out[got] = '\0';
	while (got > 0 && (out[got - 1] == '\n' || out[got - 1] == '\r'))
		out[--got] = '\0';
	return got > 0 && got < n - 1 ? 0 : -1;
}

/*
 * The credential out of the environment, wiped there, or out of the file
 * TRAINYARD_ATTEMPT_TOKEN_FILE names. RET 0, 1 when the file is gone (the
 * attempt started before), or -1 when it is missing.
 */
static int credential_take(char *out, size_t n)
{
	char *tok = getenv("TRAINYARD_ATTEMPT_TOKEN");
	if (!tok || !*tok) {
		const char *file = getenv("TRAINYARD_ATTEMPT_TOKEN_FILE");
		return file && *file ? credential_from_file(file, out, n) : -1;
	}
	if (strlen(tok) >= n) {
		OPENSSL_cleanse(tok, strlen(tok));
		unsetenv("TRAINYARD_ATTEMPT_TOKEN");
		return -1;
	}
	snprintf(out, n, "%s", tok);
	OPENSSL_cleanse(tok, strlen(tok));
	unsetenv("TRAINYARD_ATTEMPT_TOKEN");
	return 0;
}

/* The attempt's end in class c when it fails before the driver runs; the reason is "c: why". */
static void finish_early(attempt *at, failure_class c, const char *why)
{
	char reason[200];
	snprintf(reason, sizeof(reason), "%s: %s", failure_name(c), why);
	json_t *body = json_pack("{s:s, s:s, s:s}", "outcome", "failed", "reason", reason,
	                         "failure_class", failure_name(c));
	rt_answer a;
	if (body && rt_client_call(at->client, "POST", "/finish", body, &a) < 0)
		fprintf(stderr, "trainyard-worker: the attempt's end was not reported: %s\n",
		        a.message);
	if (body)
		rt_answer_release(&a);
	json_decref(body);
}

static void attempt_release(attempt *at)
{
	if (at->spec_path[0])
		unlink(at->spec_path);
	init_remove(&at->init);
	program_tree_remove(at->code_dir);
	program_tree_remove(at->work_dir);
	datasets_remove(at->data_dir);
	if (at->attempt_dir[0])
		rmdir(at->attempt_dir);
	json_decref(at->spec);
	json_decref(at->datasets);
	json_decref(at->init_from);
	if (at->key_env) {
		OPENSSL_cleanse(at->key_env, strlen(at->key_env));
		free(at->key_env);
	}
	crypt_object_ctx_clear(&at->ctx);
	rt_client_free(at->client);
}

static int dataset_call(void *arg, const char *what, rt_answer *a)
{
	return call_setup(arg, "POST", what, a);
}

/*
 * A set-up step failed for what. When the API refused it for good (a
 * grant no longer in force, a checkpoint no longer kept, keys destroyed)
 * the attempt ends as a data error, which is not retried; otherwise as an
 * internal failure. RET the exit status, or -1 for the internal one.
 */
static int setup_refused(attempt *at, const char *what, const char *doing)
{
	static const char *const for_good[] = {"grant_not_in_force", "checkpoint_not_found",
	                                       "keys_unavailable"};
	char why[180];
	for (size_t i = 0; i < sizeof(for_good) / sizeof(for_good[0]); i++)
		if (strcmp(at->refused, for_good[i]) == 0) {
			snprintf(why, sizeof(why), "%s cannot be read any more (%s)", what,
			         at->refused);
			finish_early(at, FAILURE_DATA, why);
			return TRAIN_DATA;
		}
	snprintf(why, sizeof(why), "the worker could not %s", doing);
	finish_early(at, FAILURE_INTERNAL, why);
	return -1;
}

/* The attempt's sealed log, created when missing, beneath the tenant's directory. */
static int log_open(const ty_config *cfg, const attempt *at, const char *rel, char *err,
                    size_t errlen)
{
	tenant_tree t;
	int rc = tenant_tree_open(&t, cfg->storage_root, at->tenant_id, err, errlen);
	if (rc)
		return rc;
	int fd = tenant_tree_openat(&t, rel, O_RDWR | O_CREAT, 0600, TENANTFS_FILE, err, errlen);
	tenant_tree_release(&t);
	return fd;
}

/* One directory of the attempt's own below the tenant's data directory: attempts/<id>/name. */
static int attempt_subdir(const ty_config *cfg, attempt *at, const char *name, char *out,
                          size_t outlen, char *err, size_t errlen)
{
	const char *steps[] = {"tenants", at->tenant_id, DATAPATH_ATTEMPTS_DIR, at->id, name};
	storage_owners self = storage_owners_self();
	int fd = storage_private_dirs_fd(cfg->data_root, steps, 5, &self, err, errlen);
	if (fd < 0)
		return -1;
	char tdir[3900];
	if (datapath_tenant_dir(cfg->data_root, at->tenant_id, tdir, sizeof(tdir)) < 0) {
		close(fd);
		return -1;
	}
	snprintf(at->attempt_dir, sizeof(at->attempt_dir), "%s/" DATAPATH_ATTEMPTS_DIR "/%s", tdir,
	         at->id);
	snprintf(out, outlen, "%s/%s", at->attempt_dir, name);
	return fd;
}

/*
 * A command job's code: the bundle's key from the API (a recorded read),
 * the version unpacked into attempts/<id>/code, checked against its hash;
 * and attempts/<id>/work for the driver. RET 0, or -1 after saying why.
 */
static int code_fetch(attempt *at, const ty_config *cfg)
{
	rt_answer a;
	char err[1024] = "";
	if (call_setup(at, "POST", "/code/key", &a) < 0)
		return -1;
	const json_t *b = a.body;
	char *text = (char *)json_string_value(json_object_get(b, "keys"));
	const char *bundle = json_string_value(json_object_get(b, "bundle_id"));
	const char *tenant = json_string_value(json_object_get(b, "tenant_id"));
	const char *version = json_string_value(json_object_get(b, "version_id"));
	const char *sha = json_string_value(json_object_get(b, "sha256"));
	unsigned char digest[32];
	crypt_object_ctx ctx = {0};
	int rc = -1;
	if (!bundle || !tenant || !version || !sha ||
	    !hex_decode(sha, strlen(sha), digest, sizeof(digest)) ||
	    crypt_object_ctx_init_text(&ctx, tenant, bundle, text) != 0) {
		fprintf(stderr,
		        "trainyard-worker: the API's answer for the job's code is incomplete\n");
	} else {
		int fd = attempt_subdir(cfg, at, "code", at->code_dir, sizeof(at->code_dir), err,
		                        sizeof(err));
		bundle_summary sum;
		/* another tenant's bundle is read from the copy its grant put in our own tree */
		rc = fd < 0 ? -1
		            : code_version_unpack(cfg->storage_root, at->tenant_id, &ctx, version,
		                                  digest, (uint64_t)cfg->code_unpacked_mib << 20,
		                                  fd, &sum, err, sizeof(err));
		if (fd >= 0)
			close(fd);
		if (rc == 0 && (fd = attempt_subdir(cfg, at, "work", at->work_dir,
		                                    sizeof(at->work_dir), err, sizeof(err))) >= 0)
			close(fd);
		else if (rc == 0)
			rc = -1;
		if (rc == 0)
			fprintf(stderr, "trainyard-worker: code %s@%lld: %d files, %llu bytes\n",
			        json_string_value(json_object_get(b, "name")),
			        (long long)json_integer_value(json_object_get(b, "version")),
			        sum.files, (unsigned long long)sum.bytes);
		else
			fprintf(stderr, "trainyard-worker: the job's code: %s\n", err);
	}
	crypt_object_ctx_clear(&ctx);
	if (text)
		OPENSSL_cleanse(text, strlen(text));
	rt_answer_release(&a);
	return rc ? -1 : 0;
}

/* Storage, the sink, the driver. RET the driver's exit status, or -1 before it ran. */
static int attempt_train(attempt *at, const ty_config *cfg, runtime_options *o)
{
	char err[1024] = "a path of the job does not fit", ckpt_dir[4096], log_name[64],
	     log_rel[STORAGE_NAME_MAX + 1], data_dir[4096];
	/* never as root: as the tenant's Unix user (docs/identity.md) */
	if (identity_become_tenant(cfg->storage_root, at->tenant_id, err, sizeof(err)) < 0) {
		fprintf(stderr, "trainyard-worker: %s\n", err);
		finish_early(at, FAILURE_INTERNAL,
		             "the worker could not run as the tenant's Unix user");
		return -1;
	}
	if (storage_job_prepare(cfg->storage_root, at->tenant_id, at->job_id, err, sizeof(err)) <
	        0 ||
	    storage_area_dir(cfg->storage_root, at->tenant_id, at->job_id, STORAGE_CHECKPOINTS,
	                     ckpt_dir, sizeof(ckpt_dir)) < 0 ||
	    storage_log_name(at->number, log_name, sizeof(log_name)) < 0 ||
	    storage_object_rel(at->job_id, STORAGE_LOGS, log_name, log_rel, sizeof(log_rel)) < 0) {
		fprintf(stderr, "trainyard-worker: the job's storage: %s\n", err);
		finish_early(at, FAILURE_INTERNAL,
		             "the worker could not prepare the job's storage");
		return -1;
	}
	if (datapath_tenant_prepare(cfg->data_root, at->tenant_id, err, sizeof(err)) < 0 ||
	    datapath_tenant_dir(cfg->data_root, at->tenant_id, data_dir, sizeof(data_dir)) < 0) {
		fprintf(stderr, "trainyard-worker: the tenant's data root: %s\n", err);
		finish_early(at, FAILURE_INTERNAL,
		             "the worker could not open the tenant's data root");
		return -1;
	}
	datasets_where where = {cfg->storage_root, cfg->data_root, at->tenant_id, at->id};
	if (datasets_fetch(at->datasets, &where, at->spec, dataset_call, at, at->data_dir,
	                   sizeof(at->data_dir)) < 0)
		return setup_refused(at, "a dataset of the job", "read the job's datasets");
	if (init_fetch(at->init_from, &where, dataset_call, at, at->client, &at->init) < 0)
		return setup_refused(at, "the checkpoint to start from",
		                     "fetch the checkpoint to start from");
	const char *kind = json_string_value(json_object_get(at->spec, "kind"));
	at->command = kind && strcmp(kind, "command") == 0;
	if (at->command && code_fetch(at, cfg) < 0)
		return setup_refused(at, "the job's code", "unpack the job's code");
	if (spec_write(at, at->spec) < 0) {
		finish_early(at, FAILURE_INTERNAL, "the worker could not write the job's spec");
		return -1;
	}
	int log_fd = log_open(cfg, at, log_rel, err, sizeof(err));
	runtime_sink *sink = log_fd < 0
	                         ? NULL
	                         : sink_api_new(at->client, &at->ctx, ckpt_dir, log_fd, log_name,
	                                        cfg->heartbeat_s, err, sizeof(err));
	if (!sink) {
		fprintf(stderr, "trainyard-worker: %s\n", err);
		finish_early(at, FAILURE_INTERNAL,
		             "the worker could not open the job's sealed log");
		return -1;
	}
	at->client = NULL; /* the sink's now */
	snprintf(at->encrypt_for, sizeof(at->encrypt_for), "%s:%s", at->tenant_id, at->job_id);
	o->spec_path = at->spec_path;
	o->ckpt_dir = ckpt_dir;
	o->data_root = data_dir;
	o->encrypt_for = at->encrypt_for;
	if (at->init.dir[0]) {
		o->init_ckpt = at->init.dir;
		o->init_encrypt_for = at->init.encrypt_for;
	}
	if (at->command) {
		/* the team's program gets no key: the driver seals its checkpoints */
		o->code_dir = at->code_dir;
		o->work_dir = at->work_dir;
		o->program_data_dir = at->data_dir[0] ? at->data_dir : NULL;
		o->seal = &at->ctx;
		o->program_path = cfg->program_path;
		o->job_id = at->job_id;
		o->attempt_number = at->number;
	} else {
		at->launch_env[0] = at->key_env;
		at->launch_env[1] = at->init.key_env; /* NULL when there is none */
		at->export_env[0] = KEY_ENV;
		at->export_env[1] = at->init.key_env ? INIT_KEY_ENV : NULL;
		o->launch_env = at->launch_env;
		o->export_env = at->export_env;
	}
	fprintf(stderr, "trainyard-worker: attempt %d of job %s (tenant %s), log %s\n", at->number,
	        at->job_id, at->tenant_id, log_name);
	int rc = runtime_run(o, sink);
	sink_free(sink);
	return rc;
}

int attempt_run(const char *url, runtime_options *o)
{
	ty_config cfg;
	char err[1024], token[RT_CLIENT_TOKEN_MAX + 1];
	attempt at = {0};
	const char *id = getenv("TRAINYARD_ATTEMPT");
	int have_token = credential_take(token, sizeof(token));
	if (have_token == 1) {
		/* before anything that leaves a trace: no log, no report, no checkpoint */
		fprintf(stderr,
		        "trainyard-worker: attempt %s has started before (its credential file is "
		        "gone): Slurm ran this batch job again; exiting without running it\n",
		        id && storage_uuid_valid(id) ? id : "(unnamed)");
		return TRAIN_ATTEMPT_OVER;
	}
	if (!id || !storage_uuid_valid(id) || have_token < 0) {
		fprintf(stderr, "trainyard-worker: attempt needs TRAINYARD_ATTEMPT (an attempt id) "
		                "and TRAINYARD_ATTEMPT_TOKEN (or TRAINYARD_ATTEMPT_TOKEN_FILE) in "
		                "the environment\n");
		OPENSSL_cleanse(token, sizeof(token));
		return TRAIN_USAGE;
	}
	snprintf(at.id, sizeof(at.id), "%s", id);
	if (config_load(&cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "trainyard-worker: %s\n", err);
		OPENSSL_cleanse(token, sizeof(token));
		return TRAIN_USAGE;
	}
	if (!url)
		url = cfg.url;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	at.client = rt_client_new(url, cfg.ca_file, at.id, token, err, sizeof(err));
	OPENSSL_cleanse(token, sizeof(token));
	int rc = TRAIN_INTERNAL;
	if (!at.client) {
		fprintf(stderr, "trainyard-worker: %s\n", err);
		rc = TRAIN_USAGE;
	} else if (attempt_read(&at) < 0) {
		/* nothing to report to: the attempt could not even be read */
	} else if (attempt_key(&at) < 0) {
		finish_early(&at, FAILURE_INTERNAL, "the worker could not get the job's data key");
	} else {
		int run = attempt_train(&at, &cfg, o);
		if (run >= 0)
			rc = run;
	}
	attempt_release(&at);
	curl_global_cleanup();
	return rc;
}
