/*
 * http.c - yardctl's requests (lib/base/httpc.h) and the mapping of their
 * outcome to exit statuses.
 */
#include "http.h"

#include <stdlib.h>
#include <string.h>

#include "httpc.h"
#include "output.h"
#include "url.h"

int http_exit_status(long status)
{
	if (status >= 200 && status < 300)
		return CLI_OK;
	if (status == 401 || status == 403)
		return CLI_AUTH;
	if (status == 404)
		return CLI_NOT_FOUND;
	if (status >= 400 && status < 500)
		return CLI_REFUSED;
	return CLI_SERVER; /* no answer, 5xx, or nothing this client expects */
}

int http_exit_from_err(err_code e)
{
	return e == ERR_OK ? CLI_OK : http_exit_status(err_info(e)->status);
}

static bool has_token(const cli_ctx *ctx)
{
	return ctx->token && *ctx->token;
}

/*
 * Carry out the exchange. OUT: *a. RET CLI_OK when the server answered,
 * or an exit status after printing the transport's error.
 */
static int transport(const cli_ctx *ctx, const http_request *req, FILE *stream_to, httpc_answer *a)
{
	char *url = url_join(ctx->url, req->path);
	if (!url) {
		fprintf(stderr, "yardctl: out of memory\n");
		memset(a, 0, sizeof(*a));
		return CLI_SERVER;
	}
	httpc_request r = {
	    .method = req->method,
	    .url = url,
	    .bearer = has_token(ctx) ? ctx->token : NULL,
	    .idempotency_key = req->idempotency_key,
	    .body = req->body,
	    .body_len = req->body_len,
	    .upload_from = req->upload_from,
	    .upload_size = req->upload_size,
	    .content_type = req->content_type,
	    .agent = "yardctl",
	    .ca_file = ctx->ca_file,
	    .connect_timeout_s = HTTP_CONNECT_TIMEOUT_S,
	    /* a stream lasts as the server sends, an upload as long as the file */
	    .timeout_s = stream_to || req->upload_from ? 0 : HTTP_TIMEOUT_S,
	    /* but an upload that stalls fails */
	    .low_speed_bps = req->upload_from ? HTTP_STALL_BPS : 0,
	    .low_speed_time_s = req->upload_from ? HTTP_STALL_S : 0,
	    .answer_max = HTTP_BODY_MAX,
	    .stream_to = stream_to,
	};
	int rc = httpc_send(NULL, &r, a) == 0 ? CLI_OK : CLI_SERVER;
	if (rc != CLI_OK && a->read_failed) {
		fprintf(stderr, "yardctl: %s\n", a->error);
		rc = CLI_USAGE;
	} else if (rc != CLI_OK && a->too_big)
		fprintf(stderr, "yardctl: the answer from %s is larger than %u bytes\n", ctx->url,
		        HTTP_BODY_MAX);
	else if (rc != CLI_OK)
		fprintf(stderr, "yardctl: could not reach %s: %s\n", ctx->url, a->error);
	free(url);
	return rc;
}

/*
 * Turn the answer into *resp or, for a failure, a message and its status.
 * A 401 to a request sent without a token says how to give one: the
 * server's detail speaks of headers, which a yardctl user never writes.
 */
static int answer_handle(const cli_ctx *ctx, const httpc_answer *a, json_t **resp)
{
	long status = a->status;
	json_error_t jerr;
	json_t *j = a->len ? json_loadb(a->body, a->len, JSON_DECODE_ANY, &jerr) : NULL;
	int rc = http_exit_status(status);
	if (rc != CLI_OK && status == 401 && !has_token(ctx)) {
		fprintf(stderr, "yardctl: no API token: set TRAINYARD_TOKEN or pass --token\n");
		json_decref(j);
		return rc;
	}
	if (rc != CLI_OK) {
		output_problem(stderr, j, status);
		json_decref(j);
		return rc;
	}
	if (a->len && !j) {
		fprintf(stderr, "yardctl: the server's answer is not JSON: %s\n", jerr.text);
		return CLI_SERVER;
	}
	*resp = j;
	return CLI_OK;
}

/* RET: CLI_OK, or CLI_USAGE after saying the token cannot travel in a header. */
static int token_ok(const cli_ctx *ctx)
{
	if (has_token(ctx) && !httpc_header_value_ok(ctx->token)) {
		fprintf(stderr, "yardctl: the token holds characters a header cannot carry\n");
		return CLI_USAGE;
	}
	return CLI_OK;
}

int http_call(const cli_ctx *ctx, const http_request *req, json_t **resp)
{
	*resp = NULL;
	int rc = token_ok(ctx);
	if (rc != CLI_OK)
		return rc;
	httpc_answer a;
	rc = transport(ctx, req, NULL, &a);
	if (rc == CLI_OK)
		rc = answer_handle(ctx, &a, resp);
	httpc_answer_release(&a); /* it may hold a new token */
	return rc;
}

int http_stream(const cli_ctx *ctx, const char *path, FILE *out, bool *empty)
{
	http_request req = {.method = "GET", .path = path};
	int rc = token_ok(ctx);
	if (empty)
		*empty = false;
	if (rc != CLI_OK)
		return rc;
	httpc_answer a;
	rc = transport(ctx, &req, out, &a);
	if (rc == CLI_OK && !a.streamed) {
		json_t *j = NULL;
		rc = answer_handle(ctx, &a, &j);
		json_decref(j);
		if (empty)
			*empty = rc == CLI_OK;
	}
	httpc_answer_release(&a);
	return rc;
}

int http_upload(const cli_ctx *ctx, const char *path, const char *content_type, FILE *from,
                long long size, json_t **resp)
{
	http_request req = {.method = "POST",
	                    .path = path,
	                    .upload_from = from,
	                    .upload_size = size,
	                    .content_type = content_type};
	return http_call(ctx, &req, resp);
}

int http_json(const cli_ctx *ctx, const char *method, const char *path, const json_t *body,
              json_t **resp)
{
	http_request req = {.method = method, .path = path};
	char *text = NULL;
	if (body) {
		text = json_dumps(body, JSON_COMPACT);
		if (!text) {
			fprintf(stderr, "yardctl: out of memory\n");
			*resp = NULL;
			return CLI_SERVER;
		}
		req.body = text;
		req.body_len = strlen(text);
	}
	int rc = http_call(ctx, &req, resp);
	free(text);
	return rc;
}
