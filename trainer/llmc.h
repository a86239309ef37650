/*
 * llmc.h - GPT-2 weights in llm.c's model file format (version 3, fp32).
 *
 * A file is a header of 256 little-endian int32 followed by the
 * parameters as fp32, tensor by tensor:
 *
 *   header[0] magic 20240326     header[4] num_layers L
 *   header[1] version 3          header[5] num_heads NH
 *   header[2] max_seq_len        header[6] channels C
 *   header[3] vocab_size V       header[7] padded_vocab_size Vp
 *   header[8..255] 0
 *
 *   wte [Vp,C], wpe [max_seq_len,C], then each layer tensor for all L
 *   layers at once: ln1w [L,C], ln1b [L,C], qkvw [L,3C,C], qkvb [L,3C],
 *   attprojw [L,C,C], attprojb [L,C], ln2w [L,C], ln2b [L,C],
 *   fcw [L,4C,C], fcb [L,4C], fcprojw [L,C,4C], fcprojb [L,C],
 *   and last lnfw [C], lnfb [C].
 *
 * In memory the parameters are unit-major (gpt.h); these functions move
 * each tensor between the two orders. The format is the host's byte
 * order; a file with swapped bytes is reported as such.
 */
#ifndef TY_LLMC_H
#define TY_LLMC_H

#include <stddef.h>

#include "gpt.h"

#define LLMC_MAGIC       20240326
#define LLMC_VERSION     3
#define LLMC_HEADER_INTS 256

/*
 * Read the model file at path.
 * OUT cfg: the model it describes (validated by gpt_config_check).
 * OUT params: gpt_num_params(cfg) floats, unit-major; caller frees.
 * RET: 0, or -1 with a message in err (naming the file); *params is then NULL.
 */
int llmc_read(const char *path, gpt_config *cfg, float **params, char *err, size_t errlen);

/*
 * Read the model file at path for the model want, which may differ from
 * the file's in two ways only: a shorter max_seq_len (wpe keeps the file's
 * first rows, so llm.c's GPT-2 files, made for 1024 positions, train at
 * any seq_len up to that) and another padded vocabulary (rows of wte past
 * want's are padding and are dropped; rows past the file's are set to 0).
 * Layers, heads, channels and vocab_size must be want's.
 * OUT params: gpt_num_params(want) floats, unit-major; caller frees.
 * RET: 0, or -1 with a message in err naming the file and what differs.
 */
int llmc_read_for(const char *path, const gpt_config *want, float **params, char *err,
                  size_t errlen);

/*
 * Write params (unit-major, gpt_num_params(cfg) floats) to path in
 * llm.c's order. The data go to a temporary file next to path that is
 * renamed over it once complete and flushed, so readers never see a
 * partial file.
 * RET: 0, or -1 with a message in err.
 */
int llmc_write(const char *path, const gpt_config *cfg, const float *params, char *err,
               size_t errlen);

#endif
