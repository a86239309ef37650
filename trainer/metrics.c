/*
 * metrics.c - JSON line metrics.
 */
#include "metrics.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int metrics_open(metrics *m, const char *path, int active, char *err, size_t errlen)
{
	m->f = NULL;
	m->own = 0;
	if (!path || !active)
		return 0;
	if (strcmp(path, "-") == 0) {
		m->f = stdout;
		return 0;
	}
	if (strncmp(path, "fd:", 3) == 0) {
		char *end;
		long fd = strtol(path + 3, &end, 10);
		if (*end || fd < 0 || (m->f = fdopen((int)fd, "a")) == NULL) {
			snprintf(err, errlen, "could not open metrics descriptor \"%s\": %s", path,
			         strerror(errno ? errno : EBADF));
			return -1;
		}
		m->own = 1;
		return 0;
	}
	m->f = fopen(path, "a");
	if (!m->f) {
		snprintf(err, errlen, "could not open metrics file \"%s\": %s", path,
		         strerror(errno));
		return -1;
	}
	m->own = 1;
	return 0;
}

void metrics_close(metrics *m)
{
	if (m->f && m->own)
		fclose(m->f);
	else if (m->f)
		fflush(m->f);
	m->f = NULL;
}

void metrics_emit(metrics *m, const char *type, json_t *fields)
{
	if (!m->f) {
		json_decref(fields);
		return;
	}
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	json_t *line = json_pack("{s:s, s:I}", "type", type, "time_ms",
	                         (json_int_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
	if (fields)
		json_object_update(line, fields);
	/* 9 digits keep a float loss exact, so resumed runs compare bit for bit */
	char *text = json_dumps(line, JSON_COMPACT | JSON_REAL_PRECISION(9));
	if (text) {
		fprintf(m->f, "%s\n", text);
		fflush(m->f);
		free(text);
	}
	json_decref(line);
	json_decref(fields);
}
