/*
 * cmd_keys.c - yardctl keys: the master key's rotation and what the stored
 * keys need (docs/storage.md, "Rotating the master key").
 *
 * keys rotate-master works on the database directly (TRAINYARD_DB or --db)
 * with both master keys in hand: the one being replaced (--old-key-file, by
 * default the master key of the settings, TRAINYARD_MASTER_KEY_FILE or
 * TRAINYARD_MASTER_KEY) and the new one (--new-key-file). It wraps every
 * stored tenant key and webhook secret again under the new key, a batch per
 * transaction, each batch audited with it; run again after a crash, it goes
 * on from the rows left. When no row is left under the old key, the old key
 * is retired. keys status asks the API (GET /v1/keys/master). keys rotate
 * TENANT [--data-keys] rotates a tenant's KEK, and with --data-keys its
 * data keys for what is written next (POST /v1/tenants/{tenant}/keys/rotate;
 * docs/storage.md, "Rotating data keys"). keys shred TENANT --yes destroys
 * a tenant's keys (DELETE /v1/tenants/{tenant}/keys).
 */
#include <jansson.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit.h"
#include "cmd.h"
#include "config.h"
#include "crypt.h"
#include "db.h"
#include "error.h"
#include "http.h"
#include "keys.h"
#include "migrate.h"
#include "routes.h"
#include "url.h"

#define BATCH_DEFAULT 100
#define BATCH_MAX     10000
/* a batch that finds every remaining row locked waits and tries again, this often */
#define LOCKED_TRIES 30

static void notice_ignore(void *arg, const char *message)
{
	(void)arg;
	(void)message;
}

/* Say that e happened while doing what. RET: the exit status for e. */
static int keys_failed(const char *what, int e, const char *err)
{
	const err_info_t *info = err_info((err_code)-e);
	fprintf(stderr, "yardctl: %s: %s", what, err && *err ? err : info->doc);
	if (-e != ERR_INTERNAL)
		fprintf(stderr, " (%s)", info->code);
	fputc('\n', stderr);
	return http_exit_from_err((err_code)-e);
}

/* The two keys of a rotation. RET -1 (go on) or the exit status after saying why. */
static int rotation_keys(const char *old_file, const char *new_file, crypt_key *from, crypt_key *to)
{
	char err[512] = "";
	int rc;
	if (old_file) {
		rc = crypt_master_load_file(old_file, from, err, sizeof(err));
	} else {
		ty_config cfg;
		rc = config_load(&cfg, err, sizeof(err)) < 0 ? -ERR_MASTER_KEY_INVALID : 0;
		if (rc == 0)
			rc = crypt_master_from_config(&cfg, from, err, sizeof(err));
	}
	if (rc)
		return keys_failed("could not read the master key being replaced", rc, err);
	if ((rc = crypt_master_load_file(new_file, to, err, sizeof(err)))) {
		crypt_key_clear(from);
		return keys_failed("could not read the new master key", rc, err);
	}
	return -1;
}

/* Record one step of the rotation in the caller's transaction. */
static int rotation_audit(PGconn *c, const char *action, const char *tid, json_t *detail)
{
	char res[64];
	snprintf(res, sizeof(res), "master-key/%s", tid);
	audit_record a = {.actor_id = NULL,
	                  .actor_name = "operator",
	                  .action = action,
	                  .resource = res,
	                  .outcome = "success",
	                  .status = 200,
	                  .detail = detail};
	int rc = audit_write(c, &a);
	json_decref(detail);
	return rc;
}

typedef struct rotation {
	const crypt_key *from, *to;
	char fid[CRYPT_KEY_ID_LEN + 1], tid[CRYPT_KEY_ID_LEN + 1];
	int batch, max_batches;
	int64_t rewrapped, left;
	int batches;
	bool retired;
} rotation;

/* One batch in its own transaction. RET 0 or -ERR_X; OUT *done. */
static int rotation_batch(PGconn *c, rotation *rt, int64_t *done)
{
	int rc = db_begin(c);
	if (rc == 0)
		rc = keys_master_rewrap_batch(c, rt->from, rt->to, rt->batch, done, &rt->left);
	if (rc == 0 && *done > 0)
		rc = rotation_audit(c, "key.master_rewrap", rt->tid,
		                    json_pack("{s:s, s:s, s:I, s:I}", "from", rt->fid, "to",
		                              rt->tid, "rewrapped", (json_int_t)*done, "left",
		                              (json_int_t)rt->left));
	if (rc == 0)
		rc = db_commit(c);
	else
		db_rollback(c);
	return rc;
}

/* Every batch, then the old key's retirement. RET 0 or -ERR_X with err set. */
static int rotation_run(PGconn *c, rotation *rt, char *err, size_t errlen)
{
	int rc = db_begin(c);
	if (rc == 0)
		rc = keys_master_rotation_begin(c, rt->from, rt->to);
	if (rc == 0)
		rc = db_commit(c);
	else
		db_rollback(c);
	if (rc == -ERR_CONFLICT)
		err_printf(err, errlen, "the old and the new master key are the same key (%s)",
		           rt->tid);
	int locked = 0;
	for (;;) {
		if (rc || (rt->max_batches > 0 && rt->batches >= rt->max_batches))
			break;
		int64_t done = 0;
		if ((rc = rotation_batch(c, rt, &done)))
			break;
		rt->rewrapped += done;
		if (done > 0) {
			rt->batches++;
			locked = 0;
		}
		if (rt->left == 0)
			break;
		if (done == 0 && ++locked > LOCKED_TRIES) {
			err_printf(err, errlen,
			           "%lld stored keys stayed locked by other transactions: run the "
			           "command again",
			           (long long)rt->left);
			return -ERR_CONFLICT;
		}
		if (done == 0)
			sleep(1);
	}
	if (rc == -ERR_MASTER_KEY_MISSING)
		err_printf(err, errlen,
		           "a stored key is wrapped by a master key that is neither %s nor %s",
		           rt->fid, rt->tid);
	else if (rc == -ERR_KEY_UNWRAP_FAILED)
		err_printf(
		    err, errlen,
		    "a stored key that names master key %s did not unwrap with it: altered rows",
		    rt->fid);
	if (rc || rt->left > 0)
		return rc;
	if ((rc = db_begin(c)) == 0 &&
	    (rc = keys_master_retire(c, rt->from, rt->to, &rt->retired)) == 0 && rt->retired)
		rc =
		    rotation_audit(c, "key.master_retire", rt->fid,
		                   json_pack("{s:s, s:s}", "retired", rt->fid, "current", rt->tid));
	if (rc == 0)
		rc = db_commit(c);
	else
		db_rollback(c);
	return rc;
}

static void rotation_print(const cli_ctx *ctx, const rotation *rt)
{
	if (ctx->format == CLI_FMT_JSON) {
		json_t *j =
		    json_pack("{s:s, s:s, s:I, s:i, s:I, s:b}", "from", rt->fid, "to", rt->tid,
		              "rewrapped", (json_int_t)rt->rewrapped, "batches", rt->batches,
		              "left", (json_int_t)rt->left, "retired", rt->retired);
		output_json(stdout, j);
		json_decref(j);
		return;
	}
	printf("wrapped %lld stored key%s again under master key %s in %d batch%s\n",
	       (long long)rt->rewrapped, rt->rewrapped == 1 ? "" : "s", rt->tid, rt->batches,
	       rt->batches == 1 ? "" : "es");
	if (rt->retired)
		printf("master key %s is retired: no stored key needs it\n", rt->fid);
	else
		printf("%lld stored key%s still under another master key: run the command again\n",
		       (long long)rt->left, rt->left == 1 ? "" : "s");
}

enum { OPT_NEW, OPT_OLD, OPT_BATCH, OPT_MAX_BATCHES };
static const opt_spec rotate_opts[] = {{"new-key-file", true, true},
                                       {"old-key-file", true, false},
                                       {"batch", true, false},
                                       {"max-batches", true, false},
                                       {NULL, false, false}};

/* RET: a count of 1..max from s, or 0 when it is not one. */
static int count_arg(const char *s, int max)
{
	char *end;
	long v = strtol(s, &end, 10);
	return *s && *end == '\0' && v >= 1 && v <= max ? (int)v : 0;
}

static int keys_rotate_master(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	opt_result o;
	int rc = args_parse_cmd(ctx, self, rotate_opts, 0, 0, argc, argv, &o);
	if (rc >= 0)
		return rc;
	rotation rt = {.batch = BATCH_DEFAULT};
	if (o.set[OPT_BATCH] && !(rt.batch = count_arg(o.val[OPT_BATCH], BATCH_MAX)))
		return args_usage_error(ctx, self, "--batch must be 1 to 10000");
	if (o.set[OPT_MAX_BATCHES] &&
	    !(rt.max_batches = count_arg(o.val[OPT_MAX_BATCHES], 1 << 30)))
		return args_usage_error(ctx, self, "--max-batches must be a positive count");
	crypt_key from, to;
	if ((rc = rotation_keys(o.set[OPT_OLD] ? o.val[OPT_OLD] : NULL, o.val[OPT_NEW], &from,
	                        &to)) >= 0)
		return rc;
	rt.from = &from;
	rt.to = &to;
	crypt_key_id(&from, rt.fid);
	crypt_key_id(&to, rt.tid);
	char err[512] = "";
	PGconn *c = db_connect(ctx->db, err, sizeof(err));
	if (!c) {
		fprintf(stderr, "yardctl: %s\n", err);
		rc = CLI_SERVER;
	} else {
		PQsetNoticeProcessor(c, notice_ignore, NULL);
		if ((rc = migrate_check(c, err, sizeof(err))))
			rc = keys_failed("the rotation needs a current schema", rc, err);
		else if ((rc = rotation_run(c, &rt, err, sizeof(err))))
			rc = keys_failed("could not rotate the master key", rc, err);
		else
			rotation_print(ctx, &rt);
		db_close(c);
	}
	crypt_key_clear(&from);
	crypt_key_clear(&to);
	return rc;
}

static const out_col status_fields[] = {
    {"master key", "master_key_id"},
    {"previous master key", "previous_key_id"},
    {"previous still needed", "previous_needed"},
    {"keys", "keys"},
    {NULL, NULL},
};

static const out_col rotate_fields[] = {
    {"key version", "version"},
    {"data keys re-wrapped", "rewrapped"},
    {"data keys rotated", "data_keys"},
    {NULL, NULL},
};

enum { OPT_DATA_KEYS };
static const opt_spec tenant_rotate_opts[] = {{"data-keys", false, false}, {NULL, false, false}};

static int keys_rotate_tenant(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	opt_result o;
	int rc = args_parse_cmd(ctx, self, tenant_rotate_opts, 1, 1, argc, argv, &o);
	if (rc >= 0)
		return rc;
	json_t *body = json_pack("{s:b}", "data_keys", o.set[OPT_DATA_KEYS]);
	rc =
	    cmd_show(ctx, "POST", URL_PATH(ROUTE_TENANT_KEY_ROTATE, o.pos[0]), body, rotate_fields);
	json_decref(body);
	return rc;
}

enum { OPT_YES };
static const opt_spec shred_opts[] = {{"yes", false, false}, {NULL, false, false}};

/* Destroy a tenant's keys for good: only with --yes, which says the caller knows. */
static int keys_shred_tenant(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	opt_result o;
	int rc = args_parse_cmd(ctx, self, shred_opts, 1, 1, argc, argv, &o);
	if (rc >= 0)
		return rc;
	if (!o.set[OPT_YES])
		return args_usage_error(ctx, self,
		                        "keys shred makes everything the tenant's jobs encrypted "
		                        "unreadable, for good: add --yes to go on");
	static const out_col none[] = {{NULL, NULL}}; /* the answer is 204, empty */
	return cmd_do(ctx, "DELETE", URL_PATH(ROUTE_TENANT_KEYS, o.pos[0]),
	              "the tenant's keys are destroyed", none);
}

const cli_command keys_commands[] = {
    {"rotate", "TENANT [--data-keys]",
     "rotate a tenant's key-encryption key; --data-keys: its data keys too",
     "Makes a new version of the tenant's key-encryption key and wraps every data\n"
     "key again under it. With --data-keys, every job and dataset of the tenant also\n"
     "seals what it writes next under a new generation of its data key; what was\n"
     "written before keeps its own and stays readable. Tenant owners and platform\n"
     "admins.\n",
     keys_rotate_tenant, NULL, NULL},
    {"rotate-master", "--new-key-file FILE [--old-key-file FILE] [--batch N] [--max-batches N]",
     "wrap every stored key again under a new master key, and retire the old one",
     "Works on the database directly (TRAINYARD_DB or --db). The old key is\n"
     "--old-key-file, else TRAINYARD_MASTER_KEY_FILE or TRAINYARD_MASTER_KEY. Restart\n"
     "the API first with the new key as TRAINYARD_MASTER_KEY_FILE and the old one as\n"
     "TRAINYARD_MASTER_KEY_PREVIOUS_FILE. Each batch of N rows (default 100) is one\n"
     "audited transaction; after a crash, or --max-batches, run it again to go on.\n"
     "When no stored key is left under the old key, it is retired.\n",
     keys_rotate_master, NULL, NULL},
    {"shred", "TENANT --yes", "destroy every key of a tenant: what its jobs encrypted is lost",
     "Deletes every version of the tenant's key-encryption key and every data key\n"
     "wrapped by them (DELETE /v1/tenants/{tenant}/keys): nothing the tenant's jobs\n"
     "encrypted can be read again, and the tenant gets no keys again. Platform admins.\n"
     "Refused without --yes.\n",
     keys_shred_tenant, NULL, NULL},
    {"status", "", "show which master keys the stored keys are wrapped by (GET /v1/keys/master)",
     NULL, NULL, NULL, CMD_SHOW("GET", ROUTE_MASTER_KEY, 0, status_fields)},
    {NULL, NULL, NULL, NULL, NULL, NULL, NULL},
};
