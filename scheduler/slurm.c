/*
 * slurm.c - submissions, job states, cancellation and room, through
 * libslurm (see slurm.h). Slurm's command-line tools (sacct for jobs
 * slurmctld has forgotten, sacctmgr for accounts) run through sl_tool(),
 * from an argv array: no shell ever sees a value.
 */
#include "slurm.h"

#include <errno.h>
#include <signal.h>
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "failure.h"

/* In libslurm, but not declared by the headers of every release. */
extern char *slurm_job_reason_string(enum job_state_reason inx);

static const char *const state_names[] = {
    [SL_PENDING] = "pending",
    [SL_RUNNING] = "running",
    [SL_COMPLETED] = "completed",
    [SL_FAILED] = "failed",
    [SL_TIMEOUT] = "timeout",
    [SL_NODE_FAIL] = "node_fail",
    [SL_PREEMPTED] = "preempted",
    [SL_CANCELLED] = "cancelled",
    [SL_OUT_OF_MEMORY] = "out_of_memory",
    [SL_BOOT_FAIL] = "boot_fail",
    [SL_DEADLINE] = "deadline",
    [SL_UNKNOWN] = "unknown",
};

const char *sl_state_name(sl_state s)
{
	return s <= SL_UNKNOWN ? state_names[s] : "unknown";
}

bool sl_final(sl_state s)
{
	return s != SL_PENDING && s != SL_RUNNING && s != SL_UNKNOWN;
}

const char *sl_failure_class(sl_state s)
{
	switch (s) {
	case SL_COMPLETED:
		return NULL;
	case SL_NODE_FAIL:
	case SL_BOOT_FAIL:
		return failure_name(FAILURE_NODE_FAILURE);
	case SL_TIMEOUT:
	case SL_DEADLINE:
		return failure_name(FAILURE_TIMEOUT);
	case SL_OUT_OF_MEMORY:
		return failure_name(FAILURE_OOM);
	case SL_PREEMPTED:
		return failure_name(FAILURE_PREEMPTED);
	case SL_CANCELLED:
		return failure_name(FAILURE_CANCELLED);
	default:
		return failure_name(FAILURE_FAILED);
	}
}

static sl_state from_slurm(uint32_t st)
{
	if (st & JOB_COMPLETING)
		return SL_RUNNING; /* not over until every node has let go */
	switch (st & JOB_STATE_BASE) {
	case JOB_PENDING:
		return SL_PENDING;
	case JOB_RUNNING:
	case JOB_SUSPENDED:
		return SL_RUNNING;
	case JOB_COMPLETE:
		return SL_COMPLETED;
	case JOB_CANCELLED:
		return SL_CANCELLED;
	case JOB_FAILED:
		return SL_FAILED;
	case JOB_TIMEOUT:
		return SL_TIMEOUT;
	case JOB_NODE_FAIL:
		return SL_NODE_FAIL;
	case JOB_PREEMPTED:
		return SL_PREEMPTED;
	case JOB_BOOT_FAIL:
		return SL_BOOT_FAIL;
	case JOB_DEADLINE:
		return SL_DEADLINE;
	case JOB_OOM:
		return SL_OUT_OF_MEMORY;
	default:
		return SL_UNKNOWN;
	}
}

int sl_init(void)
{
	slurm_init(NULL);
	return 0;
}

void sl_fini(void)
{
	slurm_fini();
}

static void slurm_err(char err[SL_ERR_MAX], const char *what)
{
	snprintf(err, SL_ERR_MAX, "%s: %s", what, slurm_strerror(slurm_get_errno()));
}

int sl_comment_parse(const char *comment, char job_id[37], int *attempt)
{
	size_t n = strlen(SL_COMMENT_PREFIX);
	if (!comment || strncmp(comment, SL_COMMENT_PREFIX, n) != 0 || strlen(comment + n) < 36)
		return -1;
	memcpy(job_id, comment + n, 36);
	job_id[36] = '\0';
	const char *rest = comment + n + 36;
	if (sscanf(rest, " attempt=%d", attempt) != 1 || *attempt < 1)
		return -1;
	return 0;
}

int sl_submit_batch(const sl_submit *s, uint32_t *job_id, char err[SL_ERR_MAX])
{
	job_desc_msg_t d;
	slurm_init_job_desc_msg(&d);
	char gres[32] = "";
	d.name = (char *)s->name;
	d.comment = (char *)s->comment;
	d.account = (char *)s->account;
	if (s->partition && s->partition[0])
		d.partition = (char *)s->partition;
	d.script = (char *)s->script;
	d.work_dir = (char *)s->work_dir;
	d.std_out = (char *)s->std_out;
	d.std_err = (char *)s->std_out;
	/* a batch job Slurm runs again adds to its output, never truncates it */
	d.open_mode = OPEN_MODE_APPEND;
	int n_env = 0;
	while (s->env[n_env])
		n_env++;
	d.environment = s->env;
	d.env_size = (uint32_t)n_env;
	d.min_nodes = d.max_nodes = (uint32_t)s->nodes;
	d.ntasks_per_node = (uint16_t)s->tasks_per_node;
	d.num_tasks = (uint32_t)(s->nodes * s->tasks_per_node);
	d.cpus_per_task = 1;
	if (s->gpus_per_node > 0) {
		snprintf(gres, sizeof(gres), "gres:gpu:%d", s->gpus_per_node);
		d.tres_per_node = gres;
	}
	d.time_limit = (uint32_t)s->time_limit_minutes;
	if (s->warn_seconds > 0) {
		d.warn_signal = SIGTERM;
		d.warn_time = (uint16_t)s->warn_seconds;
		d.warn_flags = KILL_JOB_BATCH;
	}
	d.requeue = 0; /* a retry is a new attempt, decided by the scheduler */
	d.user_id = s->uid;
	d.group_id = s->gid;
	submit_response_msg_t *resp = NULL;
	if (slurm_submit_batch_job(&d, &resp) != SLURM_SUCCESS) {
		slurm_err(err, "slurm_submit_batch_job");
		return -1;
	}
	*job_id = resp->job_id;
	slurm_free_submit_response_response_msg(resp);
	return 0;
}

static void fill_job(sl_job *o, const slurm_job_info_t *j)
{
	memset(o, 0, sizeof(*o));
	o->id = j->job_id;
	o->state = from_slurm(j->job_state);
	snprintf(o->reason, sizeof(o->reason), "%s",
	         j->state_reason ? slurm_job_reason_string(j->state_reason) : "");
	if (sl_comment_parse(j->comment, o->job_id, &o->attempt) < 0)
		o->job_id[0] = '\0';
	snprintf(o->nodes, sizeof(o->nodes), "%s", j->nodes ? j->nodes : "");
	o->start = j->start_time;
	o->end = j->end_time;
	o->exit_code =
	    WIFSIGNALED(j->exit_code) ? 128 + WTERMSIG(j->exit_code) : WEXITSTATUS(j->exit_code);
}

static int by_id(const void *a, const void *b)
{
	uint32_t x = ((const sl_job *)a)->id, y = ((const sl_job *)b)->id;
	return x < y ? -1 : x > y;
}

int sl_our_jobs(sl_job **jobs, int *n, char err[SL_ERR_MAX])
{
	job_info_msg_t *msg = NULL;
	*jobs = NULL;
	*n = 0;
	if (slurm_load_jobs(0, &msg, SHOW_ALL) != SLURM_SUCCESS) {
		slurm_err(err, "slurm_load_jobs");
		return -1;
	}
	sl_job *out = calloc(msg->record_count ? msg->record_count : 1, sizeof(*out));
	if (!out) {
		slurm_free_job_info_msg(msg);
		snprintf(err, SL_ERR_MAX, "out of memory");
		return -1;
	}
	int k = 0;
	for (uint32_t i = 0; i < msg->record_count; i++) {
		fill_job(&out[k], &msg->job_array[i]);
		if (out[k].job_id[0])
			k++;
	}
	slurm_free_job_info_msg(msg);
	qsort(out, (size_t)k, sizeof(*out), by_id);
	*jobs = out;
	*n = k;
	return 0;
}

const sl_job *sl_find(const sl_job *jobs, int n, uint32_t id, const char *job_id, int attempt)
{
	sl_job key = {.id = id};
	const sl_job *j = bsearch(&key, jobs, (size_t)n, sizeof(*jobs), by_id);
	if (!j || j->attempt != attempt || strcmp(j->job_id, job_id) != 0)
		return NULL;
	return j;
}

/* sacct's State column ("CANCELLED by 0", "NODE_FAIL") as ours. */
static sl_state from_sacct(const char *s)
{
	static const struct {
		const char *name;
		sl_state st;
	} map[] = {
	    {"PENDING", SL_PENDING},
	    {"RUNNING", SL_RUNNING},
	    {"SUSPENDED", SL_RUNNING},
	    {"COMPLETING", SL_RUNNING},
	    {"COMPLETED", SL_COMPLETED},
	    {"CANCELLED", SL_CANCELLED},
	    {"FAILED", SL_FAILED},
	    {"TIMEOUT", SL_TIMEOUT},
	    {"NODE_FAIL", SL_NODE_FAIL},
	    {"PREEMPTED", SL_PREEMPTED},
	    {"BOOT_FAIL", SL_BOOT_FAIL},
	    {"DEADLINE", SL_DEADLINE},
	    {"OUT_OF_MEMORY", SL_OUT_OF_MEMORY},
	};
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		size_t n = strlen(map[i].name);
		if (strncmp(s, map[i].name, n) == 0 && (s[n] == '\0' || s[n] == ' '))
			return map[i].st;
	}
	return SL_UNKNOWN;
}

int sl_tool(const char *const *argv, char *out, size_t n)
{
	int fd[2];
	if (pipe(fd) < 0)
		return -1;
	pid_t pid = fork();
	if (pid < 0) {
		close(fd[0]);
		close(fd[1]);
		return -1;
	}
	if (pid == 0) {
		dup2(fd[1], 1);
		close(fd[0]);
		close(fd[1]);
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(fd[1]);
	/* read to the end, keeping what fits: a full pipe must not stall the tool */
	char chunk[1024];
	size_t got = 0;
	ssize_t r;
	while ((r = read(fd[0], chunk, sizeof(chunk))) != 0) {
		if (r < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		size_t take = out && got + 1 < n ? n - 1 - got : 0;
		take = take < (size_t)r ? take : (size_t)r;
		if (take)
			memcpy(out + got, chunk, take);
		got += take;
	}
	if (out && n)
		out[got] = '\0';
	close(fd[0]);
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int sl_job_from_accounting(uint32_t id, const char *job_id, int attempt, sl_job *out,
                           char err[SL_ERR_MAX])
{
	char ids[16], buf[8192];
	snprintf(ids, sizeof(ids), "%u", id);
	/* the comment last: it is the only column that may hold a '|' */
	const char *argv[] = {
	    "sacct", "-X", "-n", "-P", "-D", "-j", ids, "-o", "State,ExitCode,NodeList,Comment",
	    NULL};
	if (sl_tool(argv, buf, sizeof(buf)) != 0) {
		snprintf(err, SL_ERR_MAX, "sacct -j %u failed", id);
		return -1;
	}
	char *save = NULL;
	for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *f[4] = {line, NULL, NULL, NULL};
		for (int i = 1; i < 4; i++) {
			f[i] = strchr(f[i - 1], '|');
			if (!f[i])
				break;
			*f[i]++ = '\0';
		}
		char their_job[37];
		int their_attempt;
		if (!f[3] || sl_comment_parse(f[3], their_job, &their_attempt) < 0 ||
		    their_attempt != attempt || strcmp(their_job, job_id) != 0)
			continue; /* another job that had the same id */
		memset(out, 0, sizeof(*out));
		out->id = id;
		out->state = from_sacct(f[0]);
		out->exit_code = atoi(f[1]);
		snprintf(out->nodes, sizeof(out->nodes), "%s", f[2]);
		snprintf(out->job_id, sizeof(out->job_id), "%s", their_job);
		out->attempt = their_attempt;
		return 0;
	}
	return 1;
}

int sl_cancel(uint32_t id, char err[SL_ERR_MAX])
{
	if (slurm_kill_job(id, SIGKILL, 0) != SLURM_SUCCESS) {
		int e = slurm_get_errno();
		if (e == ESLURM_ALREADY_DONE || e == ESLURM_INVALID_JOB_ID)
			return 0;
		slurm_err(err, "slurm_kill_job");
		return -1;
	}
	return 0;
}

/* GPUs in a GRES list such as "gpu:4" or "gpu:2(IDX:0-1)". */
static int gpus_in(const char *gres)
{
	int total = 0;
	for (const char *p = gres ? strstr(gres, "gpu") : NULL; p; p = strstr(p + 3, "gpu")) {
		const char *colon = strchr(p, ':'), *end = strpbrk(p, ",(");
		const char *last = colon;
		while (last && (!end || last < end)) {
			const char *nx = strchr(last + 1, ':');
			if (!nx || (end && nx > end))
				break;
			last = nx;
		}
		if (last)
			total += atoi(last + 1);
	}
	return total;
}

int sl_cluster_room(admit_cluster *c, char err[SL_ERR_MAX])
{
	node_info_msg_t *msg = NULL;
	c->n_nodes = 0;
	if (slurm_load_node(0, &msg, SHOW_ALL) != SLURM_SUCCESS) {
		slurm_err(err, "slurm_load_node");
		return -1;
	}
	for (uint32_t i = 0; i < msg->record_count && c->n_nodes < ADMIT_MAX_NODES; i++) {
		node_info_t *nd = &msg->node_array[i];
		uint32_t base = nd->node_state & NODE_STATE_BASE;
		if (!nd->name || base == NODE_STATE_FUTURE)
			continue;
		int k = c->n_nodes++;
		snprintf(c->name[k], sizeof(c->name[k]), "%s", nd->name);
		c->cpus[k] = nd->cpus;
		c->gpus[k] = gpus_in(nd->gres);
		c->up[k] = base != NODE_STATE_DOWN &&
		           !(nd->node_state & (NODE_STATE_DRAIN | NODE_STATE_NO_RESPOND));
		uint16_t alloc = 0;
		slurm_get_select_nodeinfo(nd->select_nodeinfo, SELECT_NODEDATA_SUBCNT,
		                          NODE_STATE_ALLOCATED, &alloc);
		c->free_cpus[k] = c->up[k] ? nd->cpus - alloc : 0;
		c->free_gpus[k] = c->up[k] ? c->gpus[k] - gpus_in(nd->gres_used) : 0;
	}
	slurm_free_node_info_msg(msg);
	return 0;
}

int sl_nodes_in(const admit_cluster *c, const char *list, int *idx, int max)
{
	int n = 0;
	if (!list || !list[0])
		return 0;
	hostlist_t hl = slurm_hostlist_create(list);
	if (!hl)
		return 0;
	char *name;
	while (n < max && (name = slurm_hostlist_shift(hl))) {
		for (int i = 0; i < c->n_nodes; i++)
			if (strcmp(c->name[i], name) == 0) {
				idx[n++] = i;
				break;
			}
		free(name);
	}
	slurm_hostlist_destroy(hl);
	return n;
}

int sl_node_timeout_s(char err[SL_ERR_MAX])
{
	slurm_conf_t *conf = NULL;
	if (slurm_load_ctl_conf(0, &conf) != SLURM_SUCCESS) {
		slurm_err(err, "slurm_load_ctl_conf");
		return -1;
	}
	int t = conf->slurmd_timeout;
	slurm_free_ctl_conf(conf);
	return t;
}
