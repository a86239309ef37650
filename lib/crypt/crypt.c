/*
 * crypt.c - keys: generation, the master key, wrapping, object contexts,
 * and the file descriptor sink and source.
 */
#include "crypt.h"
#include "crypt_aead.h"
#include "error.h"
#include "hex.h"
#include "storage.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MASTER_KEY_ENV "TRAINYARD_MASTER_KEY"

/* ---- keys ----------------------------------------------------------- */

int crypt_key_generate(crypt_key *k)
{
	if (RAND_bytes(k->bytes, sizeof(k->bytes)) != 1) {
		crypt_key_clear(k);
		return -ERR_INTERNAL;
	}
	return 0;
}

void crypt_key_clear(crypt_key *k)
{
	if (k != NULL)
		OPENSSL_cleanse(k->bytes, sizeof(k->bytes));
}

bool crypt_key_from_hex(const char *hex, size_t len, crypt_key *out)
{
	if (hex_decode(hex, len, out->bytes, CRYPT_KEY_LEN))
		return true;
	crypt_key_clear(out);
	return false;
}

/* ---- the master key ------------------------------------------------- */

/* A key file that anyone but its owner, the service user, could read or swap is refused. */
static const storage_private_kind key_file = {.what = "master key file"};

int crypt_key_file_read(const char *path, const char *what, unsigned char *out, size_t n, char *err,
                        size_t errlen)
{
	storage_private_kind kind = {.what = what};
	char text[2 * CRYPT_KEY_FILE_MAX + 3];
	size_t len = 0;
	int rc = 0;
	if (n > CRYPT_KEY_FILE_MAX)
		return -ERR_INTERNAL;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ELOOP)
			err_printf(err, errlen, "%s \"%s\" is a symbolic link", what, path);
		else
			err_printf(err, errlen, "could not open %s \"%s\": %s", what, path,
			           strerror(errno));
		return -ERR_MASTER_KEY_INVALID;
	}
	if (storage_fd_private(fd, &kind, path, err, errlen) != 0)
		rc = -ERR_MASTER_KEY_INVALID;
	while (rc == 0 && len < 2 * n + 2) {
		ssize_t k = read(fd, text + len, 2 * n + 2 - len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			err_printf(err, errlen, "could not read %s \"%s\": %s", what, path,
			           strerror(errno));
			rc = -ERR_MASTER_KEY_INVALID;
		}
		if (k <= 0)
			break;
		len += (size_t)k;
	}
	close(fd);
	if (rc == 0 && len == 2 * n + 1 && text[len - 1] == '\n')
		len--;
	if (rc == 0 && !hex_decode(text, len, out, n)) {
		OPENSSL_cleanse(out, n);
		err_printf(err, errlen,
		           "%s \"%s\" must hold %zu hex digits and an optional newline", what, path,
		           2 * n);
		rc = -ERR_MASTER_KEY_INVALID;
	}
	OPENSSL_cleanse(text, sizeof(text));
	return rc;
}

int crypt_master_load_file(const char *path, crypt_key *out, char *err, size_t errlen)
{
	crypt_key_clear(out);
	int rc = crypt_key_file_read(path, key_file.what, out->bytes, CRYPT_KEY_LEN, err, errlen);
	if (rc)
		crypt_key_clear(out);
	return rc;
}

/* Overwrite the variable's bytes where the process keeps them, then drop it. */
static void clear_master_key_env(void)
{
	char *v = getenv(MASTER_KEY_ENV);
	if (v != NULL)
		OPENSSL_cleanse(v, strlen(v));
	unsetenv(MASTER_KEY_ENV);
}

int crypt_master_from_config(const ty_config *cfg, crypt_key *out, char *err, size_t errlen)
{
	bool have_file = cfg->master_key_file != NULL && cfg->master_key_file[0] != '\0';
	bool have_key = cfg->master_key != NULL && cfg->master_key[0] != '\0';
	int rc = 0;
	crypt_key_clear(out);
	if (have_file && have_key) {
		err_printf(err, errlen,
		           "both TRAINYARD_MASTER_KEY_FILE and TRAINYARD_MASTER_KEY are set: set "
		           "only one");
		rc = -ERR_MASTER_KEY_INVALID;
	} else if (have_file) {
		rc = crypt_master_load_file(cfg->master_key_file, out, err, errlen);
	} else if (have_key) {
		if (!crypt_key_from_hex(cfg->master_key, strlen(cfg->master_key), out)) {
			err_printf(err, errlen, "TRAINYARD_MASTER_KEY must be 64 hex digits");
			rc = -ERR_MASTER_KEY_INVALID;
		}
	} else {
		err_printf(err, errlen,
		           "no master key: set TRAINYARD_MASTER_KEY_FILE or TRAINYARD_MASTER_KEY");
		rc = -ERR_MASTER_KEY_INVALID;
	}
	clear_master_key_env();
	return rc;
}

int crypt_master_previous_from_config(const ty_config *cfg, crypt_key *out, char *err,
                                      size_t errlen)
{
	crypt_key_clear(out);
	if (cfg->master_key_previous_file == NULL || cfg->master_key_previous_file[0] == '\0')
		return 0;
	int rc = crypt_key_file_read(cfg->master_key_previous_file, "previous master key file",
	                             out->bytes, CRYPT_KEY_LEN, err, errlen);
	if (rc)
		crypt_key_clear(out);
	return rc ? rc : 1;
}

#define KEY_ID_LABEL "trainyard key id v1"

void crypt_key_id(const crypt_key *k, char id[CRYPT_KEY_ID_LEN + 1])
{
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	int ok = c != NULL && EVP_DigestInit_ex(c, EVP_sha256(), NULL) == 1 &&
	         EVP_DigestUpdate(c, KEY_ID_LABEL, strlen(KEY_ID_LABEL)) == 1 &&
	         EVP_DigestUpdate(c, k->bytes, CRYPT_KEY_LEN) == 1 &&
	         EVP_DigestFinal_ex(c, d, &n) == 1 && n >= CRYPT_KEY_ID_BYTES;
	EVP_MD_CTX_free(c);
	if (!ok)
		memset(d, 0, sizeof(d)); /* an all-zero id matches no stored row's */
	hex_encode(d, CRYPT_KEY_ID_BYTES, id);
	OPENSSL_cleanse(d, sizeof(d));
}

/* ---- wrapping ------------------------------------------------------- */

int crypt_context(char *buf, size_t n, const char *kind, const char *id, int version)
{
	if (kind == NULL || id == NULL || kind[0] == '\0' || id[0] == '\0' || version < 1 ||
	    strchr(kind, '|') != NULL || strchr(id, '|') != NULL)
		return -ERR_INTERNAL;
	int k = snprintf(buf, n, "%s|%s|v%d", kind, id, version);
	return k > 0 && (size_t)k < n && (size_t)k <= CRYPT_CONTEXT_MAX ? 0 : -ERR_INTERNAL;
}

static bool context_ok(const char *context)
{
	return context != NULL && context[0] != '\0' && strlen(context) <= CRYPT_CONTEXT_MAX;
}

/*
 * One AES-256-GCM operation over a short message: AAD = version byte |
 * context. RET 1 on success (the tag verified when decrypting), else 0.
 */
static int wrap_cipher(int enc, const crypt_key *kek, const unsigned char *nonce,
                       unsigned char version, const char *context, const unsigned char *in,
                       unsigned char *out, unsigned char *tag)
{
	EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
	int len, ok = c != NULL;
	ok = ok && EVP_CipherInit_ex(c, EVP_aes_256_gcm(), NULL, kek->bytes, nonce, enc) == 1;
	ok = ok && EVP_CipherUpdate(c, NULL, &len, &version, 1) == 1;
	ok = ok && EVP_CipherUpdate(c, NULL, &len, (const unsigned char *)context,
	                            (int)strlen(context)) == 1;
	ok = ok && EVP_CipherUpdate(c, out, &len, in, CRYPT_KEY_LEN) == 1;
	if (ok && !enc)
		ok = EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_SET_TAG, CRYPT_TAG_LEN, tag) == 1;
	ok = ok && EVP_CipherFinal_ex(c, out + len, &len) == 1;
	if (ok && enc)
		ok = EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, CRYPT_TAG_LEN, tag) == 1;
	EVP_CIPHER_CTX_free(c);
	return ok;
}

int crypt_wrap(const crypt_key *kek, const char *context, const crypt_key *key,
               unsigned char out[CRYPT_WRAPPED_LEN])
{
	if (!context_ok(context))
		return -ERR_INTERNAL;
	unsigned char *nonce = out + 1, *ct = nonce + CRYPT_NONCE_LEN, *tag = ct + CRYPT_KEY_LEN;
	out[0] = CRYPT_WRAP_VERSION;
	if (RAND_bytes(nonce, CRYPT_NONCE_LEN) != 1 ||
	    !wrap_cipher(1, kek, nonce, CRYPT_WRAP_VERSION, context, key->bytes, ct, tag)) {
		OPENSSL_cleanse(out, CRYPT_WRAPPED_LEN);
		return -ERR_INTERNAL;
	}
	return 0;
}

int crypt_unwrap(const crypt_key *kek, const char *context, const unsigned char *wrapped,
                 size_t len, crypt_key *out)
{
	crypt_key_clear(out);
	if (!context_ok(context) || wrapped == NULL || len != CRYPT_WRAPPED_LEN ||
	    wrapped[0] != CRYPT_WRAP_VERSION)
		return -ERR_KEY_UNWRAP_FAILED;
	unsigned char tag[CRYPT_TAG_LEN];
	const unsigned char *nonce = wrapped + 1, *ct = nonce + CRYPT_NONCE_LEN;
	memcpy(tag, ct + CRYPT_KEY_LEN, sizeof(tag));
	if (!wrap_cipher(0, kek, nonce, wrapped[0], context, ct, out->bytes, tag)) {
		crypt_key_clear(out);
		return -ERR_KEY_UNWRAP_FAILED;
	}
	return 0;
}

/* ---- object contexts ------------------------------------------------ */

static bool id_ok(const char *id)
{
	return id != NULL && id[0] != '\0' && strlen(id) <= CRYPT_ID_MAX;
}

int crypt_object_ctx_init_ring(crypt_object_ctx *c, const char *tenant_id, const char *job_id,
                               const crypt_key *keys, size_t n)
{
	memset(c, 0, sizeof(*c));
	if (!id_ok(tenant_id) || !id_ok(job_id) || keys == NULL || n == 0 ||
	    n > CRYPT_GENERATIONS_MAX || (c->keys = malloc(n * sizeof(*keys))) == NULL)
		return -ERR_INTERNAL;
	memcpy(c->tenant_id, tenant_id, strlen(tenant_id));
	memcpy(c->job_id, job_id, strlen(job_id));
	memcpy(c->keys, keys, n * sizeof(*keys));
	c->generations = (uint32_t)n;
	return 0;
}

int crypt_object_ctx_init(crypt_object_ctx *c, const char *tenant_id, const char *job_id,
                          const crypt_key *data_key)
{
	return crypt_object_ctx_init_ring(c, tenant_id, job_id, data_key, 1);
}

#define RING_TEXT_STEP (2 * CRYPT_KEY_LEN + 1) /* a key's hex digits and its comma */

int crypt_object_ctx_init_text(crypt_object_ctx *c, const char *tenant_id, const char *job_id,
                               const char *text)
{
	memset(c, 0, sizeof(*c));
	size_t len = text ? strlen(text) : 0;
	size_t n = (len + 1) / RING_TEXT_STEP;
	if (len == 0 || n * RING_TEXT_STEP != len + 1 || n > CRYPT_GENERATIONS_MAX)
		return -ERR_INTERNAL;
	crypt_key *keys = malloc(n * sizeof(*keys));
	int rc = keys ? 0 : -ERR_INTERNAL;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		const char *p = text + i * RING_TEXT_STEP;
		if ((i + 1 < n && p[2 * CRYPT_KEY_LEN] != ',') ||
		    !crypt_key_from_hex(p, 2 * CRYPT_KEY_LEN, &keys[i]))
			rc = -ERR_INTERNAL;
	}
	if (rc == 0)
		rc = crypt_object_ctx_init_ring(c, tenant_id, job_id, keys, n);
	if (keys)
		OPENSSL_cleanse(keys, n * sizeof(*keys));
	free(keys);
	return rc;
}

char *crypt_object_ctx_text(const crypt_object_ctx *c)
{
	if (c == NULL || c->generations == 0)
		return NULL;
	char *t = malloc((size_t)c->generations * RING_TEXT_STEP);
	for (uint32_t i = 0; t && i < c->generations; i++) {
		hex_encode(c->keys[i].bytes, CRYPT_KEY_LEN, t + i * RING_TEXT_STEP);
		t[i * RING_TEXT_STEP + 2 * CRYPT_KEY_LEN] = i + 1 < c->generations ? ',' : '\0';
	}
	return t;
}

const crypt_key *crypt_object_ctx_key(const crypt_object_ctx *c, uint32_t generation)
{
	return generation >= 1 && generation <= c->generations ? &c->keys[generation - 1] : NULL;
}

int crypt_object_ctx_copy(crypt_object_ctx *dst, const crypt_object_ctx *src)
{
	return crypt_object_ctx_init_ring(dst, src->tenant_id, src->job_id, src->keys,
	                                  src->generations);
}

void crypt_object_ctx_clear(crypt_object_ctx *c)
{
	if (c == NULL)
		return;
	if (c->keys) {
		OPENSSL_cleanse(c->keys, (size_t)c->generations * sizeof(*c->keys));
		free(c->keys);
	}
	OPENSSL_cleanse(c, sizeof(*c));
}

/* ---- file descriptor sink and source -------------------------------- */

int crypt_fd_sink(void *arg, const void *buf, size_t n)
{
	int fd = *(const int *)arg;
	const unsigned char *p = buf;
	while (n > 0) {
		ssize_t k = write(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			if (k == 0)
				errno = EIO;
			return -ERR_STORAGE_IO;
		}
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

int crypt_fd_source(void *arg, void *buf, size_t n, size_t *got)
{
	int fd = *(const int *)arg;
	unsigned char *p = buf;
	*got = 0;
	while (*got < n) {
		ssize_t k = read(fd, p + *got, n - *got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -ERR_STORAGE_IO;
		if (k == 0)
			break;
		*got += (size_t)k;
	}
	return 0;
}
