/*
 * keys_record.c - the keys a deployment's database belongs with
 * (keys_record.h).
 */
#include "keys_record.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "db.h"

/* One key's role: its row, what names it to an operator. */
typedef struct key_role {
	const char *role, *what, *setting;
} key_role;

static const key_role MASTER = {"master", "master key", "TRAINYARD_MASTER_KEY_FILE"};
static const key_role AUDIT = {"audit", "audit signing key", "TRAINYARD_AUDIT_KEY_FILE"};

/* The id on record for r (into rec), "" when none. RET 0, or -1 with err. */
static int on_record(PGconn *c, const key_role *r, const char *mine, char *rec, size_t reclen,
                     char *err, size_t errlen)
{
	PGresult *res = NULL;
	const char *p[2] = {r->role, mine};
	/* the first process to start records its key; the others find it there */
	if (mine && db_query(c, NULL,
	                     "INSERT INTO deployment_keys (role, key_id) VALUES ($1, $2)"
	                     " ON CONFLICT (role) DO NOTHING",
	                     2, p) < 0) {
		snprintf(err, errlen, "could not record the %s's id: %s", r->what,
		         PQerrorMessage(c));
		return -1;
	}
	if (db_query(c, &res, "SELECT key_id FROM deployment_keys WHERE role = $1 FOR UPDATE", 1,
	             p) < 0) {
		snprintf(err, errlen, "could not read the %s's id on record: %s", r->what,
		         PQerrorMessage(c));
		PQclear(res);
		return -1;
	}
	const char *v = PQntuples(res) == 1 ? db_get(res, 0, "key_id") : NULL;
	snprintf(rec, reclen, "%s", v ? v : "");
	PQclear(res);
	return 0;
}

/* Whether this process may start with mine for r, given rec on record. RET 0, or -1 with err. */
static int same_key(const key_role *r, const char *mine, const char *rec, char *err, size_t errlen)
{
	if (!rec[0] || (mine && strcmp(mine, rec) == 0))
		return 0;
	if (!mine)
		snprintf(err, errlen,
		         "this process holds no %s (%s), but the database belongs with %s %s: "
		         "start it with that key",
		         r->what, r->setting, r->what, rec);
	else
		snprintf(err, errlen,
		         "this process's %s is %s (%s), but the database belongs with %s %s: "
		         "start it with that key%s",
		         r->what, mine, r->setting, r->what, rec,
		         r == &MASTER ? ", or rotate to the new one with the recorded one as "
		                        "TRAINYARD_MASTER_KEY_PREVIOUS_FILE"
		                      : "");
	return -1;
}

/* The master's record: kept, or moved to k->master by a rotation. RET 0, or -1 with err. */
static int check_master(PGconn *c, const keys_held *k, char *note, size_t notelen, char *err,
                        size_t errlen)
{
	char rec[64];
	if (on_record(c, &MASTER, k->master, rec, sizeof(rec), err, errlen) < 0)
		return -1;
	bool rotating = k->master && k->master_previous && rec[0] &&
	                strcmp(k->master_previous, rec) == 0 && strcmp(k->master, rec) != 0;
	if (!rotating)
		return same_key(&MASTER, k->master, rec, err, errlen);
	const char *p[2] = {k->master, rec};
	if (db_query(c, NULL,
	             "UPDATE deployment_keys SET key_id = $1, recorded_at = clock_timestamp()"
	             " WHERE role = 'master' AND key_id = $2",
	             2, p) < 0) {
		snprintf(err, errlen, "could not record the new master key's id: %s",
		         PQerrorMessage(c));
		return -1;
	}
	snprintf(note, notelen, "the database now belongs with master key %s (rotated from %s)",
	         k->master, rec);
	return 0;
}

int keys_record_check(PGconn *c, const keys_held *k, char *note, size_t notelen, char *err,
                      size_t errlen)
{
	char ignored[1], rec[64];
	if (!note) {
		note = ignored;
		notelen = sizeof(ignored);
	}
	note[0] = '\0';
	if (db_begin(c) < 0) {
		snprintf(err, errlen, "could not check the keys on record: %s", PQerrorMessage(c));
		return -1;
	}
	if (check_master(c, k, note, notelen, err, errlen) < 0 ||
	    on_record(c, &AUDIT, k->audit, rec, sizeof(rec), err, errlen) < 0 ||
	    same_key(&AUDIT, k->audit, rec, err, errlen) < 0) {
		db_rollback(c);
		note[0] = '\0';
		return -1;
	}
	if (db_commit(c) < 0) {
		snprintf(err, errlen, "could not record the keys: %s", PQerrorMessage(c));
		note[0] = '\0';
		return -1;
	}
	return 0;
}
