/*
 * launch.h - one launch of the trainer's ranks: its command line, and the
 * launcher process (mpirun, or srun under Slurm) with its output in pipes.
 *
 * The command line is an argv array, never a shell string: the spec path,
 * the checkpoint directory and the --set overrides reach the trainer as
 * they are, whatever they hold.
 */
#ifndef TY_WORKER_LAUNCH_H
#define TY_WORKER_LAUNCH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "jobspec.h"

/* Room for a layout's text form (layout_format()). */
#define LAUNCH_LAYOUT_TEXT 160

/* What to launch. Every pointer is borrowed. */
typedef struct launch_plan {
	const char *train_bin;  /* the trainyard-train program */
	const char *spec_path;  /* the job spec file */
	const char *ckpt_dir;   /* the job's checkpoint directory */
	const char *data_root;  /* trainyard-train --data-root; NULL: none (its default) */
	char *const *overrides; /* the caller's "section.field=value", applied first */
	int n_overrides;
	layout layout;            /* the rung to run */
	size_t rank_memory_limit; /* bytes of address space per rank; 0: none */
	bool slurm;               /* srun (inside a Slurm allocation), else mpirun */
	bool cuda;                /* trainyard-train --device cuda (launch_device_cuda) */
	const char *encrypt_for;  /* "TENANT_ID:JOB_ID": trainyard-train --encrypt; NULL: none */
	const char *init_ckpt;    /* trainyard-train --init-ckpt; NULL: none */
	const char *init_encrypt_for; /* "TENANT_ID:JOB_ID": --init-encrypt; NULL: none */
	/* names of variables mpirun passes to the ranks (-x); NULL-terminated, may be NULL */
	const char *const *export_env;
	/*
	 * A command job's program instead of the trainer (NULL: the trainer):
	 * each rank is worker_bin's `task` (task.h), with the argv after "--".
	 */
	const jobspec_command *command;
	const char *worker_bin;
	int ranks_per_node; /* srun --ntasks-per-node for a command job */
} launch_plan;

/*
 * The launcher's argv, NULL-terminated:
 *   mpirun --allow-run-as-root --oversubscribe --bind-to none -np N
 *          -x OMP_NUM_THREADS -x OPENBLAS_NUM_THREADS [-x EXPORT ...] TRAIN train ...
 *   srun --mpi=pmix --kill-on-bad-exit=1 -n N TRAIN train ...
 * with, for the trainer: --spec, --ckpt-dir, --data-root when set,
 * --metrics - (rank 0 writes the metrics to its stdout), --encrypt,
 * --init-ckpt (with --init-encrypt), --memory-limit and --device cuda when set, the
 * caller's --set overrides, then --layout
 * with the rung (layout_format(): the trainer runs that one layout of the
 * job's spec, which it reads as it is; the ladder is the driver's).
 * A command job's launch labels each line with its rank instead:
 *   srun --kill-on-bad-exit=1 --label --mpi=none -n N --ntasks-per-node R
 *        WORKER task [--memory-limit B] -- ARGV...
 *   mpirun ... -np N --tag-output -x ... WORKER task [--memory-limit B] -- ARGV...
 * RET: the argv (launch_argv_free() it), or NULL when out of memory.
 */
char **launch_argv(const launch_plan *p);

/* Where the NVIDIA driver's control device shows that real GPUs are present. */
#define LAUNCH_CUDA_PROBE "/dev/nvidiactl"

/*
 * Whether the job trains on GPUs: it asks for some (resources.gpus_per_node
 * > 0) and the node has an NVIDIA driver (probe, LAUNCH_CUDA_PROBE by
 * default, exists) or names a GPU backend (GPU_BACKEND_ENV, lib/job/layout.h).
 * A job that asks for GPUs on a node with neither, such as the local
 * cluster's fake gres/gpu, trains on CPU ranks.
 */
bool launch_device_cuda(const jobspec *spec, const char *probe);
/*
 * The same argv as logs show it: the trainer by its program name, the spec
 * as LAUNCH_SHOWN_SPEC, the checkpoint directory as LAUNCH_SHOWN_CKPT,
 * the tenant's data root as LAUNCH_SHOWN_DATA_ROOT and the checkpoint
 * started from as LAUNCH_SHOWN_INIT.
 * No path of the machine is in it: a job's log names what the launch
 * reads and writes, not where the server keeps it. RET: as launch_argv.
 */
char **launch_argv_shown(const launch_plan *p);
void launch_argv_free(char **argv);

#define LAUNCH_SHOWN_SPEC      "<the job's spec>"
#define LAUNCH_SHOWN_CKPT      "<the job's checkpoint store>"
#define LAUNCH_SHOWN_DATA_ROOT "<the tenant's data root>"
#define LAUNCH_SHOWN_INIT      "<the checkpoint started from>"

/* A started launcher. */
typedef struct launch {
	pid_t pid;  /* the launcher, leader of its own process group; 0 once reaped */
	pid_t pgid; /* that group: the launcher and whatever it started */
	int out_fd; /* its stdout and stderr, non-blocking; -1 once closed */
	int err_fd;
} launch;

/*
 * Start argv[0] (searched in PATH) in a new process group, stdin from
 * /dev/null, stdout and stderr into pipes, with the environment envp (NULL:
 * this process's own). The launcher gets SIGTERM if the driver dies.
 * RET 0; -1 with a message in err when it could not be started (an exec
 * failure included).
 */
int launch_start(launch *l, char *const *argv, char *const *envp, char *err, size_t errlen);

/*
 * Send sig to the launcher, or to its whole process group. RET 0, or -1:
 * kill() failed (errno says why), or no launcher was started (errno as it was).
 */
int launch_signal(const launch *l, int sig, bool group);

/*
 * Whether the launcher ended. OUT *status: its exit status, 128 + N when
 * signal N ended it. RET 1 ended (and reaped), 0 still running.
 */
int launch_reap(launch *l, int *status);

/*
 * After the launcher ended: SIGKILL to whatever is left in its process
 * group, so nothing of this launch holds a slot when the next one starts.
 */
void launch_kill_leftovers(launch *l);

/* Close what is still open of the pipes. */
void launch_close(launch *l);

/*
 * OMP_NUM_THREADS and OPENBLAS_NUM_THREADS for ranks_here ranks on each
 * host, when the environment does not set them: cpus_here (the CPUs the
 * job holds on a node; <= 0: this host's online CPUs) shared out, at
 * least 1. Libraries that size their thread pools by the CPUs they see
 * would otherwise run several threads a rank on CPUs the ranks share.
 */
void launch_default_threads(int ranks_here, long cpus_here);

#endif
