/*
 * tool_hook.c - a webhook receiver for tests/integration/alerts.sh: listens
 * on 127.0.0.1:PORT, writes each POST's body to DIR/N.body and its
 * X-Trainyard-* headers to DIR/N.headers (N from 1), and answers 500 to the
 * first FAILS of them, 204 to the rest, each after DELAY_MS milliseconds
 * (default 0: a slow receiver, for tests/integration/webhooks.sh). Runs
 * until killed.
 *
 *   tool_hook PORT DIR FAILS [DELAY_MS]
 */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct hook {
	const char *dir;
	int fails, seen;
	long delay_ms;
} hook;

typedef struct body {
	char *buf;
	size_t len;
} body;

static void save(const hook *h, int n, const char *ext, const char *data, size_t len)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%d.%s.tmp", h->dir, n, ext);
	FILE *f = fopen(path, "w");
	if (!f)
		return;
	fwrite(data, 1, len, f);
	fclose(f);
	char final[4096];
	snprintf(final, sizeof(final), "%s/%d.%s", h->dir, n, ext);
	rename(path, final);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *data,
                                  size_t *size, void **state)
{
	hook *h = cls;
	(void)url;
	(void)version;
	if (!*state) {
		*state = calloc(1, sizeof(body));
		return *state ? MHD_YES : MHD_NO;
	}
	body *b = *state;
	if (*size) {
		char *nb = realloc(b->buf, b->len + *size);
		if (!nb)
			return MHD_NO;
		memcpy(nb + b->len, data, *size);
		b->buf = nb;
		b->len += *size;
		*size = 0;
		return MHD_YES;
	}
	unsigned status = MHD_HTTP_METHOD_NOT_ALLOWED;
	if (strcmp(method, "POST") == 0) {
		int n = ++h->seen;
		char headers[1024];
		const char *sig =
		    MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Trainyard-Signature");
		const char *ev =
		    MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Trainyard-Event");
		const char *del =
		    MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Trainyard-Delivery");
		int hl = snprintf(headers, sizeof(headers), "signature %s\nevent %s\ndelivery %s\n",
		                  sig ? sig : "", ev ? ev : "", del ? del : "");
		save(h, n, "headers", headers, (size_t)hl);
		save(h, n, "body", b->buf ? b->buf : "", b->len);
		status = n <= h->fails ? MHD_HTTP_INTERNAL_SERVER_ERROR : MHD_HTTP_NO_CONTENT;
		if (h->delay_ms > 0)
			nanosleep(
			    &(struct timespec){h->delay_ms / 1000, h->delay_ms % 1000 * 1000000L},
			    NULL);
	}
	free(b->buf);
	free(b);
	*state = NULL;
	struct MHD_Response *r = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
	enum MHD_Result rc = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: tool_hook PORT DIR FAILS [DELAY_MS]\n");
		return 2;
	}
	hook h = {
	    .dir = argv[2], .fails = atoi(argv[3]), .delay_ms = argc == 5 ? atol(argv[4]) : 0};
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1]))};
	sa.sin_addr.s_addr = htonl(0x7f000001u);
	struct MHD_Daemon *d =
	    MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, on_request, &h,
	                     MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa, MHD_OPTION_END);
	if (!d) {
		fprintf(stderr, "tool_hook: could not listen on 127.0.0.1:%s\n", argv[1]);
		return 1;
	}
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	int sig;
	sigwait(&set, &sig);
	MHD_stop_daemon(d);
	return 0;
}
