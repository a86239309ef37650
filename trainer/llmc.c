/*
 * llmc.c - read and write llm.c model files (llmc.h).
 *
 * Both directions walk llm.c's tensor order once and move each run of
 * floats straight between the file and its place in the unit-major array,
 * so no second copy of the parameters is ever made.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "llmc.h"

#define LLMC_LAYER_TENSORS 12

/*
 * The tensors of cfg in llm.c's file order (pointers into a gpt_tensors
 * array, which is in unit-major order). RET: how many, or -1 when out of
 * memory. *table and *order: caller frees.
 */
static int llmc_file_order(const gpt_config *cfg, gpt_tensor **table, const gpt_tensor ***order)
{
	int L = cfg->num_layers;
	int n = 2 + LLMC_LAYER_TENSORS * L + 2;
	*table = calloc((size_t)n, sizeof **table);
	*order = calloc((size_t)n, sizeof **order);
	if (!*table || !*order) {
		free(*table);
		free(*order);
		return -1;
	}
	gpt_tensors(cfg, *table, n);
	int k = 0;
	(*order)[k++] = &(*table)[0]; /* wte */
	(*order)[k++] = &(*table)[1]; /* wpe */
	for (int j = 0; j < LLMC_LAYER_TENSORS; j++)
		for (int l = 0; l < L; l++)
			(*order)[k++] = &(*table)[2 + LLMC_LAYER_TENSORS * l + j];
	(*order)[k++] = &(*table)[n - 2]; /* lnfw */
	(*order)[k++] = &(*table)[n - 1]; /* lnfb */
	return n;
}

static uint32_t bswap32(uint32_t x)
{
	return (x >> 24) | ((x >> 8) & 0xff00u) | ((x << 8) & 0xff0000u) | (x << 24);
}

/*
 * Open the model file at path and check its header and size.
 * OUT: *fp (positioned at the first tensor; caller closes), *fcfg.
 * RET: 0, or -1 with a message in err (nothing left open).
 */
static int llmc_open(const char *path, FILE **fp, gpt_config *fcfg, char *err, size_t errlen)
{
	int32_t header[LLMC_HEADER_INTS];
	struct stat st;

	*fp = NULL;
	FILE *f = fopen(path, "rb");
	if (!f) {
		snprintf(err, errlen, "could not open model file \"%s\": %s", path,
		         strerror(errno));
		return -1;
	}
	if (fstat(fileno(f), &st) != 0) {
		snprintf(err, errlen, "could not stat model file \"%s\": %s", path,
		         strerror(errno));
		goto bad;
	}
	if ((size_t)st.st_size < sizeof header) {
		snprintf(err, errlen,
		         "model file \"%s\" is truncated: %lld bytes, less than its header", path,
		         (long long)st.st_size);
		goto bad;
	}
	if (fread(header, sizeof header, 1, f) != 1) {
		snprintf(err, errlen, "could not read the header of model file \"%s\": %s", path,
		         ferror(f) ? strerror(errno) : "unexpected end of file");
		goto bad;
	}
	if (header[0] != LLMC_MAGIC) {
		if (bswap32((uint32_t)header[0]) == (uint32_t)LLMC_MAGIC)
			snprintf(err, errlen, "model file \"%s\" has the wrong byte order", path);
		else
			snprintf(err, errlen,
			         "model file \"%s\" has bad magic number %d (expected %d)", path,
			         (int)header[0], LLMC_MAGIC);
		goto bad;
	}
	if (header[1] != LLMC_VERSION) {
		snprintf(err, errlen,
		         "model file \"%s\" has unsupported version %d (expected %d, fp32 weights)",
		         path, (int)header[1], LLMC_VERSION);
		goto bad;
	}
	*fcfg = (gpt_config){.max_seq_len = header[2],
	                     .vocab_size = header[3],
	                     .num_layers = header[4],
	                     .num_heads = header[5],
	                     .channels = header[6],
	                     .padded_vocab_size = header[7]};
	char why[200];
	if (gpt_config_check(fcfg, why, sizeof why) != 0) {
		snprintf(err, errlen, "model file \"%s\" has an invalid header: %s", path, why);
		goto bad;
	}
	long long want =
	    (long long)sizeof header + (long long)(gpt_num_params(fcfg) * sizeof(float));
	if ((long long)st.st_size != want) {
		snprintf(err, errlen, "model file \"%s\" is %s: %lld bytes, expected %lld", path,
		         (long long)st.st_size < want ? "truncated" : "too long",
		         (long long)st.st_size, want);
		goto bad;
	}
	*fp = f;
	return 0;
bad:
	fclose(f);
	return -1;
}

/*
 * Read the tensors of the file f (of model fcfg) into p, laid out for the
 * model want. They differ at most in the rows of wte and wpe (llmc_read_for
 * checked that): the first rows both have are read, the file's others
 * skipped, want's others set to 0. RET: 0, or -1 with a message.
 */
static int llmc_read_tensors(FILE *f, const char *path, const gpt_config *fcfg,
                             const gpt_config *want, float *p, char *err, size_t errlen)
{
	gpt_tensor *ftable = NULL, *wtable = NULL;
	const gpt_tensor **forder = NULL, **worder = NULL;
	int rc = -1;
	int n = llmc_file_order(fcfg, &ftable, &forder);
	int nw = n < 0 ? -1 : llmc_file_order(want, &wtable, &worder);
	if (n < 0 || nw != n) {
		snprintf(err, errlen, "out of memory reading model file \"%s\"", path);
		goto out;
	}
	for (int k = 0; k < n; k++) {
		size_t have = forder[k]->numel, need = worder[k]->numel;
		size_t take = have < need ? have : need;
		float *dst = p + worder[k]->offset;
		if (fread(dst, sizeof *p, take, f) != take ||
		    (have > take && fseeko(f, (off_t)((have - take) * sizeof *p), SEEK_CUR) != 0)) {
			snprintf(err, errlen, "could not read tensor %s of model file \"%s\": %s",
			         forder[k]->name, path,
			         ferror(f) ? strerror(errno) : "unexpected end of file");
			goto out;
		}
		memset(dst + take, 0, (need - take) * sizeof *p);
	}
	rc = 0;
out:
	free(ftable);
	free(forder);
	free(wtable);
	free(worder);
	return rc;
}

/* Read the file f of model fcfg into a new array laid out for want. */
static int llmc_load(FILE *f, const char *path, const gpt_config *fcfg, const gpt_config *want,
                     float **params, char *err, size_t errlen)
{
	size_t np = gpt_num_params(want);
	float *p = malloc(np * sizeof *p);
	if (!p) {
		snprintf(err, errlen, "out of memory reading model file \"%s\" (%zu MiB)", path,
		         np * sizeof *p >> 20);
		return -1;
	}
	if (llmc_read_tensors(f, path, fcfg, want, p, err, errlen) < 0) {
		free(p);
		return -1;
	}
	*params = p;
	return 0;
}

int llmc_read(const char *path, gpt_config *cfg, float **params, char *err, size_t errlen)
{
	FILE *f;
	*params = NULL;
	if (llmc_open(path, &f, cfg, err, errlen) < 0)
		return -1;
	int rc = llmc_load(f, path, cfg, cfg, params, err, errlen);
	fclose(f);
	return rc;
}

int llmc_read_for(const char *path, const gpt_config *want, float **params, char *err,
                  size_t errlen)
{
	gpt_config fcfg;
	FILE *f;
	*params = NULL;
	if (llmc_open(path, &f, &fcfg, err, errlen) < 0)
		return -1;
	const struct {
		const char *name;
		int have, need;
	} same[] = {{"layers", fcfg.num_layers, want->num_layers},
	            {"heads", fcfg.num_heads, want->num_heads},
	            {"channels", fcfg.channels, want->channels},
	            {"vocab_size", fcfg.vocab_size, want->vocab_size}};
	for (size_t i = 0; i < sizeof same / sizeof same[0]; i++)
		if (same[i].have != same[i].need) {
			snprintf(err, errlen,
			         "model file \"%s\" is another model: its %s is %d, the job's %d",
			         path, same[i].name, same[i].have, same[i].need);
			fclose(f);
			return -1;
		}
	if (fcfg.max_seq_len < want->max_seq_len) {
		snprintf(err, errlen,
		         "model file \"%s\" has positions for sequences of %d tokens, fewer than "
		         "the job's seq_len %d",
		         path, fcfg.max_seq_len, want->max_seq_len);
		fclose(f);
		return -1;
	}
	int rc = llmc_load(f, path, &fcfg, want, params, err, errlen);
	fclose(f);
	return rc;
}

/* fsync the directory holding path, so that a rename into it is durable. */
static int sync_parent_dir(const char *path)
{
	char dir[4096];
	const char *slash = strrchr(path, '/');
	if (!slash)
		snprintf(dir, sizeof dir, ".");
	else if (slash == path)
		snprintf(dir, sizeof dir, "/");
	else
		snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int rc = fsync(fd);
	close(fd);
	return rc;
}

int llmc_write(const char *path, const gpt_config *cfg, const float *params, char *err,
               size_t errlen)
{
	char why[200], tmp[4096];
	gpt_tensor *table = NULL;
	const gpt_tensor **order = NULL;
	FILE *f = NULL;
	int rc = -1;

	if (gpt_config_check(cfg, why, sizeof why) != 0) {
		snprintf(err, errlen, "cannot write model file \"%s\": %s", path, why);
		return -1;
	}
	if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= sizeof tmp) {
		snprintf(err, errlen, "model file path \"%s\" is too long", path);
		return -1;
	}
	int n = llmc_file_order(cfg, &table, &order);
	if (n < 0) {
		snprintf(err, errlen, "out of memory writing model file \"%s\"", path);
		return -1;
	}
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (fd < 0 || !(f = fdopen(fd, "wb"))) {
		snprintf(err, errlen, "could not create file \"%s\": %s", tmp, strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlink(tmp);
		}
		goto out;
	}

	int32_t header[LLMC_HEADER_INTS] = {0};
	header[0] = LLMC_MAGIC;
	header[1] = LLMC_VERSION;
	header[2] = cfg->max_seq_len;
	header[3] = cfg->vocab_size;
	header[4] = cfg->num_layers;
	header[5] = cfg->num_heads;
	header[6] = cfg->channels;
	header[7] = cfg->padded_vocab_size;
	bool ok = fwrite(header, sizeof header, 1, f) == 1;
	for (int k = 0; ok && k < n; k++)
		ok = fwrite(params + order[k]->offset, sizeof *params, order[k]->numel, f) ==
		     order[k]->numel;
	ok = ok && fflush(f) == 0 && fsync(fileno(f)) == 0;
	if (!ok) {
		snprintf(err, errlen, "could not write file \"%s\": %s", tmp, strerror(errno));
		fclose(f);
		unlink(tmp);
		goto out;
	}
	if (fclose(f) != 0) {
		snprintf(err, errlen, "could not write file \"%s\": %s", tmp, strerror(errno));
		unlink(tmp);
		goto out;
	}
	if (rename(tmp, path) != 0) {
		snprintf(err, errlen, "could not rename file \"%s\" to \"%s\": %s", tmp, path,
		         strerror(errno));
		unlink(tmp);
		goto out;
	}
	if (sync_parent_dir(path) != 0) {
		snprintf(err, errlen, "could not sync the directory of model file \"%s\": %s", path,
		         strerror(errno));
		goto out;
	}
	rc = 0;
out:
	free(table);
	free(order);
	return rc;
}
