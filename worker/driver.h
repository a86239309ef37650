/*
 * driver.h - the worker runtime's driver: runs one job's training inside
 * its allocation, from the first launch to the outcome.
 *
 * It starts the trainer's ranks as one launch (launch.h) in the job's
 * layout, relays the launch's output into the sink (relay.h), and when the
 * launch ends classifies the end (classify.h). A failure the trainer can
 * survive in a smaller layout (out of memory, a communication failure, a
 * rank lost) starts a new launch on the next rung of the fallback ladder
 * (ladder.h) that fits the slots still healthy, resuming from the same
 * checkpoint directory, at most fault_tolerance.max_restarts times. Any
 * other end finishes the run.
 *
 * A command job runs the team's program instead (program.h): one task per
 * rank (task.h), reports on the launcher's stdout, checkpoints sealed by
 * the driver and the newest unsealed before each launch. A rank ended by
 * a signal there restarts the same layout when every node of the
 * allocation still answers (a lost node ends the attempt, and the
 * scheduler retries on fewer nodes); no report from any rank within the
 * job's heartbeat_timeout_s kills the launch and ends the run as a hang.
 *
 * SIGTERM or SIGINT asks the launch to stop: the driver sends SIGUSR1 to
 * the launcher, which passes it to every rank (mpirun and srun both
 * forward it); the trainer writes a checkpoint and exits with status 16.
 * A second signal, or a launch still running stop_grace_s later, gets
 * SIGTERM; RUNTIME_KILL_GRACE_S after that the launch's process group
 * gets SIGKILL.
 */
#ifndef TY_WORKER_DRIVER_H
#define TY_WORKER_DRIVER_H

#include <stddef.h>

#include "sink.h"

#define RUNTIME_STOP_GRACE_S 120
#define RUNTIME_KILL_GRACE_S 10

typedef struct runtime_options {
	const char *spec_path; /* the job spec file; the trainer reads it too */
	const char *ckpt_dir;  /* the job's checkpoints */
	const char *data_root; /* where the job's data paths resolve; NULL: the trainer's default */
	char *const *overrides; /* "section.field=value", applied before validation */
	int n_overrides;
	int slots;                /* ranks the allocation holds; 0: the spec's ranks */
	size_t rank_memory_limit; /* bytes of address space per rank; 0: none */
	const char *train_bin;    /* the trainyard-train program */
	int stop_grace_s;         /* 0: RUNTIME_STOP_GRACE_S */
	/* "TENANT_ID:JOB_ID": the trainer seals its checkpoints (--encrypt); NULL: not */
	const char *encrypt_for;
	/* a checkpoint store to take the initial weights from (--init-ckpt); NULL: none */
	const char *init_ckpt;
	/* "TENANT_ID:JOB_ID" that init_ckpt is sealed for (--init-encrypt); NULL: plain */
	const char *init_encrypt_for;
	/* "NAME=VALUE" strings added to the launcher's environment only; may be NULL */
	char *const *launch_env;
	/* names of variables mpirun passes on to the ranks (-x); may be NULL */
	const char *const *export_env;
	/*
	 * A command job's (the spec's kind; program.h, task.h): the unpacked
	 * bundle, the attempt's private work directory shared by the nodes,
	 * its unsealed datasets (NULL: none), this program (each rank runs
	 * `WORKER task`), the Python module's directory (NULL: none), the
	 * job and attempt (NULL, 0 outside the platform), and the job's data
	 * key to seal its checkpoints with (NULL: plain files).
	 */
	const char *code_dir;
	const char *work_dir;
	const char *program_data_dir;
	const char *worker_bin;
	const char *sdk_python;
	const char *program_path; /* the program's PATH; NULL: PROGRAM_PATH_DEFAULT */
	const char *job_id;
	int attempt_number;
	const struct crypt_object_ctx *seal;
} runtime_options;

/*
 * Run the job to its outcome; every output goes to sink, the last call
 * being finish(). Installs handlers for SIGTERM and SIGINT.
 * RET: trainyard-worker's exit status: 0 succeeded, 16 stopped, else the
 * failure class's exit status (lib/job/failure.def; classify.h).
 */
int runtime_run(const runtime_options *o, runtime_sink *sink);

/*
 * Ask the running driver to stop, as a first SIGTERM does (a sink calls it
 * when the platform cancels the job). Async-signal-safe; more calls add nothing.
 */
void runtime_request_stop(void);

#endif
