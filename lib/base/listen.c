/*
 * listen.c - "address:port" settings (listen.h).
 */
#include "listen.h"

#include <arpa/inet.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int listen_parse(const char *spec, struct sockaddr_in *sa)
{
	char host[64];
	const char *colon = strrchr(spec, ':');
	if (!colon || (size_t)(colon - spec) >= sizeof(host))
		return -1;
	memcpy(host, spec, (size_t)(colon - spec));
	host[colon - spec] = '\0';
	char *end;
	long port = strtol(colon + 1, &end, 10);
	if (*end || port < 1 || port > 65535)
		return -1;
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)port);
	return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -1;
}
