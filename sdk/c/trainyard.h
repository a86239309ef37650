/*
 * trainyard.h - the report protocol's C client (sdk/README.md).
 *
 * A team's training program, launched by trainyard one process per rank,
 * includes this header to read its environment, report steps, heartbeats
 * and checkpoints to the worker, and stop cleanly when asked. One header,
 * static inline functions only, C11 with libc and POSIX.1-2008: compile
 * with -D_POSIX_C_SOURCE=200809L, or include this header before any other.
 *
 * Functions that can fail return 0, or -1 with errno set:
 *   EINVAL    an argument out of range, a malformed metric name, or a
 *             malformed variable of the environment;
 *   EMSGSIZE  the report's line would be longer than TY_LINE_MAX bytes;
 *   EBADF     TRAINYARD_REPORT_FD is not a descriptor number;
 *   ENOMEM    no memory for a line longer than 1024 bytes;
 *   anything write(), mkdir() or lstat() sets.
 * Outside the platform (TRAINYARD_REPORT_FD unset or empty) every report
 * function checks its arguments, builds its line, and sends nothing. Step
 * and checkpoint reports are sent by rank 0 only; other ranks check and
 * build them the same way and send nothing. The functions are not
 * async-signal-safe; call them from the program's normal flow.
 */
#ifndef TRAINYARD_H
#define TRAINYARD_H

#if !defined(_POSIX_C_SOURCE) && !defined(_XOPEN_SOURCE) && !defined(_GNU_SOURCE) &&               \
    !defined(_DEFAULT_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include <errno.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

/* Exit statuses the platform tells apart; any other status, or death by a signal, is a failure. */
#define TY_EXIT_OK             0
#define TY_EXIT_INVALID_CONFIG 10
#define TY_EXIT_OUT_OF_MEMORY  11
#define TY_EXIT_DATA_ERROR     13
#define TY_EXIT_NUMERICAL      14
#define TY_EXIT_STOPPED        16

#define TY_LINE_MAX        65536 /* bytes of one report line, its newline included */
#define TY_METRIC_NAME_MAX 64
/* Where ty_checkpoint_dir() writes when TRAINYARD_CHECKPOINT_DIR is unset. */
#define TY_LOCAL_CHECKPOINT_DIR "checkpoints"

/* One named metric of a step report. */
typedef struct ty_metric {
	const char *name; /* 1-64 of [A-Za-z0-9._/-] */
	double value;     /* not finite: left out */
} ty_metric;

/* A step report; start from TY_STEP_INIT(step), which leaves out every optional field. */
typedef struct ty_step {
	long step;                /* >= 1 */
	int has_loss;             /* 0: no "loss" */
	double loss;              /* when has_loss; not finite: sent as null */
	long long tokens;         /* this step's tokens over all ranks; < 0: left out */
	double lr;                /* not finite: left out */
	double grad_norm;         /* not finite: left out */
	const ty_metric *metrics; /* n_metrics of them, names distinct */
	size_t n_metrics;
} ty_step;

#define TY_STEP_INIT(s)                                                                            \
	{                                                                                          \
		.step = (s), .has_loss = 0, .loss = 0.0, .tokens = -1, .lr = NAN,                  \
		.grad_norm = NAN, .metrics = NULL, .n_metrics = 0                                  \
	}

/*
 * Variable name as an integer in [min, max] into *out: 1 when set, 0 when
 * unset or empty, -1 (errno EINVAL) when not a plain decimal in range.
 */
static inline int ty__env_long(const char *name, long min, long max, long *out)
{
	const char *s = getenv(name);
	char *end;
	long v;

	if (!s || !*s)
		return 0;
	if (*s < '0' || *s > '9') {
		errno = EINVAL;
		return -1;
	}
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < min || v > max) {
		errno = EINVAL;
		return -1;
	}
	*out = v;
	return 1;
}

static inline int ty__env_int(const char *name, long min, int dflt)
{
	long v;
	int r = ty__env_long(name, min, INT_MAX, &v);

	return r < 0 ? -1 : r == 0 ? dflt : (int)v;
}

/* RANK; 0 when unset, -1 (errno EINVAL) when malformed. */
static inline int ty_rank(void)
{
	return ty__env_int("RANK", 0, 0);
}

/* WORLD_SIZE; 1 when unset, -1 (errno EINVAL) when malformed. */
static inline int ty_world_size(void)
{
	return ty__env_int("WORLD_SIZE", 1, 1);
}

/* LOCAL_RANK; 0 when unset, -1 (errno EINVAL) when malformed. */
static inline int ty_local_rank(void)
{
	return ty__env_int("LOCAL_RANK", 0, 0);
}

/* LOCAL_WORLD_SIZE; 1 when unset, -1 (errno EINVAL) when malformed. */
static inline int ty_local_world_size(void)
{
	return ty__env_int("LOCAL_WORLD_SIZE", 1, 1);
}

/* TRAINYARD_STEPS (the job's training.steps); -1 when unset (ENOENT) or malformed (EINVAL). */
static inline long ty_steps(void)
{
	long v;
	int r = ty__env_long("TRAINYARD_STEPS", 1, LONG_MAX, &v);

	if (r == 0)
		errno = ENOENT;
	return r == 1 ? v : -1;
}

/* TRAINYARD_DATA_DIR (the job's unsealed datasets); NULL when unset or empty. */
static inline const char *ty_data_dir(void)
{
	const char *s = getenv("TRAINYARD_DATA_DIR");

	return s && *s ? s : NULL;
}

/*
 * TRAINYARD_RESUME_STEP, the step of the checkpoint to resume from; -1 when
 * there is none (errno ENOENT: it or TRAINYARD_RESUME_DIR unset) or it is
 * malformed (EINVAL).
 */
static inline long ty_resume_step(void)
{
	const char *dir = getenv("TRAINYARD_RESUME_DIR");
	long v;
	int r = ty__env_long("TRAINYARD_RESUME_STEP", 1, LONG_MAX, &v);

	if (r < 0)
		return -1;
	if (r == 0 || !dir || !*dir) {
		errno = ENOENT;
		return -1;
	}
	return v;
}

/*
 * TRAINYARD_RESUME_DIR: the read-only directory of that checkpoint's files,
 * under the relative paths they were written with; NULL when
 * ty_resume_step() is -1.
 */
static inline const char *ty_resume_dir(void)
{
	return ty_resume_step() < 0 ? NULL : getenv("TRAINYARD_RESUME_DIR");
}

/* A line being built: bytes past cap are counted, not stored. */
typedef struct ty__buf {
	char *p;
	size_t cap, len;
} ty__buf;

static inline void ty__put(ty__buf *b, const char *s)
{
	size_t n = strlen(s);

	if (b->len <= b->cap && n <= b->cap - b->len)
		memcpy(b->p + b->len, s, n);
	b->len += n;
}

static inline void ty__put_ll(ty__buf *b, long long v)
{
	char s[32];

	snprintf(s, sizeof(s), "%lld", v);
	ty__put(b, s);
}

/* A finite double, shortest of %.15g to %.17g that reads back equal, '.' whatever the locale. */
static inline void ty__put_double(ty__buf *b, double v)
{
	char s[40];
	const char *dp = localeconv()->decimal_point;

	for (int prec = 15; prec <= 17; prec++) {
		snprintf(s, sizeof(s), "%.*g", prec, v);
		if (strtod(s, NULL) == v)
			break;
	}
	if (dp && dp[0] && dp[0] != '.' && !dp[1]) {
		for (char *c = s; *c; c++) {
			if (*c == dp[0])
				*c = '.';
		}
	}
	ty__put(b, s);
}

static inline int ty__metric_name_ok(const char *name)
{
	size_t n = 0;

	if (!name)
		return 0;
	for (const char *c = name; *c; c++, n++) {
		if (!((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') ||
		      (*c >= '0' && *c <= '9') || *c == '.' || *c == '_' || *c == '/' || *c == '-'))
			return 0;
	}
	return n >= 1 && n <= TY_METRIC_NAME_MAX;
}

/*
 * The report descriptor: >= 0; -1 outside the platform (unset or empty);
 * -2 when TRAINYARD_REPORT_FD is not a decimal descriptor number.
 */
static inline int ty__report_fd(void)
{
	long v;
	int r = ty__env_long("TRAINYARD_REPORT_FD", 0, INT_MAX, &v);

	return r < 0 ? -2 : r == 0 ? -1 : (int)v;
}

/* Send a built line (its newline included) with one write(), the rest after a short one. */
static inline int ty__send(const char *line, size_t len)
{
	int fd = ty__report_fd();

	if (fd == -1)
		return 0;
	if (fd < 0) {
		errno = EBADF;
		return -1;
	}
	while (len > 0) {
		ssize_t w = write(fd, line, len);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		line += w;
		len -= (size_t)w;
	}
	return 0;
}

/* Whether this rank sends step and checkpoint reports: 1 rank 0, 0 another, -1 RANK malformed. */
static inline int ty__is_rank0(void)
{
	int r = ty_rank();

	return r < 0 ? -1 : r == 0;
}

static inline void ty__step_line(const ty_step *s, ty__buf *b)
{
	int any = 0;

	ty__put(b, "{\"type\":\"step\",\"step\":");
	ty__put_ll(b, s->step);
	if (s->has_loss) {
		ty__put(b, ",\"loss\":");
		if (isfinite(s->loss))
			ty__put_double(b, s->loss);
		else
			ty__put(b, "null");
	}
	if (s->tokens >= 0) {
		ty__put(b, ",\"tokens\":");
		ty__put_ll(b, s->tokens);
	}
	if (isfinite(s->lr)) {
		ty__put(b, ",\"lr\":");
		ty__put_double(b, s->lr);
	}
	if (isfinite(s->grad_norm)) {
		ty__put(b, ",\"grad_norm\":");
		ty__put_double(b, s->grad_norm);
	}
	for (size_t i = 0; i < s->n_metrics; i++) {
		if (!isfinite(s->metrics[i].value))
			continue;
		ty__put(b, any ? ",\"" : ",\"metrics\":{\"");
		ty__put(b, s->metrics[i].name);
		ty__put(b, "\":");
		ty__put_double(b, s->metrics[i].value);
		any = 1;
	}
	ty__put(b, any ? "}}\n" : "}\n");
}

/* Report a step with any of its optional fields (ty_step). Rank 0 only. */
static inline int ty_report_step_ex(const ty_step *s)
{
	char small[1024];
	ty__buf b = {small, sizeof(small), 0};
	int rank0, rc;

	if (!s || s->step < 1 || (s->n_metrics && !s->metrics)) {
		errno = EINVAL;
		return -1;
	}
	for (size_t i = 0; i < s->n_metrics; i++) {
		if (!ty__metric_name_ok(s->metrics[i].name)) {
			errno = EINVAL;
			return -1;
		}
		for (size_t j = 0; j < i; j++) {
			if (strcmp(s->metrics[i].name, s->metrics[j].name) == 0) {
				errno = EINVAL;
				return -1;
			}
		}
	}
	if ((rank0 = ty__is_rank0()) < 0)
		return -1;
	ty__step_line(s, &b);
	if (b.len > TY_LINE_MAX) {
		errno = EMSGSIZE;
		return -1;
	}
	if (!rank0)
		return 0;
	if (b.len > b.cap) {
		size_t len = b.len;

		b.p = (char *)malloc(len);
		if (!b.p)
			return -1;
		b.cap = len;
		b.len = 0;
		ty__step_line(s, &b);
	}
	rc = ty__send(b.p, b.len);
	if (b.p != small) {
		int saved = errno;

		free(b.p);
		errno = saved;
	}
	return rc;
}

/*
 * Report that optimizer step `step` (>= 1) finished. Rank 0 only.
 * loss: always sent, null when not finite; tokens: < 0 leaves it out; lr,
 * grad_norm: not finite (NAN) leaves them out.
 */
static inline int ty_report_step(long step, double loss, long long tokens, double lr,
                                 double grad_norm)
{
	ty_step s = TY_STEP_INIT(step);

	s.has_loss = 1;
	s.loss = loss;
	s.tokens = tokens;
	s.lr = lr;
	s.grad_norm = grad_norm;
	return ty_report_step_ex(&s);
}

/* A heartbeat, from any rank; step < 0 leaves the step out. */
static inline int ty_report_progress(long step)
{
	char line[64];
	ty__buf b = {line, sizeof(line), 0};

	ty__put(&b, "{\"type\":\"progress\"");
	if (step >= 0) {
		ty__put(&b, ",\"step\":");
		ty__put_ll(&b, step);
	}
	ty__put(&b, "}\n");
	return ty__send(line, b.len);
}

/*
 * Report that every rank has written and closed its files of step (>= 1).
 * Rank 0 only; synchronise the ranks (a barrier) before: the platform seals
 * the directory's files as soon as it reads this report, then removes it.
 */
static inline int ty_report_checkpoint(long step)
{
	char line[64];
	ty__buf b = {line, sizeof(line), 0};
	int rank0;

	if (step < 1) {
		errno = EINVAL;
		return -1;
	}
	if ((rank0 = ty__is_rank0()) < 0)
		return -1;
	ty__put(&b, "{\"type\":\"checkpoint\",\"step\":");
	ty__put_ll(&b, step);
	ty__put(&b, "}\n");
	return rank0 ? ty__send(line, b.len) : 0;
}

/* mkdir 0700 whatever the umask; an existing directory (not a link) will do. */
static inline int ty__mkdir_0700(const char *path)
{
	struct stat st;

	if (mkdir(path, 0700) == 0)
		return chmod(path, 0700);
	if (errno != EEXIST)
		return -1;
	if (lstat(path, &st) != 0)
		return -1;
	if (!S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		return -1;
	}
	return 0;
}

/*
 * The directory to write step's (>= 1) checkpoint into, into buf (n bytes),
 * created mode 0700 unless it exists: $TRAINYARD_CHECKPOINT_DIR/<step>, or
 * outside the platform checkpoints/<step> under the working directory.
 * Every rank may call it. ERANGE when buf is too small.
 */
static inline int ty_checkpoint_dir(long step, char *buf, size_t n)
{
	const char *base = getenv("TRAINYARD_CHECKPOINT_DIR");
	int len;

	if (step < 1 || !buf) {
		errno = EINVAL;
		return -1;
	}
	if (!base || !*base) {
		base = TY_LOCAL_CHECKPOINT_DIR;
		if (ty__mkdir_0700(base) != 0)
			return -1;
	}
	len = snprintf(buf, n, "%s/%ld", base, step);
	if (len < 0 || (size_t)len >= n) {
		errno = ERANGE;
		return -1;
	}
	return ty__mkdir_0700(buf);
}

/*
 * Hold SIGTERM from now on: it is not delivered but stays pending, which
 * ty_should_stop() sees (the state is the process's, so every source file
 * that includes this header sees the same). Call it in the main thread
 * before starting other threads, which inherit it. Programs this one
 * starts inherit SIGTERM blocked: unblock it in them (posix_spawnattr_setsigmask,
 * or sigprocmask after fork()).
 */
static inline void ty_stop_handler_install(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);
}

/* 1 once SIGTERM has arrived, else 0; installs the stop handler first. */
static inline int ty_should_stop(void)
{
	sigset_t pending;

	ty_stop_handler_install();
	if (sigpending(&pending) != 0)
		return 0;
	return sigismember(&pending, SIGTERM) == 1;
}

#endif
