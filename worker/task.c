/*
 * task.c - one rank of a command job (task.h).
 */
#include "task.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jobspec_command.h"

static volatile sig_atomic_t child_pid;

static void forward_stop(int sig)
{
	(void)sig;
	if (child_pid > 0)
		kill((pid_t)child_pid, SIGTERM);
}

/* The first variable of names that is set, or NULL. */
static const char *first_env(const char *a, const char *b)
{
	const char *v = getenv(a);
	return v && *v ? v : b ? getenv(b) : NULL;
}

/*
 * The tasks on node node of a step: SLURM_STEP_TASKS_PER_NODE is a list
 * like "2(x3),1" (2 tasks on each of 3 nodes, then 1). RET the count, or 0.
 */
static int slurm_tasks_on_node(const char *list, int node)
{
	while (list && *list) {
		char *end;
		long n = strtol(list, &end, 10), times = 1;
		if (end == list || n < 0)
			return 0;
		if (strncmp(end, "(x", 2) == 0) {
			times = strtol(end + 2, &end, 10);
			if (*end != ')')
				return 0;
			end++;
		}
		if (node < times)
			return (int)n;
		node -= (int)times;
		list = *end == ',' ? end + 1 : end;
	}
	return 0;
}

/* RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, NODE_RANK. RET 0, or -1 when unknown. */
static int set_ranks(void)
{
	const char *rank = first_env("SLURM_PROCID", "OMPI_COMM_WORLD_RANK");
	const char *world = first_env("SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE");
	const char *local = first_env("SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK");
	const char *node = first_env("SLURM_NODEID", "OMPI_COMM_WORLD_NODE_RANK");
	char local_size[16] = "";
	if (getenv("SLURM_PROCID")) {
		int n =
		    slurm_tasks_on_node(getenv("SLURM_STEP_TASKS_PER_NODE"), node ? atoi(node) : 0);
		if (n > 0)
			snprintf(local_size, sizeof(local_size), "%d", n);
	} else if (getenv("OMPI_COMM_WORLD_LOCAL_SIZE")) {
		snprintf(local_size, sizeof(local_size), "%s",
		         getenv("OMPI_COMM_WORLD_LOCAL_SIZE"));
	}
	if (!rank || !world || !local || !local_size[0])
		return -1;
	/* Under srun the driver's port is on the node that launched the step,
	 * which is also the allocation's first node and so rank 0's. */
	if (!getenv("MASTER_ADDR")) {
		const char *launch = getenv("SLURM_LAUNCH_NODE_IPADDR");
		if (setenv("MASTER_ADDR", launch && *launch ? launch : "127.0.0.1", 1) != 0)
			return -1;
	}
	return setenv("RANK", rank, 1) || setenv("WORLD_SIZE", world, 1) ||
	               setenv("LOCAL_RANK", local, 1) ||
	               setenv("LOCAL_WORLD_SIZE", local_size, 1) ||
	               setenv("NODE_RANK", node ? node : "0", 1) ||
	               setenv("GROUP_RANK", node ? node : "0", 1)
	           ? -1
	           : 0;
}

/* The report channel: this task's stdout, kept as another descriptor; stdout then on stderr. */
static int set_report_fd(void)
{
	int fd = fcntl(STDOUT_FILENO, F_DUPFD, 3);
	char text[16];
	snprintf(text, sizeof(text), "%d", fd);
	if (fd < 0 || setenv("TRAINYARD_REPORT_FD", text, 1) != 0 ||
	    dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
		return -1;
	return 0;
}

static void start_failed(const char *what, const char *arg)
{
	fprintf(stderr, TASK_START_FAILED " %s%s%s: %s\n", what, arg ? " " : "", arg ? arg : "",
	        strerror(errno));
}

/* In the child: the program itself. Never returns. */
static void exec_program(char **argv, size_t memory_limit)
{
	/*
	 * The driver's stop request is SIGUSR1 to the launcher, and slurmstepd
	 * passes a step's signal to every process of the task, the program
	 * too: ignored, it does not kill it; the task's SIGTERM stops it.
	 */
	signal(SIGUSR1, SIG_IGN);
	signal(SIGTERM, SIG_DFL);
	if (memory_limit) {
		struct rlimit rl = {(rlim_t)memory_limit, (rlim_t)memory_limit};
		if (setrlimit(RLIMIT_AS, &rl) != 0) {
			start_failed("with the memory limit", NULL);
			_exit(TASK_STATUS_START);
		}
	}
	jobspec_command one = {.argc = 1};
	snprintf(one.args, sizeof(one.args), "%s", argv[0]);
	jobspec_target t;
	char why[160], self[JOBSPEC_TARGET_MAX + 3];
	int bad;
	/* the bundle's own file: ./PATH, never a program of the same name on PATH */
	if (jobspec_command_target(&one, &t, &bad, why, sizeof(why)) == 0 &&
	    t.runs == JOBSPEC_RUNS_FILE) {
		snprintf(self, sizeof(self), "./%s", t.path);
		execv(self, argv);
	} else {
		execvp(argv[0], argv);
	}
	start_failed("program", argv[0]);
	_exit(TASK_STATUS_START);
}

int task_main(int argc, char **argv)
{
	size_t memory_limit = 0;
	int i = 0;
	for (; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "--memory-limit") == 0 && i + 1 < argc)
			memory_limit = strtoull(argv[++i], NULL, 10);
	if (i + 1 >= argc) {
		fprintf(stderr, "usage: trainyard-worker task [--memory-limit BYTES] -- ARGV...\n");
		return 2;
	}
	char **prog = argv + i + 1;
	umask(077);
	const char *dir = getenv("TRAINYARD_CODE_DIR");
	if (set_ranks() < 0) {
		errno = EINVAL;
		start_failed("without its rank (no SLURM_PROCID nor OMPI_COMM_WORLD_RANK)", NULL);
		return TASK_STATUS_START;
	}
	if (!dir || chdir(dir) != 0) {
		start_failed("in the code directory", dir);
		return TASK_STATUS_START;
	}
	if (set_report_fd() < 0) {
		start_failed("with its report channel", NULL);
		return TASK_STATUS_START;
	}
	struct sigaction sa = {.sa_handler = forward_stop};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	pid_t pid = fork();
	if (pid < 0) {
		start_failed("a process", NULL);
		return TASK_STATUS_START;
	}
	if (pid == 0)
		exec_program(prog, memory_limit);
	child_pid = pid;
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return TASK_STATUS_START;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	/* end as the program did, so the launcher reports the rank's signal */
	int sig = WTERMSIG(status);
	signal(sig, SIG_DFL);
	struct rlimit none = {0, 0};
	setrlimit(RLIMIT_CORE, &none);
	raise(sig);
	return 128 + sig;
}
