/*
 * tls.h - what the API listens with: HTTPS with the certificate and key
 * of TRAINYARD_TLS_CERT_FILE and TRAINYARD_TLS_KEY_FILE, read once at
 * start, or plain HTTP only where TRAINYARD_PLAIN_HTTP allows it and the
 * listening address is a loopback one (127.0.0.0/8): a bearer token, a
 * data key or an attempt credential never crosses a network in clear.
 */
#ifndef TY_API_TLS_H
#define TY_API_TLS_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>

#include "config.h"

/* TLS 1.2 and 1.3 only (GnuTLS priority string, libmicrohttpd's backend). */
#define API_TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"

typedef struct api_tls {
	bool on;    /* HTTPS; false: plain HTTP on loopback, as allowed */
	char *cert; /* PEM text, NUL-terminated; NULL when off */
	char *key;  /* PEM text, wiped at release */
} api_tls;

/*
 * Decide and load for cfg, listening on sa. A certificate without its key
 * (or the reverse), a key file anyone but the service user could read or
 * swap, an unreadable or empty file, and plain HTTP that is not allowed or
 * not on loopback are refused. OUT *t (api_tls_release() it).
 * RET 0, or -1 with the reason in err.
 */
int api_tls_load(const ty_config *cfg, const struct sockaddr_in *sa, api_tls *t, char *err,
                 size_t errlen);

void api_tls_release(api_tls *t);

#endif
