/*
 * listen.h - "address:port" settings (TRAINYARD_LISTEN and the like).
 */
#ifndef TY_LISTEN_H
#define TY_LISTEN_H

#include <netinet/in.h>

/* Parse "IPv4:port" into *sa. RET 0, or -1 when it is not one. */
int listen_parse(const char *spec, struct sockaddr_in *sa);

#endif
