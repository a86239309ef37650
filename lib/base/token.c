/*
 * token.c - API token secrets.
 */
#include "token.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <string.h>

static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* out = prefix + 43 base64url characters of 32 random bytes. */
static int secret_generate(char *out, const char *prefix)
{
	unsigned char raw[32];
	if (RAND_bytes(raw, sizeof(raw)) != 1)
		return -1;
	size_t np = strlen(prefix);
	memcpy(out, prefix, np);
	char *p = out + np;
	unsigned bits = 0, acc = 0;
	for (size_t i = 0; i < sizeof(raw); i++) {
		acc = (acc << 8) | raw[i];
		bits += 8;
		while (bits >= 6) {
			bits -= 6;
			*p++ = b64url[(acc >> bits) & 63];
		}
	}
	if (bits)
		*p++ = b64url[(acc << (6 - bits)) & 63];
	*p = '\0';
	OPENSSL_cleanse(raw, sizeof(raw));
	return 0;
}

static bool secret_well_formed(const char *s, const char *prefix, size_t len)
{
	size_t np = strlen(prefix);
	if (strncmp(s, prefix, np) != 0 || strlen(s) != len)
		return false;
	return strspn(s + np, b64url) == len - np;
}

int token_generate(char out[TOKEN_SECRET_LEN + 1])
{
	return secret_generate(out, TOKEN_PREFIX);
}

bool token_well_formed(const char *s)
{
	return secret_well_formed(s, TOKEN_PREFIX, TOKEN_SECRET_LEN);
}

int attempt_credential_generate(char out[ATTEMPT_SECRET_LEN + 1])
{
	return secret_generate(out, ATTEMPT_PREFIX);
}

bool attempt_credential_well_formed(const char *s)
{
	return secret_well_formed(s, ATTEMPT_PREFIX, ATTEMPT_SECRET_LEN);
}

void token_hash(const char *secret, unsigned char hash[TOKEN_HASH_LEN])
{
	SHA256((const unsigned char *)secret, strlen(secret), hash);
}

bool token_equal_ct(const void *a, const void *b, size_t n)
{
	return CRYPTO_memcmp(a, b, n) == 0;
}
