/*
 * httpc.c - see httpc.h.
 */
#include "httpc.h"

#include <curl/curl.h>
#include <errno.h>
#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>

/* The answer being received. */
typedef struct receiving {
	httpc_answer *a;
	const httpc_request *r;
	CURL *curl;
	size_t cap;
	bool decided; /* whether a 2xx is streamed was decided at its first bytes */
} receiving;

/* Grow a->body to hold need bytes; the old copy is wiped. RET 0 or -1. */
static int grow(receiving *in, size_t need)
{
	if (need <= in->cap)
		return 0;
	size_t cap = in->cap ? in->cap : 4096;
	while (cap < need)
		cap *= 2;
	char *nb = malloc(cap);
	if (!nb)
		return -1;
	if (in->a->body) {
		memcpy(nb, in->a->body, in->a->len);
		OPENSSL_cleanse(in->a->body, in->cap);
		free(in->a->body);
	}
	in->a->body = nb;
	in->cap = cap;
	return 0;
}

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
	receiving *in = arg;
	httpc_answer *a = in->a;
	size_t add = size * n;
	if (in->r->stream_to && !in->decided) {
		long status = 0;
		curl_easy_getinfo(in->curl, CURLINFO_RESPONSE_CODE, &status);
		a->streamed = status >= 200 && status < 300;
		in->decided = true;
	}
	if (a->streamed) {
		size_t w = fwrite(data, 1, add, in->r->stream_to);
		fflush(in->r->stream_to);
		return w;
	}
	if (a->len + add + 1 > in->r->answer_max) {
		a->too_big = true;
		return 0;
	}
	if (grow(in, a->len + add + 1) < 0)
		return 0;
	memcpy(a->body + a->len, data, add);
	a->len += add;
	a->body[a->len] = '\0';
	return add;
}

/* The body being sent from upload_from. */
typedef struct sending {
	const httpc_request *r;
	long long sent; /* bytes handed to curl so far */
	int read_errno; /* errno of a failed read, or 0 */
	bool failed;    /* the read failed, or the file ended before upload_size */
} sending;

static size_t on_read(char *buf, size_t size, size_t n, void *arg)
{
	sending *out = arg;
	const httpc_request *r = out->r;
	size_t want = size * n;
	if (r->upload_size >= 0) {
		long long left = r->upload_size - out->sent;
		if (left <= 0)
			return 0; /* all of it is out: whatever the file gained since is not sent */
		if ((unsigned long long)left < want)
			want = (size_t)left;
	}
	size_t got = fread(buf, 1, want, r->upload_from);
	if (got == 0 && ferror(r->upload_from)) {
		out->read_errno = errno;
		out->failed = true;
		return CURL_READFUNC_ABORT;
	}
	if (got == 0 && r->upload_size >= 0) {
		out->failed = true; /* the file shrank after its size was taken */
		return CURL_READFUNC_ABORT;
	}
	out->sent += (long long)got;
	return got;
}

/* Overwrite every header before freeing: one of them holds the token. */
static void headers_free(struct curl_slist *h)
{
	for (struct curl_slist *p = h; p; p = p->next)
		OPENSSL_cleanse(p->data, strlen(p->data));
	curl_slist_free_all(h);
}

/* Append "name: value". RET 0 or -1 (h is freed then). */
static int header_add(struct curl_slist **h, const char *name, const char *prefix,
                      const char *value)
{
	size_t len = strlen(name) + strlen(prefix) + strlen(value) + 3;
	char *line = malloc(len);
	struct curl_slist *n = NULL;
	if (line) {
		snprintf(line, len, "%s: %s%s", name, prefix, value);
		n = curl_slist_append(*h, line);
		OPENSSL_cleanse(line, len);
		free(line);
	}
	if (!n) {
		headers_free(*h);
		*h = NULL;
		return -1;
	}
	*h = n;
	return 0;
}

static struct curl_slist *headers_build(const httpc_request *r)
{
	struct curl_slist *h = NULL;
	bool upload = r->upload_from != NULL;
	const char *type = r->content_type ? r->content_type : "application/json";
	if (header_add(&h, "Accept", "", "application/json") < 0 ||
	    header_add(&h, "Content-Type", "", type) < 0 ||
	    (r->bearer && header_add(&h, "Authorization", "Bearer ", r->bearer) < 0) ||
	    (r->idempotency_key && header_add(&h, "Idempotency-Key", "", r->idempotency_key) < 0) ||
	    (upload && r->upload_size < 0 &&
	     header_add(&h, "Transfer-Encoding", "", "chunked") < 0))
		return NULL;
	/*
	 * A JSON body is small: no 100-continue round trip. An upload waits for
	 * the server's go-ahead, so a refusal costs none of its bytes.
	 */
	struct curl_slist *n = curl_slist_append(h, upload ? "Expect: 100-continue" : "Expect:");
	if (!n)
		headers_free(h);
	return n;
}

/* Set the body options: JSON from memory, a stream from upload_from, or none. */
static void body_set(CURL *c, const httpc_request *r, sending *out)
{
	if (r->upload_from) {
		curl_easy_setopt(c, CURLOPT_POST, 1L);
		curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(c, CURLOPT_READDATA, out);
		/* -1 (unknown) leaves the size out: the chunked header above takes over */
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE,
		                 (curl_off_t)(r->upload_size >= 0 ? r->upload_size : -1));
	} else if (r->body) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, r->body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
	} else if (strcmp(r->method, "POST") == 0) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
	}
}

/* Say why the exchange failed, into a->error. */
static void error_set(httpc_answer *a, const sending *out, CURLcode res, const char *errbuf)
{
	if (out->failed) {
		a->read_failed = true;
		snprintf(a->error, sizeof(a->error), "could not read the body: %s",
		         out->read_errno
		             ? strerror(out->read_errno)
		             : "it ended before its size (it changed while being sent)");
	} else {
		snprintf(a->error, sizeof(a->error), "%s",
		         a->too_big ? "the answer is too large"
		         : *errbuf  ? errbuf
		                    : curl_easy_strerror(res));
	}
}

int httpc_send(void *curl, const httpc_request *r, httpc_answer *a)
{
	memset(a, 0, sizeof(*a));
	CURL *c = curl ? curl : curl_easy_init();
	struct curl_slist *h = c ? headers_build(r) : NULL;
	if (!h) {
		snprintf(a->error, sizeof(a->error), "out of memory");
		if (c && c != curl)
			curl_easy_cleanup(c);
		return -1;
	}
	char errbuf[CURL_ERROR_SIZE] = "";
	receiving in = {.a = a, .r = r, .curl = c};
	sending out = {.r = r};
	curl_easy_reset(c);
	curl_easy_setopt(c, CURLOPT_URL, r->url);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
	if (r->ca_file && r->ca_file[0])
		curl_easy_setopt(c, CURLOPT_CAINFO, r->ca_file);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, r->connect_timeout_s);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, r->timeout_s);
	if (r->low_speed_time_s > 0) {
		curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, r->low_speed_bps);
		curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, r->low_speed_time_s);
	}
	curl_easy_setopt(c, CURLOPT_USERAGENT, r->agent);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &in);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	body_set(c, r, &out);
	if (strcmp(r->method, "GET") != 0 && strcmp(r->method, "POST") != 0)
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, r->method);
	CURLcode res = curl_easy_perform(c);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
	int rc = 0;
	if (res != CURLE_OK) {
		error_set(a, &out, res, errbuf);
		rc = -1;
	} else {
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &a->status);
	}
	headers_free(h);
	if (c != curl)
		curl_easy_cleanup(c);
	return rc;
}

void httpc_answer_release(httpc_answer *a)
{
	if (a->body) {
		OPENSSL_cleanse(a->body, a->len);
		free(a->body);
	}
	a->body = NULL;
	a->len = 0;
}

bool httpc_header_value_ok(const char *s)
{
	size_t n = 0;
	for (; s[n]; n++)
		if ((unsigned char)s[n] < 0x20 || (unsigned char)s[n] > 0x7e)
			return false;
	return n > 0 && n <= 1024;
}
