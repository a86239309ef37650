/*
 * sink.c - the runtime_sink calls, through each implementation's table.
 */
#include "sink.h"

int sink_log_line(runtime_sink *s, runtime_stream from, const char *line)
{
	return s->ops->log_line(s, from, line);
}

int sink_metrics_batch(runtime_sink *s, json_t *lines)
{
	return s->ops->metrics_batch(s, lines);
}

int sink_checkpoint_done(runtime_sink *s, int step, const char *manifest_path)
{
	return s->ops->checkpoint_done(s, step, manifest_path);
}

int sink_event(runtime_sink *s, const char *kind, json_t *detail)
{
	return s->ops->event(s, kind, detail);
}

int sink_finish(runtime_sink *s, runtime_outcome *o)
{
	return s->ops->finish(s, o);
}

void sink_tick(runtime_sink *s, double now)
{
	if (s->ops->tick)
		s->ops->tick(s, now);
}

void sink_free(runtime_sink *s)
{
	if (s)
		s->ops->free(s);
}
