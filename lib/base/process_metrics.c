/*
 * process_metrics.c - see process_metrics.h. /proc/self/stat's fields
 * (proc(5)): utime and stime in clock ticks, starttime in ticks after
 * boot (boot time: /proc/stat's btime), vsize in bytes, rss in pages.
 */
#include "process_metrics.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "version.h"

int process_metrics_register(process_metrics *m, prom_registry *r, const char *program)
{
	memset(m, 0, sizeof(*m));
	pthread_mutex_init(&m->mu, NULL);
	m->mu_ready = true;
	const char *const build[] = {"program", "version", "revision"};
	m->cpu =
	    prom_counter(r, "process_cpu_seconds_total",
	                 "CPU time this process has used, user and system, in seconds", 0, NULL);
	m->resident = prom_gauge(r, "process_resident_memory_bytes",
	                         "Memory of this process held in RAM, in bytes", 0, NULL);
	m->virtual_bytes = prom_gauge(r, "process_virtual_memory_bytes",
	                              "Address space this process has mapped, in bytes", 0, NULL);
	m->open_fds =
	    prom_gauge(r, "process_open_fds", "File descriptors this process holds open", 0, NULL);
	m->max_fds =
	    prom_gauge(r, "process_max_fds",
	               "File descriptors this process may hold open (its soft limit)", 0, NULL);
	m->start = prom_gauge(r, "process_start_time_seconds",
	                      "When this process started, in seconds since the epoch", 0, NULL);
	m->build = prom_gauge(r, "trainyard_build_info",
	                      "Always 1: the program, its release and the commit it was built from",
	                      3, build);
	if (!m->cpu || !m->resident || !m->virtual_bytes || !m->open_fds || !m->max_fds ||
	    !m->start || !m->build)
		return -1;
	const char *const values[] = {program, trainyard_version, trainyard_revision};
	prom_set(m->build, values, 1);
	process_metrics_update(m);
	return 0;
}

/* RET: the boot time in seconds since the epoch (/proc/stat's btime), or -1. */
static double boot_time(void)
{
	FILE *f = fopen("/proc/stat", "r");
	if (!f)
		return -1;
	char line[256];
	double bt = -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "btime %lf", &bt) == 1)
			break;
	fclose(f);
	return bt;
}

static int count_open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the directory's own descriptor */
}

void process_metrics_update(process_metrics *m)
{
	char buf[1024];
	FILE *f = fopen("/proc/self/stat", "r");
	size_t len = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	if (f)
		fclose(f);
	buf[len] = '\0';
	/* the fields after the command's name, which may hold spaces and parentheses */
	const char *rest = strrchr(buf, ')');
	unsigned long long utime, stime, start, vsize;
	long long rss;
	double tick = (double)sysconf(_SC_CLK_TCK), page = (double)sysconf(_SC_PAGESIZE);
	if (rest &&
	    sscanf(rest + 2,
	           "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d"
	           " %*d %*d %llu %llu %lld",
	           &utime, &stime, &start, &vsize, &rss) == 5 &&
	    tick > 0) {
		double cpu = (double)(utime + stime) / tick;
		pthread_mutex_lock(&m->mu);
		if (cpu > m->cpu_counted) {
			prom_add(m->cpu, NULL, cpu - m->cpu_counted);
			m->cpu_counted = cpu;
		}
		pthread_mutex_unlock(&m->mu);
		prom_set(m->virtual_bytes, NULL, (double)vsize);
		prom_set(m->resident, NULL, (double)rss * page);
		double bt = boot_time();
		if (bt > 0)
			prom_set(m->start, NULL, bt + (double)start / tick);
	}
	int fds = count_open_fds();
	if (fds >= 0)
		prom_set(m->open_fds, NULL, fds);
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		prom_set(m->max_fds, NULL, (double)rl.rlim_cur);
}

void process_metrics_free(process_metrics *m)
{
	if (m->mu_ready)
		pthread_mutex_destroy(&m->mu);
	memset(m, 0, sizeof(*m));
}
