/*
 * webhook_send.h - the API's threads that deliver alerts to the tenants'
 * webhooks, signed, retried with back-off, each attempt recorded in
 * webhook_deliveries, a share of the threads for each tenant at most
 * (webhook_send.c says how).
 */
#ifndef TY_WEBHOOK_SEND_H
#define TY_WEBHOOK_SEND_H

#include "config.h"
#include "crypt.h"

typedef struct webhook_sender webhook_sender;

/* Start delivering; master unseals the secrets (borrowed). RET NULL when out of resources. */
webhook_sender *webhook_sender_start(const ty_config *cfg, const crypt_key *master);
/* Stop after the deliveries under way; NULL is fine. */
void webhook_sender_stop(webhook_sender *s);

#endif
