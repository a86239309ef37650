/*
 * test_workers.c - the request threads' pool (api/workers.h): every task
 * runs once, one worker takes them in submission order, tasks submitted
 * beside a busy worker run on the others, stopping runs what is queued,
 * and a stopped pool refuses.
 */
#include <check.h>
#include <pthread.h>
#include <stddef.h>
#include <time.h>
#include <unistd.h>

#include "unit.h"
#include "workers.h"

#define TASKS 200

typedef struct job_task {
	worker_task t;
	int id;
	int runs;
	pthread_t by;
} job_task;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int order[TASKS];
static int done;

/* while set, a task whose id is 0 waits on it (a worker kept busy) */
static volatile int hold;

static void run(worker_task *t)
{
	job_task *j = (job_task *)(void *)((char *)t - offsetof(job_task, t));
	while (j->id == 0 && hold)
		usleep(1000);
	pthread_mutex_lock(&mu);
	j->runs++;
	j->by = pthread_self();
	order[done++] = j->id;
	pthread_mutex_unlock(&mu);
}

static void reset(job_task *v, int n)
{
	done = 0;
	for (int i = 0; i < n; i++) {
		v[i].t.run = run;
		v[i].id = i;
		v[i].runs = 0;
	}
}

START_TEST(one_worker_runs_each_once_in_order)
{
	static job_task v[TASKS];
	reset(v, TASKS);
	workers *w = workers_start(1);
	ck_assert_ptr_nonnull(w);
	for (int i = 0; i < TASKS; i++)
		ck_assert_int_eq(workers_submit(w, &v[i].t), 0);
	workers_stop(w); /* runs what is queued */
	ck_assert_int_eq(done, TASKS);
	for (int i = 0; i < TASKS; i++) {
		ck_assert_int_eq(v[i].runs, 1);
		ck_assert_int_eq(order[i], i);
	}
	job_task late = {.t.run = run, .id = TASKS};
	ck_assert_int_eq(workers_submit(w, &late.t), -1);
	ck_assert_int_eq(late.runs, 0);
	workers_free(w);
}
END_TEST

START_TEST(a_busy_worker_holds_up_no_other_task)
{
	static job_task v[TASKS];
	reset(v, TASKS);
	hold = 1;
	workers *w = workers_start(3);
	ck_assert_ptr_nonnull(w);
	for (int i = 0; i < TASKS; i++)
		ck_assert_int_eq(workers_submit(w, &v[i].t), 0);
	/* task 0 is held: the other workers run every other task meanwhile */
	for (int i = 0; i < 5000; i++) {
		pthread_mutex_lock(&mu);
		int d = done;
		pthread_mutex_unlock(&mu);
		if (d == TASKS - 1)
			break;
		usleep(1000);
	}
	pthread_mutex_lock(&mu);
	ck_assert_int_eq(done, TASKS - 1);
	ck_assert_int_eq(v[0].runs, 0);
	pthread_mutex_unlock(&mu);
	hold = 0;
	workers_free(w); /* stops, and task 0 finishes first */
	ck_assert_int_eq(v[0].runs, 1);
	ck_assert_int_eq(done, TASKS);
	int others = 0;
	for (int i = 1; i < TASKS; i++)
		others += !pthread_equal(v[i].by, v[0].by);
	ck_assert_int_eq(others, TASKS - 1);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("workers");
	TCase *tc = tcase_create("pool");
	tcase_add_test(tc, one_worker_runs_each_once_in_order);
	tcase_add_test(tc, a_busy_worker_holds_up_no_other_task);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
