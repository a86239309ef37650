/*
 * initfrom.h - the checkpoint an attempt's job starts from
 * (training.init_from; docs/datasets.md, "Sharing checkpoints").
 *
 * The attempt asks the API for the source job's data key (POST
 * .../init/key: a recorded read, refused unless the checkpoint is its own
 * tenant's or granted to it and the grant is in force) and copies the
 * checkpoint's files, still sealed for the source job, through the API
 * (GET .../init/files/<name>) into
 *   <the tenant's data directory>/attempts/<attempt>/init/step_NNNNNNNN/
 * (0700 directories, 0600 files). The trainer reads them there with the
 * source's key (--init-ckpt, --init-encrypt, TRAINYARD_INIT_KEY), which
 * checks every seal. Nothing of another tenant's storage is read from
 * disk by the attempt. The copy is removed when the attempt ends.
 */
#ifndef TY_WORKER_INITFROM_H
#define TY_WORKER_INITFROM_H

#include <jansson.h>

#include "client.h"
#include "datasets.h"

#define INIT_KEY_ENV "TRAINYARD_INIT_KEY"

typedef struct init_fetched {
	char attempt_dir[4200];
	char dir[4300];       /* the store for --init-ckpt; "" when the job starts afresh */
	char step_dir[4400];  /* its one step directory */
	char encrypt_for[80]; /* "TENANT_ID:JOB_ID" of the source, for --init-encrypt */
	char *key_env;        /* "TRAINYARD_INIT_KEY=<ring>", for the launcher only */
} init_fetched;

/*
 * Fetch the checkpoint init names (the attempt's "init_from": {checkpoint_id,
 * step, files}; NULL or null: none) with call (the key) and client (the
 * files). OUT *out (init_remove() it, also on failure).
 * RET 0, or -1 after saying why on stderr.
 */
int init_fetch(const json_t *init, const datasets_where *w, datasets_call_fn call, void *arg,
               rt_client *client, init_fetched *out);

/* Remove the copy and wipe the key. */
void init_remove(init_fetched *f);

#endif
