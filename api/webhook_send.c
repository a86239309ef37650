/*
 * webhook_send.c - the API's threads that deliver alerts to webhooks
 * (webhook_send.h).
 *
 * TRAINYARD_WEBHOOK_SENDERS threads each claim one due pending delivery at
 * a time (FOR UPDATE SKIP LOCKED, and a lease pushing next_at a minute on,
 * so two API processes never send the same one at once), send it, and
 * record the outcome, only while the delivery is still pending under the
 * sender's own claim (each claim a fresh id, migration 0025: a sender that
 * outlived its lease, stopped or slowed, writes nothing over what another
 * sender did since): delivered on a 2xx answer; otherwise tried again
 * after 5 s, doubling up to an hour, and failed after WEBHOOK_TRIES tries
 * or at once when the address is refused. Each try ends within
 * WEBHOOK_TIMEOUT_S. Fair shares: a claim passes over the tenants that
 * already have TRAINYARD_WEBHOOK_SENDS_PER_TENANT deliveries under way in
 * this process (at most one fewer than the senders), and takes the oldest
 * due delivery of the others; the claims of one process are made one at a
 * time, under the lock that keeps the counts. So a tenant whose receivers
 * hang keeps at most its share of the senders busy, and the others go on
 * delivering the other tenants' alerts.
 *
 * A delivery is a POST of the alert as JSON:
 *   X-Trainyard-Event: <kind>       X-Trainyard-Delivery: <delivery id>
 *   X-Trainyard-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>
 * the HMAC keyed with the webhook's secret as shown ("whsec_..."), over
 * "<t>.<body>". The address is checked again (api/webhook_addr.h) and the
 * connection made to exactly the address checked.
 */
#include "clock.h"
#include "webhook_send.h"

#include <curl/curl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "db.h"
#include "hex.h"
#include "keys.h"
#include "log.h"
#include "webhook_addr.h"

#define WEBHOOK_TRIES     8
#define WEBHOOK_TIMEOUT_S 5
#define TENANT_ID_LEN     36

/* A tenant with deliveries under way in this process. */
typedef struct tenant_sends {
	char tenant_id[TENANT_ID_LEN + 1];
	int n; /* 0: a free entry */
} tenant_sends;

struct webhook_sender {
	const ty_config *cfg;
	const crypt_key *master;
	int senders, per_tenant;
	pthread_t *threads;
	atomic_bool stopping;
	pthread_mutex_t lock; /* one claim at a time, and the counts of busy */
	tenant_sends *busy;   /* senders entries */
};

/* One claimed delivery. */
typedef struct claimed_delivery {
	PGresult *row; /* the claim's one row, as CLAIM_SQL says */
	char tenant_id[TENANT_ID_LEN + 1];
} claimed_delivery;

/*
 * Claim the oldest due delivery whose tenant is not in $1 (a uuid[] of the
 * tenants at their share); its row: id, attempts, url, sealed secret,
 * allow_private, webhook id, body, deleted, tenant id, claim.
 */
#define CLAIM_SQL                                                                                  \
	"WITH due AS (SELECT d.id FROM webhook_deliveries d JOIN webhooks w ON w.id = "            \
	"d.webhook_id"                                                                             \
	"   WHERE d.state = 'pending' AND d.next_at <= clock_timestamp()"                          \
	"   AND w.tenant_id <> ALL ($1::uuid[]) ORDER BY d.next_at LIMIT 1"                        \
	"   FOR UPDATE OF d SKIP LOCKED),"                                                         \
	" claimed AS (UPDATE webhook_deliveries d SET attempts = d.attempts + 1,"                  \
	"   next_at = clock_timestamp() + interval '60 seconds', claim = gen_random_uuid()"        \
	"   FROM due WHERE d.id = due.id RETURNING d.*)"                                           \
	" SELECT c.id, c.attempts, w.url, encode(w.secret_sealed, 'hex'), w.allow_private, w.id,"  \
	"  json_build_object('id', a.id, 'kind', a.kind, 'tenant', t.name, 'job_id', a.job_id,"    \
	"   'job_name', j.name, 'detail', a.detail, 'created_at', " CLOCK_SQL_RFC3339(             \
	    "a.created_at") ")::text,"                                                             \
	                    "  w.deleted_at IS NOT NULL, w.tenant_id, c.claim"                     \
	                    " FROM claimed c JOIN webhooks w ON w.id = c.webhook_id JOIN alerts "  \
	                    "a ON a.id = "                                                         \
	                    "c.alert_id"                                                           \
	                    " JOIN tenants t ON t.id = a.tenant_id LEFT JOIN jobs j ON j.id = "    \
	                    "a.job_id"

static void nap(webhook_sender *s, int ms)
{
	for (int slept = 0; slept < ms && !atomic_load(&s->stopping); slept += 50)
		nanosleep(&(struct timespec){0, 50 * 1000000L}, NULL);
}

/* The secret as shown at creation, from its sealed hex. RET 0 or -1. */
static int secret_text(webhook_sender *s, const char *id, const char *sealed_hex, char *out,
                       size_t outlen)
{
	unsigned char sealed[CRYPT_WRAPPED_LEN];
	char context[128];
	crypt_key k;
	if (outlen < 6 + 2 * CRYPT_KEY_LEN + 1 ||
	    !hex_decode(sealed_hex, strlen(sealed_hex), sealed, sizeof(sealed)))
		return -1;
	if (crypt_context(context, sizeof(context), "webhook-secret", id, 1) < 0 ||
	    keys_master_secret_unwrap(s->master, context, sealed, sizeof(sealed), &k) < 0)
		return -1;
	memcpy(out, "whsec_", 6);
	hex_encode(k.bytes, CRYPT_KEY_LEN, out + 6);
	crypt_key_clear(&k);
	return 0;
}

static size_t discard(char *p, size_t size, size_t n, void *ctx)
{
	(void)p;
	(void)ctx;
	return size * n;
}

/*
 * POST body to url as kind, signed with secret. RET the HTTP status (0:
 * no answer), with why set when it was not sent or not answered; -1 when
 * the address is refused (for good).
 */
static long send_one(const webhook_sender *s, const char *url, bool allow_private,
                     const char *secret, const char *kind, const char *delivery, const char *body,
                     char *why, size_t whylen)
{
	(void)s;
	webhook_target t;
	if (webhook_target_check(url, allow_private, &t, why, whylen) < 0)
		return -1;
	char stamp[32], mac_hex[2 * EVP_MAX_MD_SIZE + 1];
	snprintf(stamp, sizeof(stamp), "%lld", (long long)time(NULL));
	size_t signed_len = strlen(stamp) + 1 + strlen(body);
	char *to_sign = malloc(signed_len + 1);
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned mac_len = 0;
	if (!to_sign) {
		snprintf(why, whylen, "out of memory");
		return 0;
	}
	snprintf(to_sign, signed_len + 1, "%s.%s", stamp, body);
	HMAC(EVP_sha256(), secret, (int)strlen(secret), (const unsigned char *)to_sign, signed_len,
	     mac, &mac_len);
	free(to_sign);
	hex_encode(mac, mac_len, mac_hex);
	char h_sig[200], h_event[64], h_delivery[64], resolve[400];
	snprintf(h_sig, sizeof(h_sig), "X-Trainyard-Signature: t=%s,v1=%s", stamp, mac_hex);
	snprintf(h_event, sizeof(h_event), "X-Trainyard-Event: %s", kind);
	snprintf(h_delivery, sizeof(h_delivery), "X-Trainyard-Delivery: %s", delivery);
	/* connect to the address just checked, whatever a second lookup would say */
	bool v6 = strchr(t.address, ':') != NULL;
	snprintf(resolve, sizeof(resolve), "%s:%d:%s%s%s", t.host, t.port, v6 ? "[" : "", t.address,
	         v6 ? "]" : "");
	CURL *c = curl_easy_init();
	struct curl_slist *headers = NULL, *pin = NULL;
	long status = 0;
	if (!c) {
		snprintf(why, whylen, "could not start a transfer");
		return 0;
	}
	headers = curl_slist_append(headers, "Content-Type: application/json");
	headers = curl_slist_append(headers, h_sig);
	headers = curl_slist_append(headers, h_event);
	headers = curl_slist_append(headers, h_delivery);
	headers = curl_slist_append(headers, "User-Agent: trainyard-webhook/1");
	pin = curl_slist_append(pin, resolve);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_RESOLVE, pin);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, (long)WEBHOOK_TIMEOUT_S);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L); /* a redirect could point anywhere */
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
	CURLcode rc = curl_easy_perform(c);
	if (rc == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	else
		snprintf(why, whylen, "%s", curl_easy_strerror(rc));
	curl_slist_free_all(headers);
	curl_slist_free_all(pin);
	curl_easy_cleanup(c);
	return status;
}

/*
 * Record the outcome of delivery id after attempts tries, if it is still
 * pending under claim (else another sender took it over once this one's
 * lease ran out, and what it did stands).
 */
static void record(PGconn *c, const char *id, const char *claim, int attempts, long status,
                   const char *why)
{
	char st[24], tries[16];
	snprintf(st, sizeof(st), "%ld", status > 0 ? status : 0);
	snprintf(tries, sizeof(tries), "%d", attempts);
	const char *state = status >= 200 && status < 300             ? "delivered"
	                    : status < 0 || attempts >= WEBHOOK_TRIES ? "failed"
	                                                              : "pending";
	/* the next try after 5 s, doubling each time, at most an hour */
	const char *p[] = {id, state, status > 0 ? st : NULL, why, tries, claim};
	PGresult *r = NULL;
	if (db_query(c, &r,
	             "UPDATE webhook_deliveries SET state = $2, last_status = $3::int,"
	             " last_error = $4, delivered_at = CASE WHEN $2 = 'delivered'"
	             " THEN clock_timestamp() END, next_at = clock_timestamp()"
	             " + least(5 * power(2, $5::int - 1), 3600) * interval '1 second',"
	             " claim = NULL"
	             " WHERE id = $1::bigint AND claim = $6::uuid AND state = 'pending'",
	             6, p))
		log_printf(LOG_WARN, "could not record webhook delivery %s", id);
	else if (strcmp(PQcmdTuples(r), "0") == 0)
		log_printf(LOG_WARN,
		           "webhook delivery %s: its claim ran out and another sender took it "
		           "over; this try's outcome (%s) is not recorded",
		           id, state);
	PQclear(r);
}

/* tenant_id's entry in s->busy, or with add a free one for it; NULL when there is none. */
static tenant_sends *busy_find(webhook_sender *s, const char *tenant_id, bool add)
{
	tenant_sends *spare = NULL;
	for (int i = 0; i < s->senders; i++) {
		if (s->busy[i].n > 0 && strcmp(s->busy[i].tenant_id, tenant_id) == 0)
			return &s->busy[i];
		if (!spare && s->busy[i].n == 0)
			spare = &s->busy[i];
	}
	if (add && spare)
		snprintf(spare->tenant_id, sizeof(spare->tenant_id), "%s", tenant_id);
	return add ? spare : NULL;
}

/*
 * Claim one due delivery of a tenant below its share, and count it against
 * the tenant. Under s->lock. RET 1 with *d (release with delivery_done), 0
 * when none is due, -1 when the database failed.
 */
static int claim_one(webhook_sender *s, PGconn *c, claimed_delivery *d)
{
	/* "{" and the tenants at their share, each 36 characters and a comma, and "}" */
	char full[2 + 64 * (TENANT_ID_LEN + 1)];
	size_t len = 0;
	full[len++] = '{';
	for (int i = 0; i < s->senders; i++)
		if (s->busy[i].n >= s->per_tenant && len + TENANT_ID_LEN + 2 < sizeof(full))
			len += (size_t)snprintf(full + len, sizeof(full) - len, "%s%s",
			                        len > 1 ? "," : "", s->busy[i].tenant_id);
	full[len++] = '}';
	full[len] = '\0';
	const char *p[] = {full};
	PGresult *r = NULL;
	if (db_query(c, &r, CLAIM_SQL, 1, p)) {
		PQclear(r);
		return -1;
	}
	if (PQntuples(r) != 1) {
		PQclear(r);
		return 0;
	}
	d->row = r;
	snprintf(d->tenant_id, sizeof(d->tenant_id), "%s", PQgetvalue(r, 0, 8));
	tenant_sends *t = busy_find(s, d->tenant_id, true);
	if (t) /* every entry with a count is a sender's: one is always free */
		t->n++;
	return 1;
}

/* Send claimed delivery d and record how it went. */
static void deliver(webhook_sender *s, PGconn *c, const claimed_delivery *d)
{
	PGresult *r = d->row;
	const char *id = PQgetvalue(r, 0, 0), *url = PQgetvalue(r, 0, 2);
	int attempts = atoi(PQgetvalue(r, 0, 1));
	char secret[6 + 2 * CRYPT_KEY_LEN + 1], why[320] = "";
	long status;
	if (strcmp(PQgetvalue(r, 0, 7), "t") == 0) {
		status = -1;
		snprintf(why, sizeof(why), "the webhook was deleted");
	} else if (secret_text(s, PQgetvalue(r, 0, 5), PQgetvalue(r, 0, 3), secret,
	                       sizeof(secret)) < 0) {
		status = -1;
		snprintf(why, sizeof(why), "its secret could not be unsealed with the master key");
	} else {
		json_t *alert = json_loads(PQgetvalue(r, 0, 6), 0, NULL);
		const char *kind = json_string_value(json_object_get(alert, "kind"));
		status = send_one(s, url, strcmp(PQgetvalue(r, 0, 4), "t") == 0, secret,
		                  kind ? kind : "", id, PQgetvalue(r, 0, 6), why, sizeof(why));
		json_decref(alert);
		OPENSSL_cleanse(secret, sizeof(secret));
		if (status > 0 && (status < 200 || status >= 300))
			snprintf(why, sizeof(why), "answered %ld", status);
	}
	record(c, id, PQgetvalue(r, 0, 9), attempts, status, why);
}

/* Give back d's place in its tenant's share and free its row. */
static void delivery_done(webhook_sender *s, claimed_delivery *d)
{
	pthread_mutex_lock(&s->lock);
	tenant_sends *t = busy_find(s, d->tenant_id, false);
	if (t)
		t->n--;
	pthread_mutex_unlock(&s->lock);
	PQclear(d->row);
	d->row = NULL;
}

static void *run(void *arg)
{
	webhook_sender *s = arg;
	PGconn *c = NULL;
	while (!atomic_load(&s->stopping)) {
		char err[512];
		if (!c && !(c = db_connect(s->cfg->db, err, sizeof(err)))) {
			nap(s, s->cfg->db_retry_ms);
			continue;
		}
		claimed_delivery d = {0};
		pthread_mutex_lock(&s->lock);
		int n = claim_one(s, c, &d);
		pthread_mutex_unlock(&s->lock);
		if (n < 0) {
			db_close(c);
			c = NULL;
		}
		if (n <= 0) {
			nap(s, 1000);
			continue;
		}
		deliver(s, c, &d);
		delivery_done(s, &d);
	}
	db_close(c);
	return NULL;
}

static void sender_free(webhook_sender *s)
{
	pthread_mutex_destroy(&s->lock);
	free(s->threads);
	free(s->busy);
	free(s);
}

webhook_sender *webhook_sender_start(const ty_config *cfg, const crypt_key *master)
{
	webhook_sender *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->cfg = cfg;
	s->master = master;
	s->senders = cfg->webhook_senders > 1 ? cfg->webhook_senders : 2;
	s->per_tenant = cfg->webhook_sends_per_tenant < s->senders ? cfg->webhook_sends_per_tenant
	                                                           : s->senders - 1;
	if (s->per_tenant < 1)
		s->per_tenant = 1;
	atomic_init(&s->stopping, false);
	pthread_mutex_init(&s->lock, NULL);
	s->threads = calloc((size_t)s->senders, sizeof(*s->threads));
	s->busy = calloc((size_t)s->senders, sizeof(*s->busy));
	if (!s->threads || !s->busy) {
		sender_free(s);
		return NULL;
	}
	for (int i = 0; i < s->senders; i++)
		if (pthread_create(&s->threads[i], NULL, run, s) != 0) {
			log_printf(LOG_ERROR, "could not start webhook sender %d of %d", i + 1,
			           s->senders);
			atomic_store(&s->stopping, true);
			for (int k = 0; k < i; k++)
				pthread_join(s->threads[k], NULL);
			sender_free(s);
			return NULL;
		}
	return s;
}

void webhook_sender_stop(webhook_sender *s)
{
	if (!s)
		return;
	atomic_store(&s->stopping, true);
	for (int i = 0; i < s->senders; i++)
		pthread_join(s->threads[i], NULL);
	sender_free(s);
}
