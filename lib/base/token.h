/*
 * token.h - API token secrets: generation, hashing, comparison.
 *
 * A secret is "ty_" followed by 43 base64url characters encoding 32 random
 * bytes from OpenSSL's CSPRNG. Only its SHA-256 is ever stored; the secret
 * itself is returned once to its creator and never logged.
 */
#ifndef TY_TOKEN_H
#define TY_TOKEN_H

#include <stdbool.h>
#include <stddef.h>

#define TOKEN_PREFIX     "ty_"
#define TOKEN_SECRET_LEN (3 + 43)
#define TOKEN_HASH_LEN   32

/* OUT: out, a NUL-terminated secret. RET 0, or -1 when the CSPRNG fails. */
int token_generate(char out[TOKEN_SECRET_LEN + 1]);

/* RET: true when s has the shape of a secret (prefix, length, alphabet). */
bool token_well_formed(const char *s);

/*
 * A job attempt's credential: "tya_" and 43 base64url characters, made and
 * stored (hashed) the same way as a token, but accepted only on the
 * routes of its own attempt while that attempt is live.
 */
#define ATTEMPT_PREFIX     "tya_"
#define ATTEMPT_SECRET_LEN (4 + 43)
int attempt_credential_generate(char out[ATTEMPT_SECRET_LEN + 1]);
bool attempt_credential_well_formed(const char *s);

/* OUT: hash = SHA-256(secret). */
void token_hash(const char *secret, unsigned char hash[TOKEN_HASH_LEN]);

/* Constant-time equality of n bytes (hashes, or their hex forms). */
bool token_equal_ct(const void *a, const void *b, size_t n);

#endif
