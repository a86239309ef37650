/*
 * launch.c - the launcher's command line and process (launch.h).
 */
#include "launch.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- the command line --------------------------------------------- */

/* A growing argv; a failed add marks it broken and the build gives NULL. */
typedef struct argv_builder {
	char **v;
	size_t n, cap;
	bool broken;
} argv_builder;

static void add(argv_builder *b, const char *s)
{
	if (b->broken)
		return;
	if (b->n + 2 > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 64;
		char **v = realloc(b->v, cap * sizeof(*v));
		if (!v) {
			b->broken = true;
			return;
		}
		b->v = v;
		b->cap = cap;
	}
	if (!(b->v[b->n] = strdup(s))) {
		b->broken = true;
		return;
	}
	b->v[++b->n] = NULL;
}

static void addf(argv_builder *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void addf(argv_builder *b, const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	add(b, buf);
}

/* The ranks of a command job: the task of each, then the program's argv. */
static void command_argv(argv_builder *b, const launch_plan *p)
{
	add(b, p->worker_bin);
	add(b, "task");
	if (p->rank_memory_limit) {
		add(b, "--memory-limit");
		addf(b, "%zu", p->rank_memory_limit);
	}
	add(b, "--");
	for (int i = 0; i < p->command->argc; i++)
		add(b, jobspec_command_arg(p->command, i));
}

char **launch_argv(const launch_plan *p)
{
	argv_builder b = {0};
	const layout *l = &p->layout;
	int ranks = (int)layout_ranks(l);
	if (p->slurm && p->command) {
		add(&b, "srun");
		add(&b, "--kill-on-bad-exit=1");
		add(&b, "--label");
		add(&b, "--mpi=none");
		add(&b, "--ntasks-per-node");
		addf(&b, "%d", p->ranks_per_node > 0 ? p->ranks_per_node : 1);
		add(&b, "-n");
	} else if (p->slurm) {
		add(&b, "srun");
		add(&b, "--mpi=pmix");
		add(&b, "--kill-on-bad-exit=1");
		add(&b, "-n");
	} else {
		add(&b, "mpirun");
		add(&b, "--allow-run-as-root");
		add(&b, "--oversubscribe");
		add(&b, "--bind-to");
		add(&b, "none");
		add(&b, "-np");
	}
	addf(&b, "%d", ranks);
	if (!p->slurm && p->command)
		add(&b, "--tag-output");
	if (!p->slurm) {
		add(&b, "-x");
		add(&b, "OMP_NUM_THREADS");
		add(&b, "-x");
		add(&b, "OPENBLAS_NUM_THREADS");
		for (size_t i = 0; p->export_env && p->export_env[i]; i++) {
			add(&b, "-x");
			add(&b, p->export_env[i]);
		}
	}
	if (p->command) {
		command_argv(&b, p);
		goto done;
	}
	add(&b, p->train_bin);
	add(&b, "train");
	add(&b, "--spec");
	add(&b, p->spec_path);
	add(&b, "--ckpt-dir");
	add(&b, p->ckpt_dir);
	if (p->data_root) {
		add(&b, "--data-root");
		add(&b, p->data_root);
	}
	add(&b, "--metrics");
	add(&b, "-");
	if (p->encrypt_for) {
		add(&b, "--encrypt");
		add(&b, p->encrypt_for);
	}
	if (p->init_ckpt) {
		add(&b, "--init-ckpt");
		add(&b, p->init_ckpt);
	}
	if (p->init_ckpt && p->init_encrypt_for) {
		add(&b, "--init-encrypt");
		add(&b, p->init_encrypt_for);
	}
	if (p->rank_memory_limit) {
		add(&b, "--memory-limit");
		addf(&b, "%zu", p->rank_memory_limit);
	}
	if (p->cuda) {
		add(&b, "--device");
		add(&b, "cuda");
	}
	for (int i = 0; i < p->n_overrides; i++) {
		add(&b, "--set");
		add(&b, p->overrides[i]);
	}
	char text[LAUNCH_LAYOUT_TEXT];
	layout_format(l, text, sizeof(text));
	add(&b, "--layout");
	add(&b, text);
done:
	if (b.broken) {
		launch_argv_free(b.v);
		return NULL;
	}
	return b.v;
}

bool launch_device_cuda(const jobspec *spec, const char *probe)
{
	const char *backend = getenv(GPU_BACKEND_ENV);
	return spec->resources.gpus_per_node > 0 &&
	       (access(probe ? probe : LAUNCH_CUDA_PROBE, F_OK) == 0 || (backend && *backend));
}

char **launch_argv_shown(const launch_plan *p)
{
	launch_plan shown = *p;
	const char *slash = p->train_bin ? strrchr(p->train_bin, '/') : NULL;
	shown.train_bin = slash ? slash + 1 : p->train_bin;
	slash = p->worker_bin ? strrchr(p->worker_bin, '/') : NULL;
	shown.worker_bin = slash ? slash + 1 : p->worker_bin;
	shown.spec_path = LAUNCH_SHOWN_SPEC;
	shown.ckpt_dir = LAUNCH_SHOWN_CKPT;
	if (p->data_root)
		shown.data_root = LAUNCH_SHOWN_DATA_ROOT;
	if (p->init_ckpt)
		shown.init_ckpt = LAUNCH_SHOWN_INIT;
	return launch_argv(&shown);
}

void launch_argv_free(char **argv)
{
	for (size_t i = 0; argv && argv[i]; i++)
		free(argv[i]);
	free(argv);
}

/* ---- the process ---------------------------------------------------- */

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* In the child, between fork and exec: only async-signal-safe calls. */
static void child_exec(char *const *argv, char *const *envp, int out_w, int err_w, int report_w)
{
	setpgid(0, 0);
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	struct sigaction dfl;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigaction(SIGPIPE, &dfl, NULL); /* an ignored signal would stay ignored across exec */
	sigaction(SIGINT, &dfl, NULL);
	sigaction(SIGTERM, &dfl, NULL);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	int in = open("/dev/null", O_RDONLY);
	if (in < 0 || dup2(in, 0) < 0 || dup2(out_w, 1) < 0 || dup2(err_w, 2) < 0)
		goto failed;
	if (envp)
		execvpe(argv[0], argv, envp);
	else
		execvp(argv[0], argv);
failed:;
	int e = errno;
	ssize_t w = write(report_w, &e, sizeof(e));
	(void)w;
	_exit(127);
}

int launch_start(launch *l, char *const *argv, char *const *envp, char *err, size_t errlen)
{
	int out[2] = {-1, -1}, errp[2] = {-1, -1}, report[2] = {-1, -1};
	l->pid = l->pgid = 0;
	l->out_fd = l->err_fd = -1;
	if (pipe2(out, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 ||
	    pipe2(report, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "could not create pipes: %s", strerror(errno));
		goto fail;
	}
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(err, errlen, "could not fork: %s", strerror(errno));
		goto fail;
	}
	if (pid == 0)
		child_exec(argv, envp, out[1], errp[1], report[1]);
	setpgid(pid, pid); /* also here, so a signal right after start reaches the group */
	close_fd(&out[1]);
	close_fd(&errp[1]);
	close_fd(&report[1]);
	/* the report pipe closes on exec: EOF means started, an errno means it failed */
	int child_errno = 0;
	ssize_t got;
	do
		got = read(report[0], &child_errno, sizeof(child_errno));
	while (got < 0 && errno == EINTR);
	close_fd(&report[0]);
	if (got > 0) {
		waitpid(pid, NULL, 0);
		snprintf(err, errlen, "could not run \"%s\": %s", argv[0], strerror(child_errno));
		goto fail;
	}
	fcntl(out[0], F_SETFL, O_NONBLOCK);
	fcntl(errp[0], F_SETFL, O_NONBLOCK);
	l->pid = l->pgid = pid;
	l->out_fd = out[0];
	l->err_fd = errp[0];
	return 0;
fail:
	for (int i = 0; i < 2; i++) {
		close_fd(&out[i]);
		close_fd(&errp[i]);
		close_fd(&report[i]);
	}
	return -1;
}

int launch_signal(const launch *l, int sig, bool group)
{
	if (l->pid <= 0)
		return -1;
	return kill(group ? -l->pgid : l->pid, sig);
}

int launch_reap(launch *l, int *status)
{
	if (l->pid <= 0)
		return 1;
	int st;
	pid_t got = waitpid(l->pid, &st, WNOHANG);
	if (got == 0 || (got < 0 && errno == EINTR))
		return 0;
	*status = got < 0 ? 1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	l->pid = 0;
	return 1;
}

void launch_kill_leftovers(launch *l)
{
	/* a group with members keeps its id from being reused, so this reaches only them */
	if (l->pid == 0 && l->pgid > 0)
		kill(-l->pgid, SIGKILL);
	l->pgid = 0;
}

void launch_close(launch *l)
{
	close_fd(&l->out_fd);
	close_fd(&l->err_fd);
}

void launch_default_threads(int ranks_here, long cpus_here)
{
	long cpus = cpus_here > 0 ? cpus_here : sysconf(_SC_NPROCESSORS_ONLN);
	long per = ranks_here > 0 && cpus > ranks_here ? cpus / ranks_here : 1;
	char value[32];
	snprintf(value, sizeof(value), "%ld", per);
	setenv("OMP_NUM_THREADS", value, 0);
	setenv("OPENBLAS_NUM_THREADS", value, 0);
}
