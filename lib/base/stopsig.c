/*
 * stopsig.c - the stop signals' count (stopsig.h).
 */
#include "stopsig.h"

#include <signal.h>
#include <string.h>

static volatile sig_atomic_t received;

static void on_stop(int sig)
{
	(void)sig;
	if (received < 100)
		received++;
}

void stopsig_install(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop; /* no SA_RESTART */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
}

int stopsig_count(void)
{
	return received;
}

void stopsig_request(void)
{
	if (received == 0)
		received = 1;
}
