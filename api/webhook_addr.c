/*
 * webhook_addr.c - webhook URLs and the internal-address rule (webhook_addr.h).
 */
#include "webhook_addr.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The URL's parts. RET 0, or -1 when it is no webhook URL. */
static int url_parts(const char *url, char *host, size_t hostlen, int *port)
{
	if (!url || strlen(url) > WEBHOOK_URL_MAX)
		return -1;
	CURLU *u = curl_url();
	char *scheme = NULL, *h = NULL, *p = NULL, *user = NULL, *pass = NULL;
	int rc = -1;
	if (u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_HOST, &h, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_PORT, &p, CURLU_DEFAULT_PORT) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_USER, &user, 0) == CURLUE_NO_USER &&
	    curl_url_get(u, CURLUPART_PASSWORD, &pass, 0) == CURLUE_NO_PASSWORD &&
	    (strcasecmp(scheme, "http") == 0 || strcasecmp(scheme, "https") == 0) && *h) {
		size_t n = strlen(h);
		if (h[0] == '[' && n > 2 && h[n - 1] == ']') { /* an IPv6 literal */
			h[n - 1] = '\0';
			memmove(h, h + 1, n - 1);
		}
		if (strlen(h) < hostlen) {
			snprintf(host, hostlen, "%s", h);
			*port = atoi(p);
			rc = *port > 0 && *port < 65536 ? 0 : -1;
		}
	}
	curl_free(scheme);
	curl_free(h);
	curl_free(p);
	curl_free(user);
	curl_free(pass);
	curl_url_cleanup(u);
	return rc;
}

bool webhook_url_ok(const char *url)
{
	char host[256];
	int port;
	return url_parts(url, host, sizeof(host), &port) == 0;
}

static bool v4_internal(uint32_t a)
{
	const struct {
		uint32_t net, mask;
	} nets[] = {
	    {0x00000000u, 0xff000000u}, /* 0/8 */
	    {0x0a000000u, 0xff000000u}, /* 10/8 */
	    {0x64400000u, 0xffc00000u}, /* 100.64/10 */
	    {0x7f000000u, 0xff000000u}, /* 127/8 */
	    {0xa9fe0000u, 0xffff0000u}, /* 169.254/16 */
	    {0xac100000u, 0xfff00000u}, /* 172.16/12 */
	    {0xc0000000u, 0xffffff00u}, /* 192.0.0/24 */
	    {0xc0a80000u, 0xffff0000u}, /* 192.168/16 */
	    {0xc6120000u, 0xfffe0000u}, /* 198.18/15 */
	    {0xe0000000u, 0xf0000000u}, /* 224/4 multicast */
	    {0xf0000000u, 0xf0000000u}, /* 240/4 reserved, broadcast */
	};
	for (size_t i = 0; i < sizeof(nets) / sizeof(nets[0]); i++)
		if ((a & nets[i].mask) == nets[i].net)
			return true;
	return false;
}

static bool v6_internal(const unsigned char b[16])
{
	static const unsigned char zero[16] = {0};
	static const unsigned char v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	if (memcmp(b, zero, 15) == 0 && (b[15] == 0 || b[15] == 1))
		return true;                                          /* :: and ::1 */
	if (memcmp(b, v4mapped, 12) == 0 || memcmp(b, zero, 12) == 0) /* mapped or compatible */
		return v4_internal((uint32_t)b[12] << 24 | (uint32_t)b[13] << 16 |
		                   (uint32_t)b[14] << 8 | b[15]);
	if ((b[0] & 0xfe) == 0xfc) /* fc00::/7 unique local */
		return true;
	if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) /* fe80::/10 link-local */
		return true;
	if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0) /* fec0::/10 site-local */
		return true;
	if (b[0] == 0xff) /* multicast */
		return true;
	if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8)
		return true; /* 2001:db8::/32 documentation */
	if (b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b)
		return true; /* 64:ff9b::/96 NAT64, which reaches IPv4 addresses */
	return false;
}

bool webhook_address_internal(const char *address)
{
	struct in_addr a4;
	struct in6_addr a6;
	if (inet_pton(AF_INET, address, &a4) == 1)
		return v4_internal(ntohl(a4.s_addr));
	if (inet_pton(AF_INET6, address, &a6) == 1)
		return v6_internal(a6.s6_addr);
	return true; /* not an address: never connect to it */
}

int webhook_target_check(const char *url, bool allow_internal, webhook_target *t, char *why,
                         size_t whylen)
{
	memset(t, 0, sizeof(*t));
	if (url_parts(url, t->host, sizeof(t->host), &t->port) < 0) {
		if (why)
			snprintf(why, whylen, "not an http or https URL with a host");
		return -1;
	}
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
	if (getaddrinfo(t->host, NULL, &hints, &res) != 0 || !res) {
		if (why)
			snprintf(why, whylen, "the host %s does not resolve", t->host);
		return -2;
	}
	int rc = 0;
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		char text[64];
		const void *a =
		    ai->ai_family == AF_INET
		        ? (const void *)&((struct sockaddr_in *)ai->ai_addr)->sin_addr
		        : (const void *)&((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr;
		if (!inet_ntop(ai->ai_family, a, text, sizeof(text)))
			continue;
		if (!allow_internal && webhook_address_internal(text)) {
			if (why)
				snprintf(why, whylen, "%s resolves to %s, an internal address",
				         t->host, text);
			rc = -3;
			break;
		}
		if (!t->address[0])
			snprintf(t->address, sizeof(t->address), "%s", text);
	}
	freeaddrinfo(res);
	if (rc == 0 && !t->address[0]) {
		if (why)
			snprintf(why, whylen, "the host %s has no usable address", t->host);
		rc = -2;
	}
	return rc;
}
