/*
 * report_slots.h - the cap on the reports and audit exports streamed at
 * once (h_reports.c, h_audit.c), in memory, thread-safe.
 *
 * Each such answer reads from a database connection of its own for as long
 * as it streams. It holds one slot of the server's
 * (TRAINYARD_REPORT_STREAMS) and one of its tenant's
 * (TRAINYARD_REPORT_STREAMS_PER_TENANT) from report_slot_take() until its
 * stream is freed, so the connections they open are bounded, and one
 * tenant that fills its own share leaves the rest to the others. The
 * platform's reports and exports share one key, REPORT_SLOTS_PLATFORM.
 */
#ifndef TY_REPORT_SLOTS_H
#define TY_REPORT_SLOTS_H

#include "api.h"

#define REPORT_SLOTS_PLATFORM "platform"
#define REPORT_SLOTS_KEY_MAX  40
/* Seconds a refused caller is told to wait (Retry-After). */
#define REPORT_SLOTS_RETRY_S "5"

typedef struct report_slots report_slots;

/* One slot held: by whom it is held; key "" when none is. */
typedef struct report_slot {
	report_slots *from;
	char key[REPORT_SLOTS_KEY_MAX];
} report_slot;

/* RET: the slots (free with report_slots_free), or NULL when out of memory. */
report_slots *report_slots_new(int total, int per_tenant);
void report_slots_free(report_slots *s);

/*
 * Hold 1/n of both caps from now on (n API processes share the platform's
 * caps, peers.h): a cap of c allows peers_cap(c, n) here. Streams under
 * way keep their slots.
 */
void report_slots_share(report_slots *s, int n);

/*
 * Take a slot of rq's server for key (a tenant's id, or
 * REPORT_SLOTS_PLATFORM) into *slot.
 * RET 0; or -1 with 429 rate_limited and Retry-After answered, the detail
 * naming the full share (the tenant's before the server's), nothing taken.
 */
int report_slot_take(api_req *rq, const char *key, report_slot *slot);

/* Give back the slot in *slot, if one is held; again is harmless. */
void report_slot_give(report_slot *slot);

#endif
