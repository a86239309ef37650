// fuzz-sources: api/*.c
/*
 * fuzz_router.c - libFuzzer target for the route matcher over the real
 * route table. Input: "METHOD PATH" (first space splits them).
 * Invariants: a match names a route of that method (a GET route for HEAD)
 * whose pattern has one placeholder per captured value; every value is
 * non-empty, within the size cap, and free of '/' and NUL; matching is
 * deterministic.
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "router.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 4096)
		return 0;
	char *text = malloc(size + 1);
	memcpy(text, data, size);
	text[size] = '\0';
	char *space = strchr(text, ' ');
	const char *method = "GET", *path = text;
	if (space) {
		*space = '\0';
		method = text;
		path = space + 1;
	}
	size_t n;
	const route *table = routes_table(&n);
	const route *r = NULL, *r2 = NULL;
	route_params p, p2;
	route_match m = router_match(table, n, method, path, &r, &p);
	route_match m2 = router_match(table, n, method, path, &r2, &p2);
	assert(m == m2);
	if (m == ROUTE_FOUND) {
		assert(r == r2);
		/* HEAD is answered by every GET route (router.h) */
		assert(strcmp(r->method, method) == 0 ||
		       (strcmp(method, "HEAD") == 0 && strcmp(r->method, "GET") == 0));
		int holes = 0;
		for (const char *c = r->pattern; *c; c++)
			holes += *c == '{';
		assert(p.n == holes);
		for (int i = 0; i < p.n; i++) {
			size_t len = strlen(p.values[i]);
			assert(len > 0 && len <= ROUTE_PARAM_MAX);
			assert(strchr(p.values[i], '/') == NULL);
			assert(strcmp(p.values[i], p2.values[i]) == 0);
		}
	}
	free(text);
	return 0;
}
