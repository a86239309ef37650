/*
 * task.h - one rank of a command job (`trainyard-worker task`): what the
 * launcher (srun, or mpirun without Slurm) starts once per rank, and what
 * then starts the team's program (docs/own-code.md, sdk/README.md).
 *
 *   trainyard-worker task [--memory-limit BYTES] -- ARGV...
 *
 * It sets the variables frameworks read from the launcher's own: RANK,
 * WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE and NODE_RANK (from SLURM_PROCID,
 * SLURM_NTASKS, SLURM_LOCALID, SLURM_STEP_TASKS_PER_NODE, SLURM_NODEID; or
 * Open MPI's OMPI_COMM_WORLD_*); MASTER_ADDR, MASTER_PORT and TRAINYARD_*
 * come from the driver through the launcher's environment. It enters
 * TRAINYARD_CODE_DIR (the unpacked bundle) and gives the program:
 *
 *   - the report channel: the task's own stdout, as file descriptor
 *     TRAINYARD_REPORT_FD, so reports reach the driver on the launcher's
 *     stdout, each rank's tagged by the launcher;
 *   - stdout and stderr both on the task's stderr: everything the program
 *     prints goes to the job's log, never among the reports;
 *   - an address-space limit (--memory-limit, RLIMIT_AS) and umask 077.
 *
 * A command of the bundle's own file runs as ./PATH from the bundle,
 * never one found on PATH; an interpreter is found on PATH.
 *
 * The task stays as the program's parent: SIGUSR1 or SIGTERM to it (the
 * driver's stop, forwarded by the launcher) becomes SIGTERM to the
 * program, and it ends as the program did: the same exit status, or the
 * same signal raised on itself, so the launcher reports the rank as the
 * program ended. The program starts with SIGUSR1 ignored: slurmstepd
 * passes a step's signal to every process of a task, not only the task.
 * A program that cannot be started is exit 127, with a line that starts
 * TASK_START_FAILED on stderr.
 */
#ifndef TY_WORKER_TASK_H
#define TY_WORKER_TASK_H

#define TASK_START_FAILED "trainyard-worker task: could not start"
#define TASK_STATUS_START 127

/* RET: the exit status of the task (argv as after "task"). */
int task_main(int argc, char **argv);

#endif
