/*
 * crypt_aead.h - what objects and logs share (private to lib/crypt*.c):
 * the file header, the per-object key, and sealing or opening chunk i.
 *
 * Header (CRYPT_HEADER_LEN = 42 bytes):
 *   0  4  magic "TYEC"
 *   4  1  format version (2; 1 is still read)
 *   5  1  kind: 1 object, 2 log
 *   6  4  u32 little-endian: object chunk size, or log record maximum
 *   10 32 the key salt: in version 2, the u32 little-endian generation of
 *         the data key that sealed it, then 28 random bytes; in version 1,
 *         32 random bytes under generation 1
 *
 * AAD of chunk or record i, each length a u32 little-endian:
 *   the first 10 header bytes | len | tenant id | len | job id |
 *   len | object name | u64 little-endian i | u8 final (closing for logs)
 */
#ifndef TY_CRYPT_AEAD_H
#define TY_CRYPT_AEAD_H

#include <openssl/evp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "crypt.h"

#define CRYPT_HEADER_FIXED_LEN 10 /* the header bytes before the salt */
#define CRYPT_AAD_MAX          (CRYPT_HEADER_FIXED_LEN + 3 * 4 + 2 * CRYPT_ID_MAX + CRYPT_NAME_MAX + 8 + 1)

typedef struct crypt_aead {
	EVP_CIPHER_CTX *evp; /* holds the per-object key schedule */
	unsigned char aad[CRYPT_AAD_MAX];
	size_t aad_len; /* including the index and flag */
} crypt_aead;

/* Write a header of kind for the data key's generation, with a fresh salt. RET 0 or -ERR_INTERNAL
 * (CSPRNG). */
int crypt_header_make(unsigned char h[CRYPT_HEADER_LEN], int kind, uint32_t size,
                      uint32_t generation);

/* The generation of the data key that sealed header h (checked by crypt_header_check). */
uint32_t crypt_header_generation(const unsigned char h[CRYPT_HEADER_LEN]);

/*
 * Check magic, version, kind and the size field (must equal size).
 * RET 0 or -ERR_DATA_AUTH_FAILED with the reason in err.
 */
int crypt_header_check(const unsigned char h[CRYPT_HEADER_LEN], int kind, uint32_t size,
                       const char *name, char *err, size_t errlen);

/*
 * Derive the per-object key of header h under the generation of ctx's data
 * key that h names, set up the cipher for encrypting (encrypt true) or
 * decrypting, and build the AAD prefix for name. RET 0; -ERR_INTERNAL (bad
 * name or ids, cipher failure); -ERR_DATA_AUTH_FAILED (ctx holds no such
 * generation).
 */
int crypt_aead_init(crypt_aead *a, const crypt_object_ctx *ctx, const char *name,
                    const unsigned char h[CRYPT_HEADER_LEN], bool encrypt, char *err,
                    size_t errlen);

/* Encrypt n bytes of chunk index (in may equal out). OUT tag. RET 0 or -ERR_INTERNAL. */
int crypt_aead_seal(crypt_aead *a, uint64_t index, bool final, const unsigned char *in, size_t n,
                    unsigned char *out, unsigned char tag[CRYPT_TAG_LEN]);

/*
 * Decrypt n bytes of chunk index (in may equal out) and verify tag.
 * RET 0; -ERR_DATA_AUTH_FAILED when the tag does not verify (out is then
 * cleared and must not be used).
 */
int crypt_aead_open(crypt_aead *a, uint64_t index, bool final, const unsigned char *in, size_t n,
                    unsigned char *out, const unsigned char tag[CRYPT_TAG_LEN]);

void crypt_aead_release(crypt_aead *a);

/* Little-endian helpers. */
void crypt_put_u32(unsigned char *p, uint32_t v);
uint32_t crypt_get_u32(const unsigned char *p);

#endif
