/*
 * driver.c - one job's launches, from the first to the outcome (driver.h).
 */
#include "driver.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "classify.h"
#include "clock.h"
#include "ladder.h"
#include "launch.h"
#include "program.h"
#include "relay.h"
#include "stopsig.h"

/* After the launcher ended, how long its pipes may stay open before the driver moves on. */
#define DRAIN_SECONDS 2.0
/* The longest poll() wait, so signals and timers are looked at this often (ms). */
#define POLL_MS 200
/* The same, once the pipes are closed and only the launcher's exit is awaited (ms). */
#define REAP_POLL_MS 20

void runtime_request_stop(void)
{
	stopsig_request();
}

typedef struct driver {
	const runtime_options *o;
	runtime_sink *sink;
	jobspec spec; /* the job's, as its runs read it */
	layout rungs[LADDER_MAX];
	int n_rungs;
	int healthy; /* slots not lost */
	int launches, restarts;
	bool slurm;
	bool cuda;            /* the ranks train on their GPUs (launch_device_cuda) */
	layout_device device; /* where, for the layouts it trains (layout_on_device) */
	int slurm_nodes;      /* nodes of the Slurm allocation; 0 without Slurm */
	relay rl;
	bool command; /* a command job: prog is open */
	program prog;
	program_where where;
} driver;

/* The stop escalation of one launch. */
enum { STOP_NONE, STOP_ASKED, STOP_TERMINATED, STOP_KILLED };

/* One of the driver's own messages: on stderr and in the sink's log. */
static void say(driver *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(driver *d, const char *fmt, ...)
{
	char msg[2048];
	int n = snprintf(msg, sizeof(msg), "trainyard-worker: ");
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s\n", msg);
	relay_worker_line(&d->rl, msg);
}

/* A rung in events: the layout's fields and its ranks. RET: NULL when out of memory. */
static json_t *layout_json(const layout *p)
{
	json_t *o = layout_to_json(p, LAYOUT_F_ALL);
	if (o && json_object_set_new(o, "ranks", json_integer((json_int_t)layout_ranks(p))) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static void emit(driver *d, const char *kind, json_t *detail)
{
	if (!detail || sink_event(d->sink, kind, detail) < 0)
		d->rl.sink_failures++;
	json_decref(detail);
}

/* argv in one line (never executed). OUT line. */
static void argv_join(char *const *argv, char *line, size_t len)
{
	size_t n = 0;
	line[0] = '\0';
	for (size_t i = 0; argv && argv[i] && n + 1 < len; i++)
		n += (size_t)snprintf(line + n, len - n, "%s%s", i ? " " : "", argv[i]);
}

/*
 * The launch's command line: as it runs on stderr, for the operator; as
 * launch_argv_shown() names it in the sink's log, which the job's tenant
 * reads, so that no path of the machine reaches it.
 */
static void say_argv(driver *d, const launch_plan *plan, char *const *argv)
{
	char line[4096], msg[4200];
	argv_join(argv, line, sizeof(line));
	fprintf(stderr, "trainyard-worker: launch %d: %s\n", d->launches, line);
	char **shown = launch_argv_shown(plan);
	argv_join(shown, line, sizeof(line));
	launch_argv_free(shown);
	snprintf(msg, sizeof(msg), "trainyard-worker: launch %d: %s", d->launches,
	         line[0] ? line : "(out of memory for the command line)");
	relay_worker_line(&d->rl, msg);
}

/* ---- one launch ----------------------------------------------------- */

typedef struct pump {
	launch l;
	int status;
	bool ended;
	bool silent; /* a command job's ranks reported nothing for heartbeat_timeout_s */
	double ended_at;
	int stop;          /* STOP_*: how far the stop escalation went */
	double stop_since; /* when that stage was reached */
} pump;

static void pump_read(driver *d, int *fd, runtime_stream from)
{
	char buf[16384];
	for (;;) {
		ssize_t n = read(*fd, buf, sizeof(buf));
		if (n > 0) {
			relay_feed(&d->rl, from, buf, (size_t)n, clock_mono_s());
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		close(*fd);
		*fd = -1;
		return;
	}
}

/* Forward a stop: SIGUSR1, then SIGTERM (a second signal, or the grace is over), then SIGKILL. */
static void pump_stop(driver *d, pump *p, double t)
{
	int grace = d->o->stop_grace_s > 0 ? d->o->stop_grace_s : RUNTIME_STOP_GRACE_S;
	if (stopsig_count() == 0 || p->ended)
		return;
	if (p->stop == STOP_NONE) {
		say(d, "stop requested: asking the launch to checkpoint and stop (SIGUSR1)");
		launch_signal(&p->l, SIGUSR1, false);
	} else if (p->stop == STOP_ASKED && (stopsig_count() > 1 || t - p->stop_since >= grace)) {
		say(d, "the launch has not stopped: terminating it (SIGTERM)");
		launch_signal(&p->l, SIGTERM, false);
	} else if (p->stop == STOP_TERMINATED && t - p->stop_since >= RUNTIME_KILL_GRACE_S) {
		say(d, "the launch has not ended: killing it (SIGKILL)");
		launch_signal(&p->l, SIGKILL, true);
	} else {
		return;
	}
	p->stop++;
	p->stop_since = t;
}

/* A command job's ranks silent for longer than the job allows: the launch is killed. */
static void pump_silence(driver *d, pump *p, double t)
{
	int limit = d->spec.fault_tolerance.heartbeat_timeout_s;
	if (!d->command || p->ended || p->silent || t - d->rl.last_report < limit)
		return;
	say(d, "no report from any rank for %d s (heartbeat_timeout_s): killing the launch", limit);
	p->silent = true;
	launch_signal(&p->l, SIGKILL, true);
}

/* Relay the launch's output until it ended and its pipes are drained. */
static void pump_run(driver *d, pump *p)
{
	for (;;) {
		double t = clock_mono_s();
		sink_tick(d->sink, t);
		pump_stop(d, p, t);
		pump_silence(d, p, t);
		if (!p->ended && launch_reap(&p->l, &p->status)) {
			p->ended = true;
			p->ended_at = t;
		}
		bool open = p->l.out_fd >= 0 || p->l.err_fd >= 0;
		if (p->ended && (!open || t - p->ended_at > DRAIN_SECONDS))
			break;
		double due = relay_tick(&d->rl, t);
		/* with both pipes closed, only the launcher's exit is awaited: look often */
		int timeout = open ? POLL_MS : REAP_POLL_MS;
		if (due >= 0 && due * 1000 < timeout)
			timeout = (int)(due * 1000) + 1;
		struct pollfd fds[2];
		nfds_t n = 0;
		if (p->l.out_fd >= 0)
			fds[n++] = (struct pollfd){.fd = p->l.out_fd, .events = POLLIN};
		if (p->l.err_fd >= 0)
			fds[n++] = (struct pollfd){.fd = p->l.err_fd, .events = POLLIN};
		if (poll(fds, n, timeout) <= 0)
			continue;
		for (nfds_t i = 0; i < n; i++) {
			if (!fds[i].revents)
				continue;
			if (fds[i].fd == p->l.out_fd)
				pump_read(d, &p->l.out_fd, RUNTIME_STREAM_OUT);
			else
				pump_read(d, &p->l.err_fd, RUNTIME_STREAM_ERR);
		}
	}
	launch_kill_leftovers(&p->l);
	launch_close(&p->l);
	relay_end(&d->rl);
}

extern char **environ;

/*
 * The launcher's environment: this process's, at this moment (the thread
 * defaults included), with add ("NAME=value") over variables of the same
 * names. RET NULL when there is nothing to add or no memory (see the
 * caller); free() the array, not its strings.
 */
static char **launch_envp(char *const *add)
{
	if (!add || !add[0])
		return NULL;
	size_t n = 0, extra = 0;
	while (environ[n])
		n++;
	while (add[extra])
		extra++;
	char **envp = calloc(n + extra + 1, sizeof(char *));
	if (!envp)
		return NULL;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		bool replaced = false;
		for (size_t j = 0; j < extra && !replaced; j++) {
			const char *eq = strchr(add[j], '=');
			size_t len = eq ? (size_t)(eq - add[j]) + 1 : 0;
			replaced = len && strncmp(environ[i], add[j], len) == 0;
		}
		if (!replaced)
			envp[k++] = environ[i];
	}
	for (size_t j = 0; j < extra; j++)
		envp[k++] = add[j];
	return envp;
}

/*
 * A command job's launch: the newest checkpoint unsealed to resume from,
 * the ranks' environment. RET 0, or -1 after saying why.
 */
static int program_launch(driver *d, launch_plan *plan)
{
	char err[1024];
	if (program_prepare_launch(&d->prog, &d->where, err, sizeof(err)) < 0) {
		say(d, "launch %d: %s", d->launches, err);
		return -1;
	}
	if (d->prog.resume_step > 0) {
		say(d, "launch %d resumes from the checkpoint of step %d", d->launches,
		    d->prog.resume_step);
		d->rl.last_checkpoint = d->prog.resume_step;
		d->rl.last_step = d->prog.resume_step;
	}
	plan->command = &d->spec.command;
	plan->worker_bin = d->o->worker_bin;
	plan->ranks_per_node = d->spec.resources.ranks_per_node;
	plan->export_env = (const char *const *)d->prog.names;
	d->rl.last_report = clock_mono_s();
	return 0;
}

/* Run the rung's launch to its end. OUT *end. */
static void run_launch(driver *d, const layout *rung, launch_end *end)
{
	launch_plan plan = {.train_bin = d->o->train_bin,
	                    .spec_path = d->o->spec_path,
	                    .ckpt_dir = d->o->ckpt_dir,
	                    .data_root = d->o->data_root,
	                    .overrides = d->o->overrides,
	                    .n_overrides = d->o->n_overrides,
	                    .layout = *rung,
	                    .rank_memory_limit = d->o->rank_memory_limit,
	                    .slurm = d->slurm,
	                    .cuda = d->cuda,
	                    .encrypt_for = d->o->encrypt_for,
	                    .init_ckpt = d->o->init_ckpt,
	                    .init_encrypt_for = d->o->init_encrypt_for,
	                    .export_env = d->o->export_env};
	memset(end, 0, sizeof(*end));
	d->launches++;
	relay_begin(&d->rl, d->launches);
	if (d->command && program_launch(d, &plan) < 0) {
		end->start_failed = true;
		return;
	}
	char **argv = launch_argv(&plan);
	if (!argv) {
		say(d, "launch %d: out of memory for the command line", d->launches);
		end->start_failed = true;
		return;
	}
	say_argv(d, &plan, argv);
	emit(d, "launch",
	     json_pack("{s:i, s:o, s:s}", "launch", d->launches, "layout", layout_json(rung),
	               "launcher", argv[0]));
	pump p = {0};
	char err[512];
	char *const *add = d->command ? d->prog.env : d->o->launch_env;
	char **envp = launch_envp(add);
	if (add && add[0] && !envp) {
		say(d, "launch %d: out of memory for the environment", d->launches);
		end->start_failed = true;
	} else if (launch_start(&p.l, argv, envp, err, sizeof(err)) < 0) {
		say(d, "launch %d: %s", d->launches, err);
		end->start_failed = true;
	} else {
		pump_run(d, &p);
		end->exit_status = p.status;
		end->ranks_lost = d->rl.ranks_lost;
		end->oom_kills = d->rl.oom_kills;
		end->start_failed = d->rl.start_failures > 0;
		end->silent = p.silent;
	}
	free(envp);
	launch_argv_free(argv);
}

/* ---- the run ---------------------------------------------------------- */

/* The run ends in class c (ok, stopped, or the failure); fmt says why. */
static int finish(driver *d, failure_class c, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int finish(driver *d, failure_class c, const char *fmt, ...)
{
	bool failed = c != FAILURE_OK && c != FAILURE_STOPPED;
	const char *result = c == FAILURE_OK ? "succeeded" : failed ? "failed" : "stopped";
	runtime_outcome o = {.result = result,
	                     .failure = failed ? failure_name(c) : NULL,
	                     .exit_status = failure_status(c),
	                     .launches = d->launches,
	                     .restarts = d->restarts,
	                     .last_step = d->rl.last_step,
	                     .last_checkpoint = d->rl.last_checkpoint};
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(o.message, sizeof(o.message), fmt, ap);
	va_end(ap);
	say(d, "%s%s%s%s%s", result, o.failure ? " with " : "", o.failure ? o.failure : "",
	    o.message[0] ? ": " : "", o.message);
	if (d->rl.sink_failures)
		fprintf(stderr, "trainyard-worker: %d sink calls failed; some output is lost\n",
		        d->rl.sink_failures);
	sink_finish(d->sink, &o); /* which may make o a failure it learnt of */
	return o.exit_status;
}

/* How long the nodes of an allocation get to answer a probe after a rank was lost. */
#define PROBE_SECONDS 20.0

/*
 * Whether every node of the Slurm allocation still runs a step: one task
 * of `true` on each, within PROBE_SECONDS. A node that is gone makes srun
 * fail, or wait until slurmctld notices; either way, not healthy.
 */
static bool nodes_answer(driver *d)
{
	char nodes[16];
	snprintf(nodes, sizeof(nodes), "%d", d->slurm_nodes);
	char a0[] = "srun", a1[] = "--quiet", a2[] = "-N", a4[] = "--ntasks-per-node=1",
	     a5[] = "--mpi=none", a6[] = "true";
	char *argv[] = {a0, a1, a2, nodes, a4, a5, a6, NULL};
	launch l;
	char err[256];
	if (launch_start(&l, argv, NULL, err, sizeof(err)) < 0)
		return false;
	double until = clock_mono_s() + PROBE_SECONDS;
	int status = -1;
	bool ended = false;
	while (!(ended = launch_reap(&l, &status)) && clock_mono_s() < until) {
		char buf[4096];
		/* drain: srun's messages are of no interest, but must not block it */
		ssize_t n = l.out_fd >= 0 ? read(l.out_fd, buf, sizeof(buf)) : 0;
		n += l.err_fd >= 0 ? read(l.err_fd, buf, sizeof(buf)) : 0;
		(void)n;
		struct timespec ts = {0, 100 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	if (!ended) {
		launch_signal(&l, SIGKILL, true);
		while (!launch_reap(&l, &status))
			;
	}
	launch_kill_leftovers(&l);
	launch_close(&l);
	return ended && status == 0;
}

/*
 * A command job's rank ended by a signal: its program died, or its node.
 * RET 1 when the same layout may run again (every node answers), 0 when
 * the attempt ends for the scheduler to retry on fewer nodes.
 */
static int command_rank_lost(driver *d, char *why, size_t whylen)
{
	if (d->slurm_nodes <= 1 || nodes_answer(d))
		return 1;
	snprintf(why, whylen,
	         "launch %d lost rank %d and a node of the %d does not answer; the attempt ends "
	         "so that a new allocation of healthy nodes replaces it",
	         d->launches, d->rl.first_lost_rank, d->slurm_nodes);
	return 0;
}

/*
 * After a retryable failure of the launch on rung cur. RET the next rung,
 * or -1 with the reason there is none in why.
 */
static int fall_back(driver *d, int cur, failure_class c, const launch_end *e, char *why,
                     size_t whylen)
{
	int max = d->spec.fault_tolerance.max_restarts;
	bool same = false;
	if (d->command && c == FAILURE_RANK_LOST) {
		if (!command_rank_lost(d, why, whylen))
			return -1;
		same = true;
	}
	/*
	 * A rank lost in an allocation of several nodes most likely means a
	 * node is gone. The allocation still holds it, and Slurm ends the job
	 * (NODE_FAIL) once its controller notices, so a launch here would race
	 * that. The attempt ends instead; the scheduler retries it on a new
	 * allocation of healthy nodes.
	 */
	if (!same && c == FAILURE_RANK_LOST && d->slurm_nodes > 1) {
		snprintf(why, whylen,
		         "launch %d lost a rank in an allocation of %d nodes; the attempt ends so "
		         "that a new allocation of healthy nodes replaces it",
		         d->launches, d->slurm_nodes);
		return -1;
	}
	if (c == FAILURE_RANK_LOST && !same)
		d->healthy -= e->ranks_lost > 0 ? e->ranks_lost : 1;
	if (d->restarts >= max) {
		snprintf(why, whylen, "launch %d failed and max_restarts (%d) is reached",
		         d->launches, max);
		return -1;
	}
	int next = same ? cur : ladder_pick(d->rungs, d->n_rungs, cur + 1, d->healthy, d->device);
	if (next < 0) {
		snprintf(why, whylen,
		         "launch %d failed and no smaller layout%s fits the %d healthy slots",
		         d->launches, d->cuda ? " that the GPU path trains" : "", d->healthy);
		return -1;
	}
	int lost = d->rl.last_step - d->rl.last_checkpoint;
	emit(d, "fallback",
	     json_pack("{s:s, s:o, s:o, s:i, s:i, s:i}", "reason", failure_name(c), "from",
	               layout_json(&d->rungs[cur]), "to", layout_json(&d->rungs[next]),
	               "steps_lost", lost > 0 ? lost : 0, "healthy_slots", d->healthy, "restart",
	               d->restarts + 1));
	if (same)
		say(d,
		    "rank %d ended by a signal and every node answers: the same %lld ranks again, "
		    "from the newest valid checkpoint",
		    d->rl.first_lost_rank, (long long)layout_ranks(&d->rungs[cur]));
	else
		say(d,
		    "falling back after %s: %lld ranks -> %lld ranks, from the newest valid "
		    "checkpoint",
		    failure_name(c), (long long)layout_ranks(&d->rungs[cur]),
		    (long long)layout_ranks(&d->rungs[next]));
	d->restarts++;
	return next;
}

static int drive(driver *d)
{
	char off_device[256];
	if (!layout_on_device(&d->rungs[0], d->device, off_device, sizeof(off_device)))
		return finish(d, FAILURE_INVALID_CONFIG,
		              "the job's layout on GPUs: --device cuda trains %s", off_device);
	/* on GPUs, the fallbacks the GPU path does not train are passed over */
	int cur = ladder_pick(d->rungs, d->n_rungs, 0, d->healthy, d->device);
	if (cur < 0)
		return finish(d, FAILURE_INVALID_CONFIG, "no layout of the job fits in %d slots",
		              d->healthy);
	for (;;) {
		sink_tick(d->sink, clock_mono_s());
		if (stopsig_count())
			return finish(d, FAILURE_STOPPED, "stopped before launch %d",
			              d->launches + 1);
		launch_end e;
		run_launch(d, &d->rungs[cur], &e);
		failure_class c = launch_classify(&e);
		emit(d, "launch_end",
		     json_pack("{s:i, s:i, s:s, s:i, s:i, s:i}", "launch", d->launches, "exit",
		               e.exit_status, "class", failure_name(c), "ranks_lost", e.ranks_lost,
		               "last_step", d->rl.last_step, "last_checkpoint",
		               d->rl.last_checkpoint));
		if (c == FAILURE_OK)
			return finish(d, c, "%s", "");
		if (stopsig_count() || c == FAILURE_STOPPED)
			return finish(d, FAILURE_STOPPED,
			              "launch %d ended as %s after the stop request", d->launches,
			              failure_name(c));
		if (!failure_falls_back(c))
			return finish(d, c, "launch %d ended with status %d", d->launches,
			              e.exit_status);
		char why[256];
		int next = fall_back(d, cur, c, &e, why, sizeof(why));
		if (next < 0)
			return finish(d, c, "%s", why);
		cur = next;
	}
}

/* A command job's program: its store of checkpoints, its directories. RET 0, or -1 with err. */
static int command_open(driver *d, char *err, size_t errlen)
{
	const runtime_options *o = d->o;
	if (d->spec.kind != JOBSPEC_KIND_COMMAND)
		return 0;
	if (!o->code_dir || !o->work_dir || !o->worker_bin) {
		snprintf(err, errlen, "a command job needs its code and work directories");
		return -1;
	}
	d->where = (program_where){.code_dir = o->code_dir,
	                           .work_dir = o->work_dir,
	                           .data_dir = o->program_data_dir,
	                           .job_id = o->job_id,
	                           .attempt = o->attempt_number,
	                           .sdk_python = o->sdk_python,
	                           .path = o->program_path};
	ckpt_store *store =
	    o->seal ? ckpt_store_encrypted(o->ckpt_dir, o->seal) : ckpt_store_dir(o->ckpt_dir);
	if (program_open(&d->prog, &d->spec, store, &d->where, err, errlen) < 0) {
		program_release(&d->prog);
		return -1;
	}
	d->command = true;
	d->rl.prog = &d->prog;
	return 0;
}

int runtime_run(const runtime_options *o, runtime_sink *sink)
{
	driver *d = calloc(1, sizeof(*d));
	if (!d || relay_init(&d->rl, sink, o->ckpt_dir) < 0) {
		fprintf(stderr, "trainyard-worker: out of memory\n");
		free(d);
		return failure_status(FAILURE_INTERNAL);
	}
	d->o = o;
	d->sink = sink;
	d->slurm = getenv("SLURM_JOB_ID") != NULL;
	const char *nn = getenv("SLURM_JOB_NUM_NODES");
	d->slurm_nodes = d->slurm && nn ? atoi(nn) : 0;
	stopsig_install();
	char err[4096];
	int rc;
	if (jobspec_load(o->spec_path, o->overrides, o->n_overrides, &d->spec, NULL, err,
	                 sizeof(err)) < 0) {
		rc = finish(d, FAILURE_INVALID_CONFIG, "%s", err);
	} else if (command_open(d, err, sizeof(err)) < 0) {
		rc = finish(d, FAILURE_INTERNAL, "%s", err);
	} else {
		d->n_rungs = ladder_build(&d->spec, d->rungs);
		d->cuda = launch_device_cuda(&d->spec, NULL);
		d->device = !d->cuda ? LAYOUT_CPU
		            : d->spec.training.precision == JOBSPEC_PRECISION_FP32
		                ? LAYOUT_GPU_FP32
		                : LAYOUT_GPU_16BIT;
		d->healthy = o->slots > 0 ? o->slots : (int)jobspec_ranks(&d->spec);
		if (!d->slurm) {
			launch_default_threads((int)layout_ranks(&d->rungs[0]), 0);
		} else {
			/* srun passes the environment to every task: each rank gets its
			 * share of the CPUs Slurm gave the job on a node */
			const char *cpus = getenv("SLURM_CPUS_ON_NODE");
			launch_default_threads(d->spec.resources.ranks_per_node,
			                       cpus ? strtol(cpus, NULL, 10) : 0);
		}
		rc = drive(d);
	}
	if (d->command)
		program_release(&d->prog);
	relay_release(&d->rl);
	free(d);
	return rc;
}
