/*
 * tls.c - the API's listener: HTTPS, or plain HTTP on loopback only
 * where allowed (tls.h).
 */
#include "tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "storage.h"

#define PEM_MAX (1 << 20) /* a certificate chain or key is far smaller */

/*
 * The PEM file at path, read whole. private: it must also be the service
 * user's with no group or other access (as the master key file).
 * RET malloc'd NUL-terminated text, or NULL with err set.
 */
static char *pem_read(const char *path, const char *what, bool private, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		err_printf(err, errlen, "could not open %s \"%s\": %s", what, path,
		           errno == ELOOP ? "it is a symbolic link" : strerror(errno));
		return NULL;
	}
	storage_private_kind kind = {.what = what};
	struct stat st;
	char *text = NULL;
	if (private ? storage_fd_private(fd, &kind, path, err, errlen) != 0
	            : fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		if (!private)
			err_printf(err, errlen, "%s \"%s\" is not a regular file", what, path);
		goto out;
	}
	text = malloc(PEM_MAX + 1);
	size_t len = 0;
	while (text && len < PEM_MAX) {
		ssize_t k = read(fd, text + len, PEM_MAX - len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			if (k < 0) {
				err_printf(err, errlen, "could not read %s \"%s\": %s", what, path,
				           strerror(errno));
				OPENSSL_cleanse(text, len);
				free(text);
				text = NULL;
			}
			break;
		}
		len += (size_t)k;
	}
	if (text && (len == 0 || len == PEM_MAX || !strstr(text, "-----BEGIN "))) {
		text[len] = '\0';
		err_printf(err, errlen, "%s \"%s\" holds no PEM text (or more than 1 MiB)", what,
		           path);
		OPENSSL_cleanse(text, len);
		free(text);
		text = NULL;
	} else if (text) {
		text[len] = '\0';
	}
out:
	close(fd);
	return text;
}

int api_tls_load(const ty_config *cfg, const struct sockaddr_in *sa, api_tls *t, char *err,
                 size_t errlen)
{
	memset(t, 0, sizeof(*t));
	bool cert = cfg->tls_cert_file[0] != '\0', key = cfg->tls_key_file[0] != '\0';
	if (cert != key) {
		err_printf(err, errlen,
		           "TRAINYARD_TLS_CERT_FILE and TRAINYARD_TLS_KEY_FILE go together: "
		           "set both, or neither");
		return -1;
	}
	if (!cert) {
		bool loopback = (ntohl(sa->sin_addr.s_addr) >> 24) == 127;
		if (!cfg->plain_http || !loopback) {
			err_printf(err, errlen,
			           "the API serves HTTPS: set TRAINYARD_TLS_CERT_FILE and "
			           "TRAINYARD_TLS_KEY_FILE%s",
			           loopback
			               ? " (or TRAINYARD_PLAIN_HTTP=1 for plain HTTP on loopback)"
			               : "; plain HTTP is never served beyond loopback");
			return -1;
		}
		return 0;
	}
	t->cert = pem_read(cfg->tls_cert_file, "TLS certificate file", false, err, errlen);
	t->key = t->cert ? pem_read(cfg->tls_key_file, "TLS key file", true, err, errlen) : NULL;
	if (!t->key) {
		api_tls_release(t);
		return -1;
	}
	t->on = true;
	return 0;
}

void api_tls_release(api_tls *t)
{
	if (t->key) {
		OPENSSL_cleanse(t->key, strlen(t->key));
		free(t->key);
	}
	free(t->cert);
	memset(t, 0, sizeof(*t));
}
