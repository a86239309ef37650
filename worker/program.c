/*
 * program.c - a command job's environment, reports and checkpoints (program.h).
 */
#define _XOPEN_SOURCE 700
#include "program.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "error.h"
#include "hex.h"
#include "storage.h"

#define COPY_BLOCK 65536

/* ---- files below a directory ----------------------------------------- */

static int tree_rm(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)flag;
	(void)f;
	remove(p);
	return 0;
}

void program_tree_remove(const char *dir)
{
	struct stat st;
	if (dir && dir[0] && lstat(dir, &st) == 0)
		nftw(dir, tree_rm, 16, FTW_DEPTH | FTW_PHYS);
}

/* The regular files below one checkpoint's directory (nftw has no argument: one walk at a time). */
static struct {
	size_t base;
	char **paths;
	int n, cap;
	char bad[512];
} walk;

static int collect(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)f;
	if (flag == FTW_D || flag == FTW_DP)
		return 0;
	const char *rel = p + walk.base;
	if (flag != FTW_F || !S_ISREG(st->st_mode) || !storage_name_valid(rel)) {
		snprintf(
		    walk.bad, sizeof(walk.bad),
		    "\"%.200s\" is not a regular file of a plain name ([A-Za-z0-9._-] components)",
		    rel);
		return 1;
	}
	if (walk.n == PROGRAM_CKPT_FILES_MAX) {
		snprintf(walk.bad, sizeof(walk.bad), "more than %d files", PROGRAM_CKPT_FILES_MAX);
		return 1;
	}
	if (walk.n == walk.cap) {
		int cap = walk.cap ? walk.cap * 2 : 32;
		char **v = realloc(walk.paths, (size_t)cap * sizeof(*v));
		if (!v)
			return 1;
		walk.paths = v;
		walk.cap = cap;
	}
	if (!(walk.paths[walk.n] = strdup(rel)))
		return 1;
	walk.n++;
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void walk_free(void)
{
	for (int i = 0; i < walk.n; i++)
		free(walk.paths[i]);
	free(walk.paths);
	memset(&walk, 0, sizeof(walk));
}

/* ---- copying between stores ------------------------------------------- */

/* Copy from's name into to's, hashing the bytes. OUT sha (hex), *bytes. RET 0 or -ERR_*. */
static int copy_file(ckpt_store *from, const char *src, ckpt_store *to, const char *dst,
                     char sha[65], uint64_t *bytes, char *err, size_t errlen)
{
	ckpt_stream *in = NULL, *out = NULL;
	EVP_MD_CTX *h = EVP_MD_CTX_new();
	char *buf = malloc(COPY_BLOCK);
	int rc = h && buf && EVP_DigestInit_ex(h, EVP_sha256(), NULL) == 1 ? 0 : -ERR_INTERNAL;
	if (rc == 0)
		rc = ckpt_store_open_read(from, src, &in, err, errlen);
	if (rc == 0)
		rc = ckpt_store_open_write(to, dst, &out, err, errlen);
	*bytes = 0;
	size_t got = COPY_BLOCK;
	while (rc == 0 && got == COPY_BLOCK) {
		rc = ckpt_stream_read(in, buf, COPY_BLOCK, &got, err, errlen);
		if (rc == 0 && got > 0) {
			rc = ckpt_stream_write(out, buf, got, err, errlen);
			if (rc == 0 && EVP_DigestUpdate(h, buf, got) != 1)
				rc = -ERR_INTERNAL;
			*bytes += got;
		}
	}
	ckpt_stream_close(in);
	if (rc == 0) {
		rc = ckpt_stream_commit(out, err, errlen);
		out = NULL;
	}
	ckpt_stream_abort(out);
	unsigned char d[32];
	unsigned len = 0;
	if (rc == 0 && EVP_DigestFinal_ex(h, d, &len) != 1)
		rc = -ERR_INTERNAL;
	if (rc == 0)
		hex_encode(d, sizeof(d), sha);
	EVP_MD_CTX_free(h);
	free(buf);
	return rc;
}

/* Every directory on the way to name in s. RET 0 or -ERR_*. */
static int parents(ckpt_store *s, const char *name, char *err, size_t errlen)
{
	char dir[CKPT_NAME_MAX + 1];
	for (const char *p = strchr(name, '/'); p; p = strchr(p + 1, '/')) {
		snprintf(dir, sizeof(dir), "%.*s", (int)(p - name), name);
		int rc = ckpt_store_mkdir(s, dir, err, errlen);
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- checkpoints -------------------------------------------------------- */

int program_checkpoint(program *p, int step, char *manifest, size_t mlen, char *err, size_t errlen)
{
	char dir[4300];
	snprintf(dir, sizeof(dir), "%s/%d", p->ckpt_out, step);
	struct stat st;
	if (step < 1 || step > CKPT_STEP_MAX || lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		err_printf(err, errlen,
		           "checkpoint %d: no directory %d in TRAINYARD_CHECKPOINT_DIR", step,
		           step);
		return -1;
	}
	walk_free();
	walk.base = strlen(dir) + 1;
	int rc = nftw(dir, collect, 16, FTW_PHYS) != 0 ? -1 : 0;
	if (rc == 0 && walk.n == 0)
		snprintf(walk.bad, sizeof(walk.bad), "no file");
	if (rc || walk.n == 0) {
		err_printf(err, errlen, "checkpoint %d: %s", step,
		           walk.bad[0] ? walk.bad : "unreadable");
		walk_free();
		return -1;
	}
	qsort(walk.paths, (size_t)walk.n, sizeof(char *), by_name);
	ckpt_store *plain = ckpt_store_dir(dir);
	ckpt_shard_info *info = calloc((size_t)walk.n, sizeof(*info));
	json_t *files = json_array();
	char sd[32];
	ckpt_step_dir(step, sd);
	rc = plain && info && files ? 0 : -ERR_INTERNAL;
	/* an earlier launch's partial write of this step goes first */
	if (rc == 0)
		rc = ckpt_step_remove(p->store, step, err, errlen);
	if (rc == 0)
		rc = ckpt_store_mkdir(p->store, sd, err, errlen);
	for (int i = 0; rc == 0 && i < walk.n; i++) {
		char name[CKPT_NAME_MAX + 1];
		info[i].rank = i;
		ckpt_shard_name(i, walk.n, info[i].name);
		snprintf(name, sizeof(name), "%s/%s", sd, info[i].name);
		rc = copy_file(plain, walk.paths[i], p->store, name, info[i].sha256, &info[i].bytes,
		               err, errlen);
		if (rc == 0 && json_array_append_new(files, json_string(walk.paths[i])) < 0)
			rc = -ERR_INTERNAL;
	}
	json_t *config =
	    rc == 0 ? json_pack("{s:s, s:O}", "kind", PROGRAM_CKPT_KIND, "files", files) : NULL;
	if (rc == 0 && !config)
		rc = -ERR_INTERNAL;
	if (rc == 0)
		rc = ckpt_manifest_write(p->store, step, walk.n, config, info, walk.n, err, errlen);
	if (rc == 0)
		rc = ckpt_prune(p->store, p->spec->checkpoint.keep, NULL, err, errlen);
	json_decref(config);
	json_decref(files);
	free(info);
	ckpt_store_free(plain);
	walk_free();
	program_tree_remove(dir);
	if (rc)
		return -1;
	snprintf(manifest, mlen, "%s/%s", sd, CKPT_MANIFEST_NAME);
	return 0;
}

/*
 * Checkpoint step's files unsealed into resume_dir, each against its
 * manifest's SHA-256. RET 0, or -ERR_* with err.
 */
static int unseal_step(program *p, int step, char *err, size_t errlen)
{
	program_tree_remove(p->resume_dir);
	ckpt_manifest m = {0};
	int rc = ckpt_manifest_read(p->store, step, &m, err, errlen);
	const json_t *files = json_object_get(m.config, "files");
	const char *kind = json_string_value(json_object_get(m.config, "kind"));
	if (rc == 0 && (json_array_size(files) != (size_t)m.world || !kind ||
	                strcmp(kind, PROGRAM_CKPT_KIND) != 0)) {
		err_printf(err, errlen, "checkpoint %d is not a command job's", step);
		rc = -ERR_CHECKPOINT_CORRUPT;
	}
	if (rc == 0 && mkdir(p->resume_dir, 0700) != 0) {
		err_printf(err, errlen, "could not make \"%s\": %m", p->resume_dir);
		rc = -ERR_STORAGE_IO;
	}
	ckpt_store *out = rc == 0 ? ckpt_store_dir(p->resume_dir) : NULL;
	char sd[32];
	ckpt_step_dir(step, sd);
	for (int i = 0; rc == 0 && i < m.world; i++) {
		const char *path = json_string_value(json_array_get(files, (size_t)i));
		char name[CKPT_NAME_MAX + 1], sha[65];
		uint64_t bytes = 0;
		snprintf(name, sizeof(name), "%s/%s", sd, m.shards[i].name);
		if (!out || !path || !storage_name_valid(path)) {
			err_printf(err, errlen, "checkpoint %d names a file badly", step);
			rc = -ERR_CHECKPOINT_CORRUPT;
		}
		if (rc == 0)
			rc = parents(out, path, err, errlen);
		if (rc == 0)
			rc = copy_file(p->store, name, out, path, sha, &bytes, err, errlen);
		if (rc == 0 &&
		    (strcmp(sha, m.shards[i].sha256) != 0 || bytes != m.shards[i].bytes)) {
			err_printf(err, errlen,
			           "checkpoint %d: %s does not hash as its manifest says", step,
			           path);
			rc = -ERR_CHECKPOINT_CORRUPT;
		}
	}
	ckpt_store_free(out);
	ckpt_manifest_release(&m);
	return rc;
}

/*
 * The newest complete checkpoint whose files all verify, unsealed into
 * resume_dir; older ones are tried when a newer one fails. None at all:
 * resume_step 0. RET 0, or -1 with err when there are some and none verifies.
 */
static int unseal_newest(program *p, char *err, size_t errlen)
{
	p->resume_step = 0;
	program_tree_remove(p->resume_dir);
	ckpt_entry *list = NULL;
	int n = 0, refused = 0;
	if (ckpt_list(p->store, &list, &n, err, errlen) != 0)
		return -1;
	char why[1024] = "";
	for (int i = n - 1; i >= 0 && p->resume_step == 0; i--) {
		if (!list[i].complete)
			continue;
		if (unseal_step(p, list[i].step, why, sizeof(why)) == 0)
			p->resume_step = list[i].step;
		else if (refused++ == 0)
			err_printf(err, errlen, "the newest checkpoint was refused: %s", why);
	}
	free(list);
	if (p->resume_step == 0)
		program_tree_remove(p->resume_dir);
	if (p->resume_step == 0 && refused > 0)
		return -1;
	err[0] = '\0';
	return 0;
}

/* ---- the ranks' environment ---------------------------------------------- */

/* A TCP port nobody listens on now, for the ranks' rendezvous. RET 0 or -1. */
static int free_port(char out[8])
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
	socklen_t len = sizeof(a);
	int rc = s >= 0 && bind(s, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	                 getsockname(s, (struct sockaddr *)&a, &len) == 0
	             ? 0
	             : -1;
	if (rc == 0)
		snprintf(out, 8, "%u", (unsigned)ntohs(a.sin_port));
	if (s >= 0)
		close(s);
	return rc;
}

static void env_free(program *p)
{
	for (size_t i = 0; p->env && p->env[i]; i++)
		free(p->env[i]);
	free(p->env);
	free(p->names);
	p->env = NULL;
	p->names = NULL;
}

static int env_add(program *p, size_t *n, const char *name, const char *value)
{
	if (!value)
		return 0;
	size_t len = strlen(name) + 1 + strlen(value) + 1;
	char *e = malloc(len);
	if (!e)
		return -1;
	snprintf(e, len, "%s=%s", name, value);
	p->env[*n] = e;
	p->env[++*n] = NULL;
	return 0;
}

static int build_env(program *p, const program_where *w)
{
	const jobspec_command *c = &p->spec->command;
	size_t cap = 20 + (size_t)c->n_env, n = 0;
	env_free(p);
	p->env = calloc(cap + 1, sizeof(char *));
	p->names = calloc(cap + 1, sizeof(char *));
	if (!p->env || !p->names)
		return -1;
	char step[16] = "", steps[16] = "", attempt[16] = "", pypath[8192];
	snprintf(step, sizeof(step), "%d", p->resume_step);
	if (p->spec->training.steps > 0)
		snprintf(steps, sizeof(steps), "%d", p->spec->training.steps);
	if (w->attempt > 0)
		snprintf(attempt, sizeof(attempt), "%d", w->attempt);
	const char *old = getenv("PYTHONPATH");
	snprintf(pypath, sizeof(pypath), "%s%s%s", w->sdk_python ? w->sdk_python : "",
	         w->sdk_python && old && *old ? ":" : "", old ? old : "");
	/* the job's own first: the platform's below replace any of the same name */
	for (int i = 0; i < c->n_env; i++) {
		const char *e = jobspec_command_env(c, i);
		if (!(p->env[n] = strdup(e)))
			return -1;
		p->env[++n] = NULL;
	}
	/* under Slurm the task takes rank 0's node from SLURM_LAUNCH_NODE_IPADDR (task.h) */
	bool slurm = getenv("SLURM_JOB_ID") != NULL;
	if (env_add(p, &n, "TRAINYARD_CODE_DIR", w->code_dir) ||
	    env_add(p, &n, "TRAINYARD_CHECKPOINT_DIR", p->ckpt_out) ||
	    env_add(p, &n, "TRAINYARD_RESUME_DIR", p->resume_step ? p->resume_dir : NULL) ||
	    env_add(p, &n, "TRAINYARD_RESUME_STEP", p->resume_step ? step : NULL) ||
	    env_add(p, &n, "TRAINYARD_DATA_DIR", w->data_dir) ||
	    env_add(p, &n, "TRAINYARD_JOB_ID", w->job_id) ||
	    env_add(p, &n, "TRAINYARD_ATTEMPT", attempt[0] ? attempt : NULL) ||
	    env_add(p, &n, "TRAINYARD_STEPS", steps[0] ? steps : NULL) ||
	    env_add(p, &n, "MASTER_ADDR", slurm ? NULL : "127.0.0.1") ||
	    env_add(p, &n, "MASTER_PORT", p->master_port) ||
	    env_add(p, &n, "PYTHONPATH", pypath[0] ? pypath : NULL) ||
	    env_add(p, &n, "PATH", w->path ? w->path : PROGRAM_PATH_DEFAULT))
		return -1;
	for (size_t i = 0; i < n; i++) {
		char *eq = strchr(p->env[i], '=');
		*eq = '\0';
		if (!(p->names[i] = strdup(p->env[i])))
			return -1;
		*eq = '=';
	}
	return 0;
}

int program_open(program *p, const jobspec *spec, ckpt_store *store, const program_where *w,
                 char *err, size_t errlen)
{
	memset(p, 0, sizeof(*p));
	p->spec = spec;
	p->store = store;
	snprintf(p->work_dir, sizeof(p->work_dir), "%s", w->work_dir);
	snprintf(p->ckpt_out, sizeof(p->ckpt_out), "%s/checkpoint", w->work_dir);
	snprintf(p->resume_dir, sizeof(p->resume_dir), "%s/resume", w->work_dir);
	if (!store) {
		err_printf(err, errlen, "out of memory");
		return -1;
	}
	if ((mkdir(p->ckpt_out, 0700) != 0 && errno != EEXIST)) {
		err_printf(err, errlen, "could not make \"%s\": %m", p->ckpt_out);
		return -1;
	}
	return 0;
}

void program_release(program *p)
{
	env_free(p);
	ckpt_store_free(p->store);
	program_tree_remove(p->ckpt_out);
	program_tree_remove(p->resume_dir);
	p->store = NULL;
}

int program_prepare_launch(program *p, const program_where *w, char *err, size_t errlen)
{
	err[0] = '\0';
	if (unseal_newest(p, err, errlen) < 0)
		return -1;
	if (free_port(p->master_port) < 0) {
		err_printf(err, errlen, "no free TCP port for MASTER_PORT: %m");
		return -1;
	}
	if (build_env(p, w) < 0) {
		err_printf(err, errlen, "out of memory for the ranks' environment");
		return -1;
	}
	p->last_step_at = 0;
	return 0;
}

/* ---- reports ---------------------------------------------------------------- */

const char *program_label(const char *line, int *rank)
{
	*rank = -1;
	const char *p = line;
	if (*p == '[') { /* mpirun --tag-output: "[1,0]<stdout>:" */
		const char *comma = strchr(p, ',');
		const char *close = comma ? strchr(comma, ']') : NULL;
		const char *colon = close ? strchr(close, ':') : NULL;
		if (colon && close[1] == '<') {
			*rank = atoi(comma + 1);
			return colon + 1;
		}
		return line;
	}
	while (*p == ' ')
		p++;
	const char *digits = p;
	while (*p >= '0' && *p <= '9')
		p++;
	if (p > digits && p[0] == ':' && p[1] == ' ') { /* srun --label: "N: " */
		*rank = atoi(digits);
		return p + 2;
	}
	return line;
}

static bool finite_number(const json_t *v)
{
	return json_is_number(v) && isfinite(json_number_value(v));
}

/* The step report's fields, checked, into out. RET 0, or -1 with why. */
static int step_fields(const json_t *in, json_t *out, char *why, size_t whylen)
{
	static const char *const numbers[] = {"lr", "grad_norm"};
	const json_t *loss = json_object_get(in, "loss");
	if (loss && !json_is_null(loss) && !finite_number(loss)) {
		snprintf(why, whylen, "loss is a finite number or null");
		return -1;
	}
	json_object_set(out, "loss", loss ? (json_t *)loss : json_null());
	for (size_t i = 0; i < 2; i++) {
		const json_t *v = json_object_get(in, numbers[i]);
		if (v && !finite_number(v)) {
			snprintf(why, whylen, "%s is a finite number", numbers[i]);
			return -1;
		}
		if (v)
			json_object_set(out, numbers[i], (json_t *)v);
	}
	const json_t *tokens = json_object_get(in, "tokens");
	if (tokens && (!json_is_integer(tokens) || json_integer_value(tokens) < 0)) {
		snprintf(why, whylen, "tokens is a whole number of at least 0");
		return -1;
	}
	if (tokens)
		json_object_set(out, "tokens", (json_t *)tokens);
	const json_t *metrics = json_object_get(in, "metrics");
	if (metrics) {
		const char *k;
		const json_t *v;
		if (!json_is_object(metrics) || json_object_size(metrics) > 64) {
			snprintf(why, whylen, "metrics is an object of at most 64 numbers");
			return -1;
		}
		json_object_foreach ((json_t *)metrics, k, v) {
			size_t n = strlen(k);
			if (!finite_number(v) || n < 1 || n > 64 ||
			    strspn(k, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ01234567"
			              "89._/-") != n) {
				snprintf(why, whylen,
				         "metric \"%.64s\" is not a finite number of a plain name",
				         k);
				return -1;
			}
		}
		json_object_set(out, "metrics", (json_t *)metrics);
	}
	return 0;
}

program_report program_report_read(program *p, const char *text, double now, int *step,
                                   json_t **out, char *why, size_t whylen)
{
	*out = NULL;
	*step = 0;
	json_error_t je;
	json_t *in = json_loads(text, JSON_REJECT_DUPLICATES, &je);
	const char *type = json_string_value(json_object_get(in, "type"));
	const json_t *s = json_object_get(in, "step");
	program_report kind = PROGRAM_REPORT_BAD;
	if (!json_is_object(in) || !type) {
		snprintf(why, whylen, "a report is a JSON object with a type");
	} else if (strcmp(type, "progress") == 0) {
		kind = PROGRAM_REPORT_PROGRESS;
	} else if (strcmp(type, "step") != 0 && strcmp(type, "checkpoint") != 0) {
		snprintf(why, whylen, "no report has the type \"%.32s\"", type);
	} else if (!json_is_integer(s) || json_integer_value(s) < 1 ||
	           json_integer_value(s) > CKPT_STEP_MAX) {
		snprintf(why, whylen, "a %s report's step is a whole number from 1 to %d", type,
		         CKPT_STEP_MAX);
	} else if (strcmp(type, "checkpoint") == 0) {
		*step = (int)json_integer_value(s);
		kind = PROGRAM_REPORT_CHECKPOINT;
	} else {
		*step = (int)json_integer_value(s);
		json_t *o = json_pack("{s:s, s:i}", "type", "step", "step", *step);
		if (o && step_fields(in, o, why, whylen) == 0) {
			/* as the trainer's lines: time_ms the wall clock at the step's end, step_s
			 * its length */
			double since = p->last_step_at > 0 ? now - p->last_step_at : 0;
			const json_t *tokens = json_object_get(o, "tokens");
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			json_object_set_new(
			    o, "time_ms",
			    json_integer((json_int_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000));
			if (since > 0) {
				json_object_set_new(o, "step_s", json_real(since));
				if (tokens)
					json_object_set_new(
					    o, "tokens_per_s",
					    json_real((double)json_integer_value(tokens) / since));
			}
			p->last_step_at = now;
			*out = o;
			kind = PROGRAM_REPORT_STEP;
		} else {
			json_decref(o);
		}
	}
	json_decref(in);
	return kind;
}
