/*
 * cmd_audit.c - yardctl audit keygen | head | export | verify | proof: the
 * verifiable audit log (docs/audit.md). keygen and verify work offline:
 * verify needs the export and the log's public key, nothing else.
 */
#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auditverify.h"
#include "cmd.h"
#include "hex.h"
#include "http.h"
#include "routes.h"
#include "sbuf.h"
#include "url.h"

static const out_col head_fields[] = {
    {"size", "size"},     {"root", "root"},           {"signed_at", "signed_at"},
    {"key_id", "key_id"}, {"signature", "signature"}, {NULL, NULL},
};

static const out_col verified_fields[] = {
    {"verified", "verified"}, {"records", "records"}, {"heads", "heads"},
    {"root", "root"},         {"key_id", "key_id"},   {NULL, NULL},
};

static const out_col proof_fields[] = {
    {"seq", "seq"},
    {"tree_size", "tree_size"},
    {"leaf_hash", "leaf_hash"},
    {"first", "first"},
    {"second", "second"},
    {"path", "path"},
    {"verified", "verified"},
    {NULL, NULL},
};

static const out_col key_fields[] = {
    {"algorithm", "algorithm"},
    {"public_key", "public_key"},
    {"key_id", "key_id"},
    {NULL, NULL},
};

enum { OPT_OUT };
static const opt_spec keygen_opts[] = {{"out", true, true}, {NULL, false, false}};

static int audit_keygen(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	opt_result o;
	int rc = args_parse_cmd(ctx, self, keygen_opts, 0, 0, argc, argv, &o);
	if (rc >= 0)
		return rc;
	unsigned char priv[AUDIT_KEY_LEN], pub[AUDIT_KEY_LEN];
	char hex[2 * AUDIT_KEY_LEN + 2], id[AUDIT_KEY_ID_LEN + 1];
	if (auditsign_keygen(priv, pub) < 0) {
		fprintf(stderr, "yardctl: could not make a key\n");
		return CLI_SERVER;
	}
	hex_encode(priv, AUDIT_KEY_LEN, hex);
	OPENSSL_cleanse(priv, sizeof(priv));
	strcat(hex, "\n");
	const char *path = o.val[OPT_OUT];
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	ssize_t w = fd >= 0 ? write(fd, hex, strlen(hex)) : -1;
	OPENSSL_cleanse(hex, sizeof(hex));
	if (fd < 0 || w != 2 * AUDIT_KEY_LEN + 1 || fsync(fd) != 0) {
		fprintf(stderr, "yardctl: could not write the key to %s: %s\n", path,
		        fd < 0 ? strerror(errno) : "short write");
		if (fd >= 0) {
			close(fd);
			unlink(path);
		}
		return CLI_USAGE;
	}
	close(fd);
	hex_encode(pub, AUDIT_KEY_LEN, hex);
	auditsign_key_id(pub, id);
	json_t *out = json_pack("{s:s, s:s, s:s, s:s}", "algorithm", "ed25519", "public_key", hex,
	                        "key_id", id, "private_key_file", path);
	output_object(ctx, out, key_fields);
	json_decref(out);
	return CLI_OK;
}

enum { OPT_NEW };
static const opt_spec head_opts[] = {{"new", false, false}, {NULL, false, false}};

static int audit_head(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	opt_result o;
	int rc = args_parse_cmd(ctx, self, head_opts, 0, 0, argc, argv, &o);
	if (rc >= 0)
		return rc;
	if (o.set[OPT_NEW])
		return cmd_show(ctx, "POST", strdup(ROUTE_AUDIT_HEADS), NULL, head_fields);
	return cmd_show(ctx, "GET", strdup(ROUTE_AUDIT_HEAD), NULL, head_fields);
}

static int audit_export(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	opt_result o;
	int rc = args_parse_cmd(ctx, self, NULL, 0, 0, argc, argv, &o);
	if (rc >= 0)
		return rc;
	return http_stream(ctx, ROUTE_AUDIT_EXPORT, stdout, NULL);
}

/* The first line of the file at path, or of text itself when it starts with '{'. */
static char *first_line(const char *path_or_text)
{
	if (path_or_text[0] == '{')
		return strdup(path_or_text);
	FILE *f = fopen(path_or_text, "r");
	if (!f)
		return NULL;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n = getline(&line, &cap, f);
	fclose(f);
	if (n <= 0) {
		free(line);
		return NULL;
	}
	line[strcspn(line, "\r\n")] = '\0';
	return line;
}

/*
 * A head: its JSON, or a file that starts with one (on one line, as an
 * export does, or printed over several by yardctl -o json). RET 0, or -1 with why in err.
 */
static int head_read(const char *arg, auditlog_head *h, char *err, size_t errlen)
{
	if (arg[0] == '{')
		return auditverify_head_parse(arg, strlen(arg), h, err, errlen);
	json_error_t je;
	json_t *j = json_load_file(arg, JSON_DISABLE_EOF_CHECK, &je);
	char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	if (!text) {
		snprintf(err, errlen, "%s", je.text);
		return -1;
	}
	int rc = auditverify_head_parse(text, strlen(text), h, err, errlen);
	free(text);
	return rc;
}

/* The public key: 64 hex digits, or a file whose first line holds them. RET 0 or -1. */
static int public_key(const char *arg, unsigned char pub[AUDIT_KEY_LEN])
{
	if (hex_decode(arg, strlen(arg), pub, AUDIT_KEY_LEN))
		return 0;
	char *line = first_line(arg);
	int ok = line && hex_decode(line, strlen(line), pub, AUDIT_KEY_LEN);
	free(line);
	return ok ? 0 : -1;
}

/* Bytes verify reads at a time: they stay in the core's cache while they are checked. */
#define VERIFY_CHUNK (256u << 10)

/*
 * Feed the lines of f to the check, until one fails: read a chunk at a
 * time, each complete line checked where it lies in the chunk (a line
 * longer than the chunk grows it). RET 0, or -1 when f cannot be read.
 */
static int verify_lines(auditverify *v, FILE *f)
{
	size_t cap = VERIFY_CHUNK, have = 0;
	char *buf = malloc(cap);
	int fd = fileno(f);
	bool eof = false;
	while (buf && !eof && !v->failed) {
		if (have == cap) {
			char *nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				errno = ENOMEM;
				return -1;
			}
			buf = nb;
			cap *= 2;
		}
		ssize_t n = read(fd, buf + have, cap - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			free(buf);
			return -1;
		}
		eof = n == 0;
		have += (size_t)n;
		char *p = buf, *end = buf + have;
		for (char *nl; (nl = memchr(p, '\n', (size_t)(end - p))) && !v->failed; p = nl + 1)
			auditverify_line(v, p, (size_t)(nl - p));
		if (eof && p < end && !v->failed) /* a last line without its newline */
			auditverify_line(v, p, (size_t)(end - p)), p = end;
		have = (size_t)(end - p);
		memmove(buf, p, have);
	}
	int rc = buf ? 0 : -1;
	free(buf);
	return rc;
}

enum { OPT_PUBKEY, OPT_PREVIOUS };
static const opt_spec verify_opts[] = {
    {"pubkey", true, true}, {"previous-head", true, false}, {NULL, false, false}};

static int audit_verify(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	opt_result o;
	int rc = args_parse_cmd(ctx, self, verify_opts, 1, 1, argc, argv, &o);
	if (rc >= 0)
		return rc;
	unsigned char pub[AUDIT_KEY_LEN];
	if (public_key(o.val[OPT_PUBKEY], pub) < 0)
		return args_usage_error(ctx, self,
		                        "--pubkey takes 64 hex digits, or a file that holds them");
	auditlog_head previous;
	if (o.set[OPT_PREVIOUS]) {
		char err[256];
		if (head_read(o.val[OPT_PREVIOUS], &previous, err, sizeof(err)) < 0)
			return args_usage_error(
			    ctx, self,
			    "--previous-head takes a head's JSON, or a file whose "
			    "first line is one");
	}
	const char *path = o.pos[0];
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
	if (!f) {
		fprintf(stderr, "yardctl: could not open %s: %s\n", path, strerror(errno));
		return CLI_USAGE;
	}
	auditverify *v = malloc(sizeof(*v));
	if (!v) {
		if (f != stdin)
			fclose(f);
		return CLI_SERVER;
	}
	auditverify_init(v, pub, o.set[OPT_PREVIOUS] ? &previous : NULL);
	if (verify_lines(v, f) < 0) {
		fprintf(stderr, "yardctl: could not read %s: %s\n", path, strerror(errno));
		free(v);
		if (f != stdin)
			fclose(f);
		return CLI_USAGE;
	}
	if (f != stdin)
		fclose(f);
	rc = auditverify_end(v);
	if (rc == 0) {
		char root[2 * MERKLE_HASH_LEN + 1];
		hex_encode(v->head.root, MERKLE_HASH_LEN, root);
		json_t *out = json_pack("{s:b, s:I, s:I, s:s, s:s}", "verified", 1, "records",
		                        (json_int_t)v->f.size, "heads", (json_int_t)v->heads,
		                        "root", root, "key_id", v->head.key_id);
		output_object(ctx, out, verified_fields);
		json_decref(out);
	} else {
		fprintf(stderr, "yardctl: the audit log does not verify: %s\n", v->problem);
	}
	free(v);
	return rc == 0 ? CLI_OK : CLI_REFUSED;
}

enum { OPT_SEQ, OPT_TREE, OPT_FIRST, OPT_SECOND, OPT_HEAD, OPT_PREV, OPT_KEY, OPT_ENTRY };
static const opt_spec proof_opts[] = {
    {"seq", true, false},    {"tree-size", true, false}, {"first", true, false},
    {"second", true, false}, {"head", true, false},      {"previous-head", true, false},
    {"pubkey", true, false}, {"entry", true, false},     {NULL, false, false},
};

/* A head from its JSON or a file whose first line is one, signed by pub. RET 0, or -1 said. */
static int signed_head(const char *arg, const unsigned char pub[AUDIT_KEY_LEN], auditlog_head *h)
{
	char err[256];
	if (head_read(arg, h, err, sizeof(err)) < 0) {
		fprintf(stderr, "yardctl: %s: %s\n", arg, err);
		return -1;
	}
	if (!auditverify_head_signed(h, pub)) {
		fprintf(stderr, "yardctl: the head of size %lld is not signed by this key\n",
		        (long long)h->size);
		return -1;
	}
	return 0;
}

/* The proof's "path" as hashes. RET its length, or -1. */
static int path_of(const json_t *proof, merkle_hash *path, int max)
{
	const json_t *a = json_object_get(proof, "path");
	if (!json_is_array(a) || (int)json_array_size(a) > max)
		return -1;
	for (size_t i = 0; i < json_array_size(a); i++) {
		const char *h = json_string_value(json_array_get(a, i));
		if (!h || !hex_decode(h, strlen(h), path[i], MERKLE_HASH_LEN))
			return -1;
	}
	return (int)json_array_size(a);
}

/*
 * Check a proof the API gave against signed heads, as an auditor would:
 * an inclusion proof against --head (and the record's own bytes, --entry),
 * a consistency proof from --previous-head to --head.
 */
static int proof_check(cli_ctx *ctx, bool inclusion, const opt_result *o, json_t *proof)
{
	unsigned char pub[AUDIT_KEY_LEN];
	auditlog_head head, prev;
	if (public_key(o->val[OPT_KEY], pub) < 0) {
		fprintf(stderr,
		        "yardctl: --pubkey takes 64 hex digits, or a file that holds them\n");
		return CLI_USAGE;
	}
	if (signed_head(o->val[OPT_HEAD], pub, &head) < 0 ||
	    (!inclusion && signed_head(o->val[OPT_PREV], pub, &prev) < 0))
		return CLI_REFUSED;
	merkle_hash path[2 * MERKLE_DEPTH_MAX], leaf;
	int len = path_of(proof, path, inclusion ? MERKLE_DEPTH_MAX : 2 * MERKLE_DEPTH_MAX);
	bool ok = len >= 0;
	if (inclusion) {
		const char *lh = json_string_value(json_object_get(proof, "leaf_hash"));
		ok = ok && lh && hex_decode(lh, strlen(lh), leaf, MERKLE_HASH_LEN);
		if (ok && o->set[OPT_ENTRY]) {
			char *entry = first_line(o->val[OPT_ENTRY]);
			merkle_hash own;
			if (entry)
				merkle_leaf_hash(entry, strlen(entry), own);
			ok = entry && memcmp(own, leaf, MERKLE_HASH_LEN) == 0;
			free(entry);
			if (!ok)
				fprintf(stderr, "yardctl: the record's entry does not hash to the "
				                "proof's leaf\n");
		}
		int64_t seq = json_integer_value(json_object_get(proof, "seq"));
		ok = ok && merkle_inclusion_verify(leaf, (uint64_t)seq, (uint64_t)head.size, path,
		                                   len, head.root);
	} else {
		ok = ok && merkle_consistency_verify((uint64_t)prev.size, (uint64_t)head.size,
		                                     prev.root, head.root, path, len);
	}
	json_object_set_new(proof, "verified", json_boolean(ok));
	output_object(ctx, proof, proof_fields);
	if (!ok)
		fprintf(stderr, "yardctl: the proof does not verify against the signed head%s\n",
		        inclusion ? "" : "s");
	return ok ? CLI_OK : CLI_REFUSED;
}

static int audit_proof(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	opt_result o;
	int rc = args_parse_cmd(ctx, self, proof_opts, 1, 1, argc, argv, &o);
	if (rc >= 0)
		return rc;
	bool inclusion = strcmp(o.pos[0], "inclusion") == 0;
	if (!inclusion && strcmp(o.pos[0], "consistency") != 0)
		return args_usage_error(ctx, self, "the proof is inclusion or consistency");
	bool check = o.set[OPT_HEAD] || o.set[OPT_PREV] || o.set[OPT_KEY] || o.set[OPT_ENTRY];
	if (check && !(o.set[OPT_HEAD] && o.set[OPT_KEY] && (inclusion || o.set[OPT_PREV])))
		return args_usage_error(ctx, self,
		                        inclusion
		                            ? "checking a proof needs --head and --pubkey"
		                            : "checking a proof needs --previous-head, --head "
		                              "and --pubkey");
	if (!check && (inclusion ? !o.set[OPT_SEQ] : !o.set[OPT_FIRST]))
		return args_usage_error(ctx, self,
		                        inclusion ? "an inclusion proof needs --seq"
		                                  : "a consistency proof needs --first");
	if (inclusion && !o.set[OPT_SEQ])
		return args_usage_error(ctx, self, "an inclusion proof needs --seq");
	/* checked against heads, the proof's sizes are the heads' */
	char sizes[2][24];
	if (check) {
		unsigned char pub[AUDIT_KEY_LEN];
		auditlog_head h;
		if (public_key(o.val[OPT_KEY], pub) < 0)
			return args_usage_error(ctx, self,
			                        "--pubkey takes 64 hex digits, or a file "
			                        "that holds them");
		if (signed_head(o.val[OPT_HEAD], pub, &h) < 0)
			return CLI_REFUSED;
		snprintf(sizes[1], sizeof(sizes[1]), "%lld", (long long)h.size);
		o.set[inclusion ? OPT_TREE : OPT_SECOND] = true;
		o.val[inclusion ? OPT_TREE : OPT_SECOND] = sizes[1];
		if (!inclusion) {
			if (signed_head(o.val[OPT_PREV], pub, &h) < 0)
				return CLI_REFUSED;
			snprintf(sizes[0], sizeof(sizes[0]), "%lld", (long long)h.size);
			o.set[OPT_FIRST] = true;
			o.val[OPT_FIRST] = sizes[0];
		}
	}
	sbuf url;
	sbuf_init(&url, 4096);
	rc = sbuf_adds(&url, inclusion ? ROUTE_AUDIT_INCLUSION : ROUTE_AUDIT_CONSISTENCY);
	static const char *const names[] = {"seq", "tree_size", "first", "second"};
	for (int i = OPT_SEQ; i <= OPT_SECOND && !rc; i++)
		if (o.set[i])
			rc = url_query_add(&url, names[i], o.val[i]);
	if (rc) {
		sbuf_release(&url);
		return CLI_USAGE;
	}
	if (!check)
		return cmd_show(ctx, "GET", sbuf_detach(&url), NULL, proof_fields);
	json_t *proof = NULL;
	char *u = sbuf_detach(&url);
	rc = http_json(ctx, "GET", u, NULL, &proof);
	free(u);
	if (rc == CLI_OK)
		rc = proof_check(ctx, inclusion, &o, proof);
	json_decref(proof);
	return rc;
}

const cli_command audit_commands[] = {
    {"keygen", "--out FILE", "make the key that signs the audit log's tree heads",
     "Writes the private key (64 hex digits, mode 0600, a new file) for\n"
     "TRAINYARD_AUDIT_KEY_FILE and prints the public key auditors verify with.\n",
     audit_keygen, NULL, NULL},
    {"key", "", "show the public key the API signs tree heads with", NULL, NULL, NULL,
     CMD_SHOW("GET", ROUTE_AUDIT_KEY, 0, key_fields)},
    {"head", "[--new]", "show the newest signed tree head (--new: sign one now)", NULL, audit_head,
     NULL, NULL},
    {"export", "", "write the whole audit log, with its signed heads, as JSON lines",
     "The first line is the head the export ends at; each record follows on a line of\n"
     "its own, the bytes its Merkle leaf hashes. Check it with yardctl audit verify.\n",
     audit_export, NULL, NULL},
    {"verify", "FILE --pubkey KEY [--previous-head HEAD]",
     "check an export offline: signatures, order, every record against the heads",
     "FILE ('-': stdin) is an export; KEY the log's public key (64 hex digits, or a file\n"
     "holding them); HEAD a head seen before (its JSON, or a file whose first line it\n"
     "is), to catch a log rolled back or rewritten since. Exit status 1 when it fails,\n"
     "with the first record or head that does.\n",
     audit_verify, NULL, NULL},
    {"proof",
     "inclusion --seq N [--tree-size M | --head HEAD --pubkey KEY [--entry ENTRY]]\n"
     "      | consistency [--first M [--second N] | --previous-head OLD --head HEAD --pubkey KEY]",
     "show a Merkle proof (a record in a tree, or a tree a prefix of a later one), or check it",
     "With --head (a signed head's JSON, or a file whose first line is one) and --pubkey\n"
     "the proof is asked for that head's size and checked against its signed root: the\n"
     "record seq N is in it (and hashes to its leaf, given its exported line ENTRY), or\n"
     "the log at OLD is a prefix of the log at HEAD. Exit status 1 when it fails.\n",
     audit_proof, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL, NULL, NULL},
};
