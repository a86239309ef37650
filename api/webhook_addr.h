/*
 * webhook_addr.h - where a webhook may be sent: its URL's parts, and the
 * rule against requests to internal addresses (SSRF).
 *
 * A webhook's URL is http or https, with a host and no user name or
 * password, at most WEBHOOK_URL_MAX bytes (parsed by libcurl's URL API).
 * Its host must resolve, and every address it resolves to must be a
 * public one: not loopback (127/8, ::1), link-local (169.254/16,
 * fe80::/10), private (10/8, 172.16/12, 192.168/16, fc00::/7), shared
 * (100.64/10), "this network" (0/8, ::), multicast, broadcast or
 * reserved (240/4), nor an IPv4 address mapped into IPv6 that is one of
 * those; unless a platform admin allowed the webhook internal addresses.
 * The check runs when the webhook is created and again at each delivery,
 * which then connects to the very address it checked (no second lookup a
 * DNS answer could change in between).
 */
#ifndef TY_WEBHOOK_ADDR_H
#define TY_WEBHOOK_ADDR_H

#include <stdbool.h>
#include <stddef.h>

#define WEBHOOK_URL_MAX 2048

typedef struct webhook_target {
	char host[256];   /* as in the URL (brackets of an IPv6 literal removed) */
	int port;         /* the URL's, or the scheme's default */
	char address[64]; /* the numeric address checked, to connect to */
} webhook_target;

/* RET true when url is a webhook URL by the rules above (no lookup). */
bool webhook_url_ok(const char *url);

/*
 * Resolve url's host and check its addresses. OUT *t: the first address
 * (when RET is 0). RET 0; -1 when the URL is not one (webhook_url_ok);
 * -2 when the host does not resolve; -3 when an address is internal and
 * allow_internal is false. why (may be NULL) says which address.
 */
int webhook_target_check(const char *url, bool allow_internal, webhook_target *t, char *why,
                         size_t whylen);

/* RET true when the numeric address (IPv4 or IPv6 text) is internal by the rule above. */
bool webhook_address_internal(const char *address);

#endif
