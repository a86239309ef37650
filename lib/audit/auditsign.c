/*
 * auditsign.c - see auditsign.h.
 */
#include "auditsign.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <string.h>

#include "crypt.h"
#include "error.h"
#include "hex.h"

int auditsign_keygen(unsigned char priv[AUDIT_KEY_LEN], unsigned char pub[AUDIT_KEY_LEN])
{
	if (RAND_priv_bytes(priv, AUDIT_KEY_LEN) != 1)
		return -1;
	audit_signer s;
	if (auditsign_from_private(&s, priv) < 0)
		return -1;
	memcpy(pub, s.pub, AUDIT_KEY_LEN);
	auditsign_release(&s);
	return 0;
}

void auditsign_key_id(const unsigned char pub[AUDIT_KEY_LEN], char id[AUDIT_KEY_ID_LEN + 1])
{
	unsigned char d[32];
	unsigned int n = 0;
	EVP_Digest(pub, AUDIT_KEY_LEN, d, &n, EVP_sha256(), NULL);
	hex_encode(d, AUDIT_KEY_ID_LEN / 2, id);
}

int auditsign_from_private(audit_signer *s, const unsigned char priv[AUDIT_KEY_LEN])
{
	memset(s, 0, sizeof(*s));
	EVP_PKEY *k = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, priv, AUDIT_KEY_LEN);
	size_t len = AUDIT_KEY_LEN;
	if (!k || EVP_PKEY_get_raw_public_key(k, s->pub, &len) != 1 || len != AUDIT_KEY_LEN) {
		EVP_PKEY_free(k);
		return -1;
	}
	s->pkey = k;
	auditsign_key_id(s->pub, s->key_id);
	return 0;
}

int auditsign_load(audit_signer *s, const char *path, char *err, size_t errlen)
{
	unsigned char priv[AUDIT_KEY_LEN];
	memset(s, 0, sizeof(*s));
	int rc =
	    crypt_key_file_read(path, "audit signing key file", priv, sizeof(priv), err, errlen);
	if (rc == 0 && auditsign_from_private(s, priv) < 0) {
		snprintf(err, errlen, "audit signing key file \"%s\" holds no Ed25519 key", path);
		rc = -ERR_MASTER_KEY_INVALID;
	}
	OPENSSL_cleanse(priv, sizeof(priv));
	return rc;
}

void auditsign_release(audit_signer *s)
{
	EVP_PKEY_free(s->pkey);
	s->pkey = NULL;
}

int auditsign_head_message(int64_t size, const unsigned char root[32], const char *time, char *buf,
                           size_t n)
{
	char hex[65];
	hex_encode(root, 32, hex);
	int k = snprintf(buf, n, "trainyard audit tree head v1\n%lld\n%s\n%s\n", (long long)size,
	                 hex, time);
	return k < 0 || (size_t)k >= n ? -1 : k;
}

int auditsign_sign(const audit_signer *s, const void *msg, size_t len,
                   unsigned char sig[AUDIT_SIG_LEN])
{
	EVP_MD_CTX *x = EVP_MD_CTX_new();
	size_t n = AUDIT_SIG_LEN;
	int ok = x && s->pkey && EVP_DigestSignInit(x, NULL, NULL, NULL, s->pkey) == 1 &&
	         EVP_DigestSign(x, sig, &n, msg, len) == 1 && n == AUDIT_SIG_LEN;
	EVP_MD_CTX_free(x);
	return ok ? 0 : -1;
}

bool auditsign_verify(const unsigned char pub[AUDIT_KEY_LEN], const void *msg, size_t len,
                      const unsigned char sig[AUDIT_SIG_LEN])
{
	EVP_PKEY *k = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, pub, AUDIT_KEY_LEN);
	EVP_MD_CTX *x = EVP_MD_CTX_new();
	bool ok = k && x && EVP_DigestVerifyInit(x, NULL, NULL, NULL, k) == 1 &&
	          EVP_DigestVerify(x, sig, AUDIT_SIG_LEN, msg, len) == 1;
	EVP_MD_CTX_free(x);
	EVP_PKEY_free(k);
	return ok;
}
