/*
 * workers.c - a fixed pool of threads taking tasks from one FIFO queue
 * (workers.h has the design).
 */
#include "workers.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "log.h"

struct workers {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	worker_task *head, *tail; /* queued, oldest first */
	bool stopping;
	int n;
	pthread_t th[];
};

/*
 * A worker yields the CPU to the polling threads: on a busy machine the
 * scheduler gives the CPU-heavy polling threads (TLS for many
 * connections) less than their due, and every connection of a polling
 * thread kept waiting waits with it (the p99 of reads went from 6 to
 * 30-300 ms on 2 cores with 8 workers). Linux keeps a nice value per
 * thread; raising one's own needs no privilege.
 */
#define WORKERS_NICE 8

static void worker_yield_to_polling(void)
{
	errno = 0;
	int now = getpriority(PRIO_PROCESS, (id_t)gettid());
	if (errno == 0 && setpriority(PRIO_PROCESS, (id_t)gettid(), now + WORKERS_NICE) != 0)
		log_printf(LOG_WARN, "request worker: could not lower its priority: %s",
		           strerror(errno));
}

static void *worker_main(void *arg)
{
	workers *w = arg;
	worker_yield_to_polling();
	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (!w->head && !w->stopping)
			pthread_cond_wait(&w->cv, &w->mu);
		worker_task *t = w->head;
		if (!t)
			break; /* stopping, and nothing left to run */
		w->head = t->next;
		if (!w->head)
			w->tail = NULL;
		pthread_mutex_unlock(&w->mu);
		t->next = NULL;
		t->run(t);
		pthread_mutex_lock(&w->mu);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

workers *workers_start(int n)
{
	workers *w = calloc(1, sizeof(*w) + (size_t)n * sizeof(pthread_t));
	if (!w)
		return NULL;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	for (; w->n < n; w->n++) {
		int rc = pthread_create(&w->th[w->n], NULL, worker_main, w);
		if (rc) {
			log_printf(LOG_ERROR, "could not start request worker %d of %d: %s",
			           w->n + 1, n, strerror(rc));
			workers_free(w);
			return NULL;
		}
	}
	return w;
}

int workers_submit(workers *w, worker_task *t)
{
	t->next = NULL;
	pthread_mutex_lock(&w->mu);
	bool stopping = w->stopping;
	if (!stopping) {
		if (w->tail)
			w->tail->next = t;
		else
			w->head = t;
		w->tail = t;
		pthread_cond_signal(&w->cv);
	}
	pthread_mutex_unlock(&w->mu);
	return stopping ? -1 : 0;
}

void workers_stop(workers *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	bool was = w->stopping;
	w->stopping = true;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	if (was)
		return;
	for (int i = 0; i < w->n; i++)
		pthread_join(w->th[i], NULL);
}

void workers_free(workers *w)
{
	if (!w)
		return;
	workers_stop(w);
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	free(w);
}
