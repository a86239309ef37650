/*
 * datasets.c - a job's registered datasets, unsealed for its attempt
 * (datasets.h).
 */
#include "datasets.h"

#include <openssl/crypto.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "crypt.h"
#include "dataset.h"
#include "datapath.h"
#include "hex.h"
#include "storage.h"

/* The key ring and whereabouts of one version, from the API; the ring unseals it into out_dir. */
static int fetch_one(const char *version_id, const char *out_dir, const datasets_where *w,
                     datasets_call_fn call, void *arg)
{
	char what[128], err[1024] = "";
	snprintf(what, sizeof(what), "/datasets/%s/key", version_id);
	rt_answer a;
	if (call(arg, what, &a) < 0)
		return -1;
	const json_t *b = a.body;
	char *text = (char *)json_string_value(json_object_get(b, "keys"));
	const char *ds = json_string_value(json_object_get(b, "dataset_id"));
	const char *tenant = json_string_value(json_object_get(b, "tenant_id"));
	const char *sha = json_string_value(json_object_get(b, "sha256"));
	json_int_t shards = json_integer_value(json_object_get(b, "shards"));
	unsigned char digest[32];
	crypt_object_ctx ctx = {0};
	int rc = -1;
	if (!ds || !tenant || !sha || shards < 1 || shards > 1000000 ||
	    !hex_decode(sha, strlen(sha), digest, sizeof(digest)) ||
	    crypt_object_ctx_init_text(&ctx, tenant, ds, text) != 0) {
		fprintf(stderr,
		        "trainyard-worker: the API's answer for dataset version %s is "
		        "incomplete\n",
		        version_id);
	} else {
		uint64_t tokens = 0;
		/* another tenant's version: the copy the grant put in our own tree */
		char src[4096];
		rc = strcmp(tenant, w->tenant_id) == 0
		         ? dataset_version_dir(w->storage_root, tenant, ds, version_id, src,
		                               sizeof(src))
		         : dataset_granted_dir(w->storage_root, w->tenant_id, ds, version_id, src,
		                               sizeof(src));
		if (rc == 0)
			rc = dataset_unseal_dir(src, &ctx, version_id, (int)shards, digest, out_dir,
			                        &tokens, err, sizeof(err));
		crypt_object_ctx_clear(&ctx);
		if (rc == 0)
			fprintf(stderr,
			        "trainyard-worker: dataset %s@%lld: %llu tokens in %lld shards\n",
			        json_string_value(json_object_get(b, "name")),
			        (long long)json_integer_value(json_object_get(b, "version")),
			        (unsigned long long)tokens, (long long)shards);
		else
			fprintf(stderr, "trainyard-worker: dataset version %s: %s\n", version_id,
			        err);
	}
	if (text)
		OPENSSL_cleanse(text, strlen(text));
	rt_answer_release(&a);
	return rc ? -1 : 0;
}

int datasets_fetch(const json_t *list, const datasets_where *w, json_t *spec, datasets_call_fn call,
                   void *arg, char *dir, size_t dirlen)
{
	char err[1024], tdir[4096];
	dir[0] = '\0';
	if (json_array_size(list) == 0)
		return 0;
	json_t *data = json_object_get(spec, "data");
	const char *kind = json_string_value(json_object_get(spec, "kind"));
	bool command = kind && strcmp(kind, "command") == 0;
	if (datapath_tenant_dir(w->data_root, w->tenant_id, tdir, sizeof(tdir)) < 0 ||
	    !storage_uuid_valid(w->attempt_id) || !json_is_object(data)) {
		fprintf(stderr, "trainyard-worker: no place for the job's datasets\n");
		return -1;
	}
	snprintf(dir, dirlen, "%s/" DATAPATH_ATTEMPTS_DIR "/%s", tdir, w->attempt_id);
	size_t i;
	const json_t *e;
	json_array_foreach (list, i, e) {
		const char *role = json_string_value(json_object_get(e, "role"));
		const char *vid = json_string_value(json_object_get(e, "version_id"));
		if (!role || !vid || !storage_uuid_valid(vid) ||
		    (strcmp(role, "train") != 0 && strcmp(role, "val") != 0)) {
			fprintf(stderr, "trainyard-worker: the attempt names a dataset badly\n");
			return -1;
		}
		const char *steps[] = {"tenants", w->tenant_id, DATAPATH_ATTEMPTS_DIR,
		                       w->attempt_id, role};
		char out[4200], pattern[128];
		if (storage_private_dirs(w->data_root, steps, 5, err, sizeof(err)) < 0) {
			fprintf(stderr, "trainyard-worker: the attempt's data directory: %s\n",
			        err);
			return -1;
		}
		snprintf(out, sizeof(out), "%s/%s", dir, role);
		if (fetch_one(vid, out, w, call, arg) < 0)
			return -1;
		snprintf(pattern, sizeof(pattern), DATAPATH_ATTEMPTS_DIR "/%s/%s/shard_*.bin",
		         w->attempt_id, role);
		if (!command) { /* the trainer reads paths; a command job's program, dir */
			json_object_set_new(data, strcmp(role, "train") == 0 ? "train" : "val",
			                    json_string(pattern));
			json_object_set_new(data,
			                    strcmp(role, "train") == 0 ? "dataset" : "val_dataset",
			                    json_null());
		}
	}
	return 0;
}

void datasets_remove(const char *dir)
{
	if (!dir || !dir[0])
		return;
	static const char *const roles[] = {"train", "val"};
	for (size_t i = 0; i < 2; i++) {
		char p[4200];
		snprintf(p, sizeof(p), "%s/%s", dir, roles[i]);
		storage_dir_remove(p);
	}
	rmdir(dir);
}
