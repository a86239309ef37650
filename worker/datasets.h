/*
 * datasets.h - the registered datasets an attempt's job was pinned to,
 * unsealed for the trainer (docs/datasets.md).
 *
 * For each version the attempt asks the API for its key (POST
 * .../datasets/<version>/key, a recorded read), unseals the version's
 * shards from the storage root into
 *   <the tenant's data directory>/attempts/<attempt>/<role>/shard_NNNNNN.bin
 * (0700 directories, 0600 files; dataset.h checks the shards' seals and
 * their SHA-256) and points the spec's data.train or data.val there. The
 * directory is removed when the attempt ends (datasets_remove).
 */
#ifndef TY_WORKER_DATASETS_H
#define TY_WORKER_DATASETS_H

#include <jansson.h>
#include <stddef.h>

#include "client.h"

/* One set-up call to the attempt's route what, retried while the API is unreachable. */
typedef int (*datasets_call_fn)(void *arg, const char *what, rt_answer *a);

typedef struct datasets_where {
	const char *storage_root;
	const char *data_root; /* TRAINYARD_DATA_ROOT */
	const char *tenant_id; /* the attempt's job's tenant */
	const char *attempt_id;
} datasets_where;

/*
 * Unseal every version of list (the attempt's "datasets": [{role,
 * version_id}]) and rewrite spec's data section to read them (a trainer
 * job's; a command job's program finds them under dir: train/, val/).
 * OUT dir: the attempt's data directory, for datasets_remove ("" when list is empty).
 * RET 0, or -1 after saying why on stderr.
 */
int datasets_fetch(const json_t *list, const datasets_where *w, json_t *spec, datasets_call_fn call,
                   void *arg, char *dir, size_t dirlen);

/* Remove the directory datasets_fetch made and what is in it. dir "" is fine. */
void datasets_remove(const char *dir);

#endif
