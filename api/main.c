/*
 * main.c - trainyard-api: load settings, check (or apply) the schema,
 * serve until SIGINT or SIGTERM.
 */
#include <curl/curl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "db.h"
#include "keys.h"
#include "keys_record.h"
#include "log.h"
#include "tenantfs.h"
#include "migrate.h"
#include "server.h"
#include "stopsig.h"

/* Apply or verify migrations once at start. RET 0, or -1 (logged). */
static int schema_ready(const ty_config *cfg)
{
	char err[512];
	PGconn *c = db_connect(cfg->db, err, sizeof(err));
	if (!c) {
		log_printf(LOG_ERROR, "%s", err);
		return -1;
	}
	int rc;
	if (cfg->migrate_on_start) {
		int applied;
		rc = migrate_apply(c, &applied, err, sizeof(err));
	} else {
		rc = migrate_check(c, err, sizeof(err));
	}
	db_close(c);
	if (rc) {
		log_printf(LOG_ERROR, "%s", err);
		return -1;
	}
	return 0;
}

/* The keys held against those the database belongs with (keys_record.h). RET 0, or -1 (logged). */
static int keys_on_record(const ty_config *cfg, const keys_held *k)
{
	char err[512], note[256];
	PGconn *c = db_connect(cfg->db, err, sizeof(err));
	if (!c) {
		log_printf(LOG_ERROR, "%s", err);
		return -1;
	}
	int rc = keys_record_check(c, k, note, sizeof(note), err, sizeof(err));
	db_close(c);
	if (rc < 0) {
		log_printf(LOG_ERROR, "%s", err);
		return -1;
	}
	if (note[0])
		log_printf(LOG_INFO, "%s", note);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		printf("usage: trainyard-api\n\nServes the trainyard REST API. Settings come from "
		       "TRAINYARD_* environment variables; see README.md.\n");
		return 0;
	}
	ty_config cfg;
	if (config_load_daemon(&cfg, "trainyard-api") < 0)
		return 2;
	if (schema_ready(&cfg) < 0)
		return 1;
	api_server srv = {0};
	char id[CRYPT_KEY_ID_LEN + 1] = "", pid[CRYPT_KEY_ID_LEN + 1] = "";
	const char *roots[] = {cfg.storage_root, cfg.data_root, cfg.sched_spool};
	char rerr[1024];
	if (tenantfs_outside_roots(cfg.master_key_file, "the master key file", roots, 3, rerr,
	                           sizeof(rerr)) < 0 ||
	    tenantfs_outside_roots(cfg.master_key_previous_file, "the previous master key file",
	                           roots, 3, rerr, sizeof(rerr)) < 0 ||
	    tenantfs_outside_roots(cfg.audit_key_file, "the audit signing key file", roots, 3, rerr,
	                           sizeof(rerr)) < 0) {
		log_printf(LOG_ERROR, "%s", rerr);
		return 1;
	}
	if (cfg.master_key_file[0] || cfg.master_key[0]) {
		char kerr[512];
		if (crypt_master_from_config(&cfg, &srv.master, kerr, sizeof(kerr)) < 0) {
			log_printf(LOG_ERROR, "%s", kerr);
			return 1;
		}
		srv.has_master = true;
		crypt_key previous;
		int prc = crypt_master_previous_from_config(&cfg, &previous, kerr, sizeof(kerr));
		if (prc < 0) {
			log_printf(LOG_ERROR, "%s", kerr);
			return 1;
		}
		crypt_key_id(&srv.master, id);
		if (prc == 1) {
			/* a rotation is under way: the rows it has not reached name this one */
			keys_master_previous_set(&previous);
			crypt_key_id(&previous, pid);
			crypt_key_clear(&previous);
		}
		log_printf(LOG_INFO, "master key %s%s%s", id,
		           pid[0] ? ", previous master key " : "", pid);
	} else {
		log_printf(LOG_WARN, "no master key (TRAINYARD_MASTER_KEY_FILE): encrypted storage "
		                     "and its keys are unavailable");
	}
	if (cfg.audit_key_file[0]) {
		char kerr[512];
		if (auditsign_load(&srv.audit_key, cfg.audit_key_file, kerr, sizeof(kerr)) < 0) {
			log_printf(LOG_ERROR, "%s", kerr);
			return 1;
		}
		srv.has_audit_key = true;
	} else {
		log_printf(LOG_WARN, "no audit signing key (TRAINYARD_AUDIT_KEY_FILE): the audit "
		                     "log grows, but no tree head is signed");
	}
	keys_held held = {id[0] ? id : NULL, pid[0] ? pid : NULL,
	                  srv.has_audit_key ? srv.audit_key.key_id : NULL};
	if (keys_on_record(&cfg, &held) < 0)
		return 1;
	db_pool *pool = db_pool_new(cfg.db, cfg.db_pool, cfg.db_wait_ms, cfg.db_retry_ms);
	/* webhook deliveries (webhook_send.c) use libcurl from a thread of their own */
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		log_printf(LOG_ERROR, "could not initialise libcurl");
		return 1;
	}
	if (!pool || server_start(&srv, &cfg, pool) < 0) {
		db_pool_free(pool);
		return 1;
	}
	stopsig_install();
	while (stopsig_count() == 0)
		pause();
	log_printf(LOG_INFO, "shutting down");
	server_stop(&srv);
	db_pool_free(pool);
	crypt_key_clear(&srv.master);
	keys_master_previous_set(NULL);
	auditsign_release(&srv.audit_key);
	return 0;
}
