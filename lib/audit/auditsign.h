/*
 * auditsign.h - the audit log's signing key and its tree heads' signatures:
 * Ed25519 (OpenSSL), a key that is not the master key.
 *
 * The key file holds the 32-byte private key as 64 hex digits (mode 0600,
 * owned by the service user: crypt_key_file_read()); `yardctl audit keygen`
 * writes one and prints the public key. A key is named by its key id, the
 * first 16 hex digits of the SHA-256 of its public key.
 *
 * A tree head is signed as the bytes of auditsign_head_message():
 *   "trainyard audit tree head v1\n<size>\n<root, 64 hex digits>\n<time>\n"
 * the time in RFC 3339 UTC with milliseconds (docs/audit.md).
 */
#ifndef TY_AUDITSIGN_H
#define TY_AUDITSIGN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AUDIT_KEY_LEN      32 /* an Ed25519 private or public key */
#define AUDIT_SIG_LEN      64
#define AUDIT_KEY_ID_LEN   16
#define AUDIT_HEAD_MSG_MAX 160

typedef struct audit_signer {
	void *pkey; /* EVP_PKEY */
	unsigned char pub[AUDIT_KEY_LEN];
	char key_id[AUDIT_KEY_ID_LEN + 1];
} audit_signer;

/* A new key pair. RET 0, or -1 when the random source or OpenSSL fails (no message). */
int auditsign_keygen(unsigned char priv[AUDIT_KEY_LEN], unsigned char pub[AUDIT_KEY_LEN]);

/*
 * The signer of the key file at path. RET 0, or -ERR_MASTER_KEY_INVALID with
 * why in err: the file is not a private key file (crypt_key_file_read), or
 * OpenSSL makes no Ed25519 key of it.
 */
int auditsign_load(audit_signer *s, const char *path, char *err, size_t errlen);
/* The signer of a private key held in memory. RET 0, or -1 when OpenSSL makes no key of it (no
 * message). */
int auditsign_from_private(audit_signer *s, const unsigned char priv[AUDIT_KEY_LEN]);
void auditsign_release(audit_signer *s);

/* OUT: id, the key id of pub. */
void auditsign_key_id(const unsigned char pub[AUDIT_KEY_LEN], char id[AUDIT_KEY_ID_LEN + 1]);

/* The bytes a head's signature covers, into buf. RET their length, or -1 when n bytes cannot hold
 * them. */
int auditsign_head_message(int64_t size, const unsigned char root[32], const char *time, char *buf,
                           size_t n);

/* RET 0 with sig filled, or -1 when OpenSSL fails (no message). */
int auditsign_sign(const audit_signer *s, const void *msg, size_t len,
                   unsigned char sig[AUDIT_SIG_LEN]);

/* RET: whether sig is pub's signature of msg. */
bool auditsign_verify(const unsigned char pub[AUDIT_KEY_LEN], const void *msg, size_t len,
                      const unsigned char sig[AUDIT_SIG_LEN]);

#endif
