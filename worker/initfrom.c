/*
 * initfrom.c - the checkpoint an attempt's job starts from (initfrom.h).
 */
#include "initfrom.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crypt.h"
#include "datapath.h"
#include "storage.h"

#define FETCH_TRIES 3

/* The key ring of the source job, into out->key_env and out->encrypt_for. RET 0 or -1. */
static int init_key(datasets_call_fn call, void *arg, init_fetched *out)
{
	rt_answer a;
	if (call(arg, "/init/key", &a) < 0)
		return -1;
	char *text = (char *)json_string_value(json_object_get(a.body, "keys"));
	const char *tenant = json_string_value(json_object_get(a.body, "tenant_id"));
	const char *job = json_string_value(json_object_get(a.body, "job_id"));
	crypt_object_ctx ring;
	int rc = -1;
	if (!tenant || !job || !storage_uuid_valid(tenant) || !storage_uuid_valid(job) ||
	    crypt_object_ctx_init_text(&ring, tenant, job, text) != 0) {
		fprintf(stderr,
		        "trainyard-worker: the API's answer for the checkpoint to start from "
		        "is incomplete\n");
	} else {
		crypt_object_ctx_clear(&ring);
		snprintf(out->encrypt_for, sizeof(out->encrypt_for), "%s:%s", tenant, job);
		size_t n = strlen(INIT_KEY_ENV) + 1 + strlen(text) + 1;
		if ((out->key_env = malloc(n))) {
			snprintf(out->key_env, n, "%s=%s", INIT_KEY_ENV, text);
			rc = 0;
		}
	}
	if (text)
		OPENSSL_cleanse(text, strlen(text));
	rt_answer_release(&a);
	return rc;
}

/* Copy file name of the checkpoint into out->step_dir. RET 0 or -1. */
static int fetch_file(rt_client *client, const char *name, init_fetched *out)
{
	char path[4500], what[128];
	snprintf(path, sizeof(path), "%s/%s", out->step_dir, name);
	snprintf(what, sizeof(what), "/init/files/%s", name);
	for (int t = 1;; t++) {
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
		FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
		if (!f) {
			fprintf(stderr, "trainyard-worker: could not create %s: %s\n", path,
			        strerror(errno));
			if (fd >= 0)
				close(fd);
			return -1;
		}
		rt_answer a;
		int rc = rt_client_fetch(client, what, f, &a);
		if (fclose(f) != 0)
			rc = -1;
		bool again = rc < 0 && rt_answer_transient(&a) && t < FETCH_TRIES;
		if (rc < 0)
			fprintf(stderr, "trainyard-worker: the checkpoint's %s: %s%s\n", name,
			        a.message[0] ? a.message : "could not write it",
			        again ? "; trying again" : "");
		rt_answer_release(&a);
		if (rc == 0)
			return 0;
		if (!again)
			return -1;
		sleep((unsigned)t);
	}
}

int init_fetch(const json_t *init, const datasets_where *w, datasets_call_fn call, void *arg,
               rt_client *client, init_fetched *out)
{
	char err[1024], tdir[4096], step_name[32];
	memset(out, 0, sizeof(*out));
	if (!json_is_object(init))
		return 0;
	/* first the key: its refusal says why when the checkpoint is gone or not granted */
	if (init_key(call, arg, out) < 0)
		return -1;
	json_int_t step = json_integer_value(json_object_get(init, "step"));
	const json_t *files = json_object_get(init, "files");
	if (step < 1 || step > 99999999 || !json_is_array(files) || json_array_size(files) == 0 ||
	    datapath_tenant_dir(w->data_root, w->tenant_id, tdir, sizeof(tdir)) < 0 ||
	    !storage_uuid_valid(w->attempt_id)) {
		fprintf(stderr, "trainyard-worker: the attempt names its checkpoint to start from "
		                "badly\n");
		return -1;
	}
	snprintf(step_name, sizeof(step_name), "step_%08d", (int)step);
	const char *steps[] = {"tenants",     w->tenant_id, DATAPATH_ATTEMPTS_DIR,
	                       w->attempt_id, "init",       step_name};
	if (storage_private_dirs(w->data_root, steps, 6, err, sizeof(err)) < 0) {
		fprintf(stderr, "trainyard-worker: the attempt's data directory: %s\n", err);
		return -1;
	}
	snprintf(out->attempt_dir, sizeof(out->attempt_dir), "%s/" DATAPATH_ATTEMPTS_DIR "/%s",
	         tdir, w->attempt_id);
	snprintf(out->dir, sizeof(out->dir), "%s/init", out->attempt_dir);
	snprintf(out->step_dir, sizeof(out->step_dir), "%s/%s", out->dir, step_name);
	size_t i;
	const json_t *f;
	json_array_foreach (files, i, f) {
		const char *name = json_string_value(f);
		if (!name ||
		    (strcmp(name, STORAGE_MANIFEST_NAME) != 0 && !storage_shard_name_valid(name))) {
			fprintf(stderr,
			        "trainyard-worker: the checkpoint to start from names a file "
			        "badly\n");
			return -1;
		}
		if (fetch_file(client, name, out) < 0)
			return -1;
	}
	fprintf(stderr, "trainyard-worker: starting from checkpoint %s (step %lld): %zu files\n",
	        json_string_value(json_object_get(init, "checkpoint_id")), (long long)step,
	        json_array_size(files));
	return 0;
}

void init_remove(init_fetched *f)
{
	if (f->key_env) {
		OPENSSL_cleanse(f->key_env, strlen(f->key_env));
		free(f->key_env);
		f->key_env = NULL;
	}
	if (!f->dir[0])
		return;
	storage_dir_remove(f->step_dir);
	rmdir(f->dir);
	rmdir(f->attempt_dir); /* when no dataset is left in it */
	f->dir[0] = '\0';
}
