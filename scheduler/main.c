/*
 * main.c - trainyard-scheduler: wait for leadership, then run cycles until
 * told to stop; losing the lease (leader.h) goes back to waiting.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "batch.h"
#include "config.h"
#include "db.h"
#include "leader.h"
#include "log.h"
#include "migrate.h"
#include "scheduler.h"
#include "stopsig.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: trainyard-scheduler [--once]\n\n"
	           "Admits queued jobs under their tenants' quotas and fair share, hands them to\n"
	           "Slurm and follows them to their end. Several may run: one leads (a lease\n"
	           "in PostgreSQL), the others wait to take over. Settings come from\n"
	           "TRAINYARD_* environment variables and SLURM_CONF; see scheduler/README.md.\n"
	           "  --once   take the lead, run one cycle, exit (0, or 1 when it failed)\n");
}

/* RET 0 when the schema is exactly what this binary knows. */
static int schema_ok(sched *s)
{
	char err[512];
	if (migrate_check(s->db, err, sizeof(err)) < 0) {
		log_printf(LOG_ERROR, "%s", err);
		return -1;
	}
	return 0;
}

/*
 * Cycles while leading: the lease is checked (and renewed when due)
 * before each, and renewed while sleeping between them.
 * RET 0 when told to stop, 1 when the lead was lost, -1 (--once) when the
 * cycle failed.
 */
static int lead(sched *s, bool once)
{
	for (;;) {
		if (!leader_holds(s)) {
			log_printf(LOG_WARN, "scheduler %s lost the lead", s->owner);
			return 1;
		}
		int rc = sched_cycle(s);
		if (once)
			return rc < 0 ? -1 : 0;
		if (stopsig_count())
			return 0;
		leader_sleep_ms(s, s->cfg->sched_interval_ms);
		if (stopsig_count())
			return 0;
	}
}

int main(int argc, char **argv)
{
	bool once = false;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--once") == 0) {
			once = true;
		} else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			return 0;
		} else {
			usage(stderr);
			return 2;
		}
	}
	ty_config cfg;
	if (config_load_daemon(&cfg, "trainyard-scheduler") < 0)
		return 2;
	static sched s;
	if (sched_setup(&s, &cfg) < 0)
		return 1;
	stopsig_install();
	sl_init();
	if (sched_telemetry_start(&s.tm, cfg.sched_metrics_listen) < 0)
		return 2;
	log_printf(LOG_INFO, "scheduler %s: worker %s, spool %s", s.owner, s.worker_bin, s.spool);
	int rc = 0;
	while (stopsig_count() == 0) {
		int w = leader_wait(&s, cfg.sched_interval_ms);
		if (w > 0)
			break;
		if (w < 0) {
			if (once) {
				rc = 1;
				break;
			}
			sched_sleep_ms(cfg.sched_interval_ms);
			continue;
		}
		if (schema_ok(&s) < 0) {
			rc = 1;
			break;
		}
		sched_gauge(s.tm.leader, NULL, 1);
		int l = lead(&s, once);
		sched_gauge(s.tm.leader, NULL, 0);
		if (once) {
			rc = l < 0 ? 1 : 0;
			break;
		}
		if (l == 0)
			break;
		leader_release(&s);
	}
	leader_release(&s);
	free(s.sj);
	sl_fini();
	sched_telemetry_stop(&s.tm);
	log_printf(LOG_INFO,
	           "scheduler %s: %ld cycles, %ld admitted, %ld submitted, %ld ended, "
	           "%ld retried, %ld hung, %ld recovered",
	           s.owner, s.stats.cycles, s.stats.admitted, s.stats.submitted, s.stats.ended,
	           s.stats.retried, s.stats.hung, s.stats.recovered);
	return rc;
}
