/*
 * webhook_send.c - the API's thread that delivers alerts to webhooks
 * (webhook_send.h).
 *
 * Each round claims due pending deliveries (FOR UPDATE SKIP LOCKED, and a
 * lease pushing next_at a minute on, so two API processes never send the
 * same one at once), sends each, and records the outcome: delivered on a
 * 2xx answer; otherwise tried again after 5 s, doubling up to an hour,
 * and failed after WEBHOOK_TRIES tries or at once when the address is
 * refused. A delivery is a POST of the alert as JSON:
 *   X-Trainyard-Event: <kind>       X-Trainyard-Delivery: <delivery id>
 *   X-Trainyard-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>
 * the HMAC keyed with the webhook's secret as shown ("whsec_..."), over
 * "<t>.<body>". The address is checked again (lib/webhook_addr.h) and the
 * connection made to exactly the address checked.
 */
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
#include "log.h"
#include "webhook_addr.h"

#define WEBHOOK_TRIES     8
#define WEBHOOK_BATCH     16
#define WEBHOOK_TIMEOUT_S 5

struct webhook_sender {
	const ty_config *cfg;
	const crypt_key *master;
	pthread_t thread;
	atomic_bool stopping;
};

/* Claim due deliveries; each row: id, attempts, url, sealed secret, allow_private, webhook id,
 * body. */
#define CLAIM_SQL                                                                                  \
	"WITH due AS (SELECT d.id FROM webhook_deliveries d WHERE d.state = 'pending'"             \
	"   AND d.next_at <= clock_timestamp() ORDER BY d.next_at LIMIT 16 FOR UPDATE SKIP "       \
	"LOCKED),"                                                                                 \
	" claimed AS (UPDATE webhook_deliveries d SET attempts = d.attempts + 1,"                  \
	"   next_at = clock_timestamp() + interval '60 seconds' FROM due WHERE d.id = due.id"      \
	"   RETURNING d.*)"                                                                        \
	" SELECT c.id, c.attempts, w.url, encode(w.secret_sealed, 'hex'), w.allow_private, w.id,"  \
	"  json_build_object('id', a.id, 'kind', a.kind, 'tenant', t.name, 'job_id', a.job_id,"    \
	"   'job_name', j.name, 'detail', a.detail, 'created_at', to_char(a.created_at"            \
	"   AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'))::text, w.deleted_at IS NOT " \
	"NULL"                                                                                     \
	" FROM claimed c JOIN webhooks w ON w.id = c.webhook_id JOIN alerts a ON a.id = "          \
	"c.alert_id"                                                                               \
	" JOIN tenants t ON t.id = a.tenant_id LEFT JOIN jobs j ON j.id = a.job_id"

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
	    crypt_unwrap(s->master, context, sealed, sizeof(sealed), &k) < 0)
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

/* Record the outcome of delivery id after attempts tries. */
static void record(PGconn *c, const char *id, int attempts, long status, const char *why)
{
	char st[24], tries[16];
	snprintf(st, sizeof(st), "%ld", status > 0 ? status : 0);
	snprintf(tries, sizeof(tries), "%d", attempts);
	const char *state = status >= 200 && status < 300             ? "delivered"
	                    : status < 0 || attempts >= WEBHOOK_TRIES ? "failed"
	                                                              : "pending";
	/* the next try after 5 s, doubling each time, at most an hour */
	const char *p[] = {id, state, status > 0 ? st : NULL, why, tries};
	if (db_query(c, NULL,
	             "UPDATE webhook_deliveries SET state = $2, last_status = $3::int,"
	             " last_error = $4, delivered_at = CASE WHEN $2 = 'delivered'"
	             " THEN clock_timestamp() END, next_at = clock_timestamp()"
	             " + least(5 * power(2, $5::int - 1), 3600) * interval '1 second'"
	             " WHERE id = $1::bigint",
	             5, p))
		log_printf(LOG_WARN, "could not record webhook delivery %s", id);
}

/* One round. RET the deliveries sent, or -1 when the database failed. */
static int round_once(webhook_sender *s, PGconn *c)
{
	PGresult *r = NULL;
	if (db_begin(c) || db_query(c, &r, CLAIM_SQL, 0, NULL) || db_commit(c)) {
		PQclear(r);
		db_rollback(c);
		return -1;
	}
	int n = PQntuples(r);
	for (int i = 0; i < n && !atomic_load(&s->stopping); i++) {
		const char *id = PQgetvalue(r, i, 0), *url = PQgetvalue(r, i, 2);
		int attempts = atoi(PQgetvalue(r, i, 1));
		char secret[6 + 2 * CRYPT_KEY_LEN + 1], why[320] = "";
		long status;
		if (strcmp(PQgetvalue(r, i, 7), "t") == 0) {
			status = -1;
			snprintf(why, sizeof(why), "the webhook was deleted");
		} else if (secret_text(s, PQgetvalue(r, i, 5), PQgetvalue(r, i, 3), secret,
		                       sizeof(secret)) < 0) {
			status = -1;
			snprintf(why, sizeof(why),
			         "its secret could not be unsealed with the master key");
		} else {
			const char *kind = "";
			json_t *alert = json_loads(PQgetvalue(r, i, 6), 0, NULL);
			kind = json_string_value(json_object_get(alert, "kind"));
			status =
			    send_one(s, url, strcmp(PQgetvalue(r, i, 4), "t") == 0, secret,
			             kind ? kind : "", id, PQgetvalue(r, i, 6), why, sizeof(why));
			json_decref(alert);
			OPENSSL_cleanse(secret, sizeof(secret));
			if (status > 0 && (status < 200 || status >= 300))
				snprintf(why, sizeof(why), "answered %ld", status);
		}
		record(c, id, attempts, status, why);
	}
	PQclear(r);
	return n;
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
		int n = round_once(s, c);
		if (n < 0) {
			db_close(c);
			c = NULL;
		}
		if (n <= 0)
			nap(s, 1000);
	}
	db_close(c);
	return NULL;
}

webhook_sender *webhook_sender_start(const ty_config *cfg, const crypt_key *master)
{
	webhook_sender *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->cfg = cfg;
	s->master = master;
	atomic_init(&s->stopping, false);
	if (pthread_create(&s->thread, NULL, run, s) != 0) {
		free(s);
		return NULL;
	}
	return s;
}

void webhook_sender_stop(webhook_sender *s)
{
	if (!s)
		return;
	atomic_store(&s->stopping, true);
	pthread_join(s->thread, NULL);
	free(s);
}
