/*
 * h_ui.c - the web view's files (ui/), compiled into the binary: GET /ui
 * (the page), /ui/app.js and /ui/app.css. Public: they hold no data. The
 * page asks for an API token and keeps it in memory only; every call it
 * makes carries it as a bearer token, which a browser never sends by
 * itself, so no other site can make one in the user's name (no cookie,
 * nothing to forge). Its Content-Security-Policy lets it load only these
 * files and talk only to this API.
 */
#include <string.h>

#include "embedded.h"
#include "handlers.h"

#define UI_CSP                                                                                     \
	"default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self';"             \
	" img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

int h_ui(api_req *rq)
{
	static const struct {
		const char *pattern, *file, *type;
	} files[] = {
	    {"/ui", "ui/index.html", "text/html; charset=utf-8"},
	    {"/ui/app.js", "ui/app.js", "text/javascript; charset=utf-8"},
	    {"/ui/app.css", "ui/app.css", "text/css; charset=utf-8"},
	};
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		if (strcmp(rq->rt->pattern, files[i].pattern) == 0) {
			const embedded_file *f = embedded_find(files[i].file);
			if (!f)
				break;
			rq->status = 200;
			rq->raw = f->data;
			rq->raw_len = f->len;
			rq->raw_type = files[i].type;
			rq->csp = UI_CSP;
			return 0;
		}
	return api_fail(rq, ERR_INTERNAL, "the web view's file is missing");
}
