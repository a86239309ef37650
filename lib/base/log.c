/*
 * log.c - JSON line logger.
 */
#include "clock.h"
#include "log.h"

#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static log_level min_level = LOG_INFO;
static const char *const level_names[] = {"debug", "info", "warn", "error"};

int log_level_parse(const char *name, log_level *out)
{
	for (int i = 0; i < 4; i++) {
		if (strcmp(name, level_names[i]) == 0) {
			*out = (log_level)i;
			return 0;
		}
	}
	return -1;
}

void log_set_level(log_level lvl)
{
	min_level = lvl;
}

int log_enabled(log_level lvl)
{
	return lvl >= min_level;
}

void log_event(log_level lvl, const char *msg, json_t *fields)
{
	if (!log_enabled(lvl)) {
		json_decref(fields);
		return;
	}
	char when[CLOCK_RFC3339_SIZE];
	clock_rfc3339(clock_epoch_s(), when);

	json_t *line = json_object();
	json_object_set_new(line, "ts", json_string(when));
	json_object_set_new(line, "level", json_string(level_names[lvl]));
	json_object_set_new(line, "msg", json_string(msg));
	if (fields)
		json_object_update_missing(line, fields);
	char *text = json_dumps(line, JSON_COMPACT | JSON_REAL_PRECISION(6));
	if (text) {
		/* one write per line keeps lines whole between threads */
		fprintf(stderr, "%s\n", text);
		free(text);
	}
	json_decref(line);
	json_decref(fields);
}

void log_printf(log_level lvl, const char *fmt, ...)
{
	if (!log_enabled(lvl))
		return;
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	log_event(lvl, buf, NULL);
}
