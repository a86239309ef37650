/*
 * pipeline.c - the 1F1B schedule of pipeline.h.
 */
#include "pipeline.h"

#include <stdlib.h>
#include <string.h>

enum { TAG_ACTIVATION = 1, TAG_GRADIENT = 2 };

int pipe_slots(int stages, int stage, int m)
{
	int in_flight = stages - stage;
	return in_flight < m ? in_flight : m;
}

/* The CPU's model (gpt.h) as a pipe_model_ops; ctx is the pipeline. */
static int cpu_forward(void *ctx, int slot, const int32_t *inputs, const float *x,
                       const int32_t *targets, float *loss)
{
	pipeline *p = ctx;
	*loss = gpt_forward_part(p->model, &p->hooks, slot, inputs, x, targets);
	return gpt_error(p->model);
}

static const float *cpu_output(void *ctx, int slot)
{
	return gpt_stage_output(((pipeline *)ctx)->model, slot);
}

static int cpu_backward(void *ctx, int slot, float dloss, const float *dy)
{
	pipeline *p = ctx;
	gpt_backward_part(p->model, &p->hooks, slot, dloss, dy);
	return gpt_error(p->model);
}

static const float *cpu_input_grad(void *ctx)
{
	return gpt_stage_input_grad(((pipeline *)ctx)->model);
}

static float *cpu_alloc(size_t n)
{
	return malloc(n * sizeof(float));
}

static void cpu_release(float *buf)
{
	free(buf);
}

static const pipe_model_ops cpu_ops = {cpu_forward,    cpu_output, cpu_backward,
                                       cpu_input_grad, cpu_alloc,  cpu_release};

int pipe_init(pipeline *p)
{
	size_t n = (size_t)p->B * p->T, nc = n * (size_t)p->C;
	if (!p->ops) {
		p->ops = &cpu_ops;
		p->model_ctx = p;
	}
	p->inputs = malloc(n * sizeof(int32_t));
	p->targets = malloc(n * sizeof(int32_t));
	p->x = p->ops->alloc(nc);
	p->dy = p->ops->alloc(nc);
	p->send_out = calloc((size_t)p->slots, sizeof(*p->send_out));
	memset(&p->send_grad, 0, sizeof(p->send_grad));
	if (!p->inputs || !p->targets || !p->x || !p->dy || !p->send_out) {
		pipe_release(p);
		return -1;
	}
	return 0;
}

void pipe_release(pipeline *p)
{
	if (p->send_out)
		for (int i = 0; i < p->slots; i++)
			comm_wait(&p->send_out[i]);
	comm_wait(&p->send_grad);
	free(p->inputs);
	free(p->targets);
	if (p->ops) {
		p->ops->release(p->x);
		p->ops->release(p->dy);
	}
	free(p->send_out);
	p->inputs = p->targets = NULL;
	p->x = p->dy = NULL;
	p->send_out = NULL;
}

static size_t act_bytes(const pipeline *p)
{
	return (size_t)p->B * p->T * p->C * sizeof(float);
}

static int forward(pipeline *p, int i, double *loss_sum)
{
	int slot = i % p->slots, rc;
	bool first = p->stage == 0, last = p->stage == p->stages - 1;
	if ((rc = p->next_batch(p->ctx, p->inputs, p->targets)) < 0)
		return rc;
	if (!first && (rc = comm_recv(p->pp, p->x, act_bytes(p), p->stage - 1, TAG_ACTIVATION)))
		return rc;
	/* the slot's last output must have left before the forward overwrites it */
	if ((rc = comm_wait(&p->send_out[slot])))
		return rc;
	float loss = 0;
	if ((rc = p->ops->forward(p->model_ctx, slot, p->inputs, first ? NULL : p->x,
	                          last ? p->targets : NULL, &loss)))
		return rc;
	if (last)
		*loss_sum += loss;
	else if ((rc = comm_isend(p->pp, p->ops->output(p->model_ctx, slot), act_bytes(p),
	                          p->stage + 1, TAG_ACTIVATION, &p->send_out[slot])))
		return rc;
	return 0;
}

static int backward(pipeline *p, int i, float dloss)
{
	int slot = i % p->slots, rc;
	bool first = p->stage == 0, last = p->stage == p->stages - 1;
	if (!last && (rc = comm_recv(p->pp, p->dy, act_bytes(p), p->stage + 1, TAG_GRADIENT)))
		return rc;
	if ((rc = comm_wait(&p->send_grad)))
		return rc;
	if ((rc = p->ops->backward(p->model_ctx, slot, dloss, last ? NULL : p->dy)))
		return rc;
	if (!first && (rc = comm_isend(p->pp, p->ops->input_grad(p->model_ctx), act_bytes(p),
	                               p->stage - 1, TAG_GRADIENT, &p->send_grad)))
		return rc;
	return 0;
}

int pipe_step(pipeline *p, int m, float dloss, double *loss_sum)
{
	int warm = p->stages - p->stage - 1, rc = 0;
	if (warm > m)
		warm = m;
	*loss_sum = 0;
	for (int i = 0; rc == 0 && i < warm; i++)
		rc = forward(p, i, loss_sum);
	for (int i = warm; rc == 0 && i < m; i++)
		if ((rc = forward(p, i, loss_sum)) == 0)
			rc = backward(p, i - warm, dloss);
	for (int i = m - warm; rc == 0 && i < m; i++)
		rc = backward(p, i, dloss);
	for (int i = 0; rc == 0 && i < p->slots; i++)
		rc = comm_wait(&p->send_out[i]);
	if (rc == 0)
		rc = comm_wait(&p->send_grad);
	return rc;
}
