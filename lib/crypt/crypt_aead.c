/*
 * crypt_aead.c - the header of encrypted objects and logs, the per-object
 * key (HKDF-SHA256), and AES-256-GCM over one chunk or record.
 */
#include "crypt_aead.h"
#include "error.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <openssl/rand.h>
#include <string.h>

static const char *const kind_info[] = {
    [CRYPT_KIND_OBJECT] = "trainyard object v1",
    [CRYPT_KIND_LOG] = "trainyard log v1",
};

void crypt_put_u32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

uint32_t crypt_get_u32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int crypt_header_make(unsigned char h[CRYPT_HEADER_LEN], int kind, uint32_t size,
                      uint32_t generation)
{
	memcpy(h, CRYPT_MAGIC, 4);
	h[4] = CRYPT_FORMAT_VERSION;
	h[5] = (unsigned char)kind;
	crypt_put_u32(h + 6, size);
	crypt_put_u32(h + CRYPT_HEADER_FIXED_LEN, generation);
	return RAND_bytes(h + CRYPT_HEADER_FIXED_LEN + 4, CRYPT_SALT_LEN - 4) == 1 ? 0
	                                                                           : -ERR_INTERNAL;
}

uint32_t crypt_header_generation(const unsigned char h[CRYPT_HEADER_LEN])
{
	return h[4] == 1 ? 1 : crypt_get_u32(h + CRYPT_HEADER_FIXED_LEN);
}

int crypt_header_check(const unsigned char h[CRYPT_HEADER_LEN], int kind, uint32_t size,
                       const char *name, char *err, size_t errlen)
{
	const char *what = kind == CRYPT_KIND_LOG ? "log" : "object";
	if (memcmp(h, CRYPT_MAGIC, 4) != 0) {
		err_printf(err, errlen, "encrypted %s \"%s\" has no TYEC header", what, name);
		return -ERR_DATA_AUTH_FAILED;
	}
	if (h[4] != 1 && h[4] != CRYPT_FORMAT_VERSION) {
		err_printf(err, errlen,
		           "encrypted %s \"%s\" has format version %u, expected 1 or %u", what,
		           name, h[4], CRYPT_FORMAT_VERSION);
		return -ERR_DATA_AUTH_FAILED;
	}
	if (h[5] != kind) {
		err_printf(err, errlen, "encrypted %s \"%s\" has kind %u, expected %d", what, name,
		           h[5], kind);
		return -ERR_DATA_AUTH_FAILED;
	}
	if (crypt_get_u32(h + 6) != size) {
		err_printf(err, errlen, "encrypted %s \"%s\" has size field %u, expected %u", what,
		           name, crypt_get_u32(h + 6), size);
		return -ERR_DATA_AUTH_FAILED;
	}
	return 0;
}

/* OUT out: HKDF-SHA256(ikm = data key, salt, info). RET 0 or -ERR_INTERNAL. */
static int derive_object_key(const crypt_key *data_key, const unsigned char *salt, const char *info,
                             unsigned char out[CRYPT_KEY_LEN])
{
	static char digest[] = "SHA256";
	EVP_KDF *kdf = EVP_KDF_fetch(NULL, OSSL_KDF_NAME_HKDF, NULL);
	EVP_KDF_CTX *kctx = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
	EVP_KDF_free(kdf);
	if (kctx == NULL)
		return -ERR_INTERNAL;
	OSSL_PARAM params[] = {
	    OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, digest, 0),
	    OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)data_key->bytes,
	                                      CRYPT_KEY_LEN),
	    OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, (void *)salt, CRYPT_SALT_LEN),
	    OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, (void *)info, strlen(info)),
	    OSSL_PARAM_construct_end(),
	};
	int ok = EVP_KDF_derive(kctx, out, CRYPT_KEY_LEN, params) == 1;
	EVP_KDF_CTX_free(kctx);
	return ok ? 0 : -ERR_INTERNAL;
}

/* Append u32 length | bytes to the AAD. */
static void aad_field(crypt_aead *a, const void *p, size_t n)
{
	crypt_put_u32(a->aad + a->aad_len, (uint32_t)n);
	memcpy(a->aad + a->aad_len + 4, p, n);
	a->aad_len += 4 + n;
}

int crypt_aead_init(crypt_aead *a, const crypt_object_ctx *ctx, const char *name,
                    const unsigned char h[CRYPT_HEADER_LEN], bool encrypt, char *err, size_t errlen)
{
	memset(a, 0, sizeof(*a));
	size_t tn = strnlen(ctx->tenant_id, CRYPT_ID_MAX + 1);
	size_t jn = strnlen(ctx->job_id, CRYPT_ID_MAX + 1);
	size_t nn = name ? strnlen(name, CRYPT_NAME_MAX + 1) : 0;
	int kind = h[5];
	if (tn == 0 || tn > CRYPT_ID_MAX || jn == 0 || jn > CRYPT_ID_MAX || nn == 0 ||
	    nn > CRYPT_NAME_MAX || (kind != CRYPT_KIND_OBJECT && kind != CRYPT_KIND_LOG)) {
		err_printf(err, errlen,
		           "could not set up encryption of \"%s\": bad tenant id, job id or name",
		           name ? name : "(null)");
		return -ERR_INTERNAL;
	}
	memcpy(a->aad, h, CRYPT_HEADER_FIXED_LEN);
	a->aad_len = CRYPT_HEADER_FIXED_LEN;
	aad_field(a, ctx->tenant_id, tn);
	aad_field(a, ctx->job_id, jn);
	aad_field(a, name, nn);
	a->aad_len += 8 + 1; /* index and flag, filled per chunk */

	const crypt_key *data_key = crypt_object_ctx_key(ctx, crypt_header_generation(h));
	if (data_key == NULL) {
		/* the generation is part of the salt: a changed one would fail at the first tag */
		err_printf(
		    err, errlen,
		    "encrypted %s \"%s\" names data key generation %u; the key ring holds 1 to %u",
		    kind == CRYPT_KIND_LOG ? "log" : "object", name, crypt_header_generation(h),
		    ctx->generations);
		return -ERR_DATA_AUTH_FAILED;
	}
	unsigned char key[CRYPT_KEY_LEN];
	int rc = derive_object_key(data_key, h + CRYPT_HEADER_FIXED_LEN, kind_info[kind], key);
	a->evp = rc == 0 ? EVP_CIPHER_CTX_new() : NULL;
	if (a->evp == NULL ||
	    EVP_CipherInit_ex(a->evp, EVP_aes_256_gcm(), NULL, key, NULL, encrypt ? 1 : 0) != 1) {
		err_printf(err, errlen, "could not set up encryption of \"%s\": cipher failure",
		           name);
		rc = -ERR_INTERNAL;
		crypt_aead_release(a);
	}
	OPENSSL_cleanse(key, sizeof(key));
	return rc;
}

/* Set the nonce (big-endian index, 4 zero bytes) and feed the AAD of chunk index. */
static bool chunk_begin(crypt_aead *a, uint64_t index, bool final)
{
	unsigned char nonce[CRYPT_NONCE_LEN] = {0};
	for (int i = 0; i < 8; i++)
		nonce[i] = (unsigned char)(index >> (56 - 8 * i));
	unsigned char *tail = a->aad + a->aad_len - 9;
	for (int i = 0; i < 8; i++)
		tail[i] = (unsigned char)(index >> (8 * i));
	tail[8] = final ? 1 : 0;
	int len;
	return EVP_CipherInit_ex(a->evp, NULL, NULL, NULL, nonce, -1) == 1 &&
	       EVP_CipherUpdate(a->evp, NULL, &len, a->aad, (int)a->aad_len) == 1;
}

int crypt_aead_seal(crypt_aead *a, uint64_t index, bool final, const unsigned char *in, size_t n,
                    unsigned char *out, unsigned char tag[CRYPT_TAG_LEN])
{
	int len = 0, fin;
	bool ok = chunk_begin(a, index, final);
	if (ok && n > 0)
		ok = EVP_CipherUpdate(a->evp, out, &len, in, (int)n) == 1;
	ok = ok && EVP_CipherFinal_ex(a->evp, out + len, &fin) == 1;
	ok = ok && EVP_CIPHER_CTX_ctrl(a->evp, EVP_CTRL_AEAD_GET_TAG, CRYPT_TAG_LEN, tag) == 1;
	return ok ? 0 : -ERR_INTERNAL;
}

int crypt_aead_open(crypt_aead *a, uint64_t index, bool final, const unsigned char *in, size_t n,
                    unsigned char *out, const unsigned char tag[CRYPT_TAG_LEN])
{
	int len = 0, fin;
	bool ok = chunk_begin(a, index, final);
	if (ok && n > 0)
		ok = EVP_CipherUpdate(a->evp, out, &len, in, (int)n) == 1;
	ok = ok &&
	     EVP_CIPHER_CTX_ctrl(a->evp, EVP_CTRL_AEAD_SET_TAG, CRYPT_TAG_LEN, (void *)tag) == 1;
	ok = ok && EVP_CipherFinal_ex(a->evp, out + len, &fin) == 1;
	if (!ok) {
		OPENSSL_cleanse(out, n);
		return -ERR_DATA_AUTH_FAILED;
	}
	return 0;
}

void crypt_aead_release(crypt_aead *a)
{
	EVP_CIPHER_CTX_free(a->evp); /* clears the key schedule */
	a->evp = NULL;
}
