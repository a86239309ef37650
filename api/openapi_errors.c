/*
 * openapi_errors.c - see openapi_errors.h. Each rule names the step of
 * the request path (api/README.md) that answers it.
 */
#include "openapi_errors.h"

size_t openapi_route_errors(const route *r, openapi_error out[OPENAPI_ERRORS_MAX])
{
	size_t n = 0;
	bool upload = r->flags & ROUTE_UPLOAD;
	bool public = r->flags & ROUTE_PUBLIC;
	/* server.c: any body is capped and must be of the route's media type (an upload
	 * checks its own); any other route's body is JSON, parsed before the handler
	 * whether it takes one or not (an upload's own checks answer its 400) */
	out[n++] = (openapi_error){"413", "BodyTooLarge"};
	out[n++] = (openapi_error){"415", "UnsupportedMedia"};
	if (!upload)
		out[n++] = (openapi_error){"400", "BadBody"};
	/* auth.c: the token, or the attempt's credential, and the rate limits */
	if (!public) {
		out[n++] =
		    (openapi_error){"401", r->scope == SCOPE_ATTEMPT ? "AttemptUnauthenticated"
		                                                     : "Unauthenticated"};
		out[n++] = (openapi_error){"429", "RateLimited"};
	}
	/* api_db(): every route that is not answered from memory may wait for the database */
	if (!(r->flags & ROUTE_MEMORY))
		out[n++] = (openapi_error){"503", "DbUnavailable"};
	out[n++] = (openapi_error){"500", "InternalError"};
	return n;
}
