/*
 * example.c - a program that pretends to train, using trainyard.h.
 *
 *   cc -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -I sdk/c -o example sdk/c/example.c
 *
 * Its state is one number, w, which every step moves towards 1; its loss
 * is 1 - w. It trains TRAINYARD_STEPS steps (20 when unset), reports each
 * one, checkpoints every EXAMPLE_EVERY steps (5 when unset) and after the
 * last, and resumes from TRAINYARD_RESUME_DIR when the platform names a
 * checkpoint. On SIGTERM it checkpoints the step it has finished and exits
 * 16. EXAMPLE_STEP_MS makes each step take that long (default 0).
 *
 * It runs as one rank; a program of several would put a barrier of its
 * ranks before ty_report_checkpoint(), which sends from rank 0 only.
 */
#include "trainyard.h"

#include <time.h>

#define TOKENS_PER_STEP 4096

/* Write step's state into its checkpoint directory, then report it. */
static int checkpoint(long step, double w)
{
	char dir[4096], path[4200];
	FILE *f;

	if (ty_checkpoint_dir(step, dir, sizeof(dir)) != 0) {
		perror("example: checkpoint directory");
		return -1;
	}
	snprintf(path, sizeof(path), "%s/state.txt", dir);
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		return -1;
	}
	fprintf(f, "%ld %.17g\n", step, w);
	if (fclose(f) != 0) { /* closed before the report: the platform reads it next */
		perror(path);
		return -1;
	}
	/* several ranks: a barrier here, so that every rank's files are written */
	if (ty_report_checkpoint(step) != 0) {
		perror("example: report checkpoint");
		return -1;
	}
	return 0;
}

/* The checkpoint to resume from: its step into *step (0: none), its w into *w. */
static int resume(long *step, double *w)
{
	char path[4200];
	long saved;
	FILE *f;
	int n;

	*step = ty_resume_step();
	if (*step < 0) {
		*step = 0;
		return errno == ENOENT ? 0 : -1;
	}
	snprintf(path, sizeof(path), "%s/state.txt", ty_resume_dir());
	f = fopen(path, "r");
	if (!f) {
		perror(path);
		return -1;
	}
	n = fscanf(f, "%ld %lf", &saved, w);
	fclose(f);
	if (n != 2 || saved != *step) {
		fprintf(stderr, "example: %s does not hold step %ld\n", path, *step);
		return -1;
	}
	printf("resumed from step %ld\n", *step);
	return 0;
}

static long env_long(const char *name, long dflt)
{
	const char *s = getenv(name);

	return s && *s ? atol(s) : dflt;
}

int main(void)
{
	long steps = ty_steps(), every, ms, done = 0;
	struct timespec pause;
	double w = 0.0;

	ty_stop_handler_install(); /* before anything else: SIGTERM is ours to handle */
	if (steps < 0 && errno == ENOENT)
		steps = 20;
	every = env_long("EXAMPLE_EVERY", 5);
	ms = env_long("EXAMPLE_STEP_MS", 0);
	if (steps < 0 || every < 1 || ms < 0 || ty_rank() < 0) {
		fprintf(stderr, "example: invalid configuration\n");
		return TY_EXIT_INVALID_CONFIG;
	}
	ty_report_progress(-1); /* alive, before the first step */
	if (resume(&done, &w) != 0)
		return 1;
	pause.tv_sec = ms / 1000;
	pause.tv_nsec = (ms % 1000) * 1000000L;
	for (long step = done + 1; step <= steps; step++) {
		if (ms > 0)
			nanosleep(&pause, NULL);
		w += 0.25 * (1.0 - w);
		if (ty_report_step(step, 1.0 - w, TOKENS_PER_STEP, 1e-3, 0.5 * (1.0 - w)) != 0) {
			perror("example: report step");
			return 1;
		}
		done = step;
		if (ty_should_stop()) {
			printf("stopping after step %ld\n", step);
			return checkpoint(step, w) == 0 ? TY_EXIT_STOPPED : 1;
		}
		if ((step % every == 0 || step == steps) && checkpoint(step, w) != 0)
			return 1;
	}
	printf("finished %ld steps\n", done);
	return TY_EXIT_OK;
}
