/*
 * lowp.h - rounding of fp32 values to bfloat16 and IEEE half precision.
 *
 * The CPU trainer keeps fp32 arithmetic and fp32 master weights; in BF16
 * and FP16 mode it rounds the inputs of every matmul and the activations
 * it stores to the narrow format and back, so a run follows the numerics
 * of a GPU mixed-precision path (values that a GPU would hold in 16 bits
 * carry 16-bit error here too).
 *
 * Both conversions round to nearest, ties to even, with integer
 * arithmetic (one exact fp32 addition for fp16 subnormals, see
 * lowp_round_fp16). NaN stays NaN. bf16 keeps the fp32 exponent range; fp16
 * overflows to infinity at 65520 (the first value that rounds past
 * 65504) and has subnormals down to 2^-24, as IEEE 754 binary16 says.
 */
#ifndef TY_LOWP_H
#define TY_LOWP_H

#include <stdint.h>
#include <string.h>

#include "gpt.h"

static inline uint32_t lowp_bits(float x)
{
	uint32_t u;
	memcpy(&u, &x, sizeof u);
	return u;
}

static inline float lowp_from_bits(uint32_t u)
{
	float x;
	memcpy(&x, &u, sizeof x);
	return x;
}

/* The upper 16 bits of the bf16 nearest to x (branch-free, so loops of it
 * vectorise). */
static inline uint16_t lowp_bf16_bits(float x)
{
	uint32_t u = lowp_bits(x);
	uint32_t nan = 0u - (uint32_t)((u & 0x7fffffffu) > 0x7f800000u);
	uint32_t rounded = u + 0x7fffu + ((u >> 16) & 1u);
	uint32_t quiet = u | 0x00400000u; /* a NaN stays a (quiet) NaN */
	return (uint16_t)(((rounded & ~nan) | (quiet & nan)) >> 16);
}

static inline float lowp_bf16_to_float(uint16_t h)
{
	return lowp_from_bits((uint32_t)h << 16);
}

/* IEEE binary16 bits of the half nearest to x. */
static inline uint16_t lowp_fp16_bits(float x)
{
	uint32_t u = lowp_bits(x);
	uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
	uint32_t a = u & 0x7fffffffu;

	if (a > 0x7f800000u) /* NaN */
		return (uint16_t)(sign | 0x7e00u);
	if (a >= 0x477ff000u) /* >= 65520 (or inf): rounds to infinity */
		return (uint16_t)(sign | 0x7c00u);
	if (a >= 0x38800000u) { /* >= 2^-14: a normal half */
		a += 0xfffu + ((a >> 13) & 1u);
		return (uint16_t)(sign | ((a - (112u << 23)) >> 13));
	}
	/* Subnormal half: a multiple of 2^-24. The fp32 value is
	 * mant * 2^(e - 150), so the count of 2^-24 units is mant >> (126 - e). */
	uint32_t e = a >> 23;
	if (e < 102) /* below 2^-25: rounds to zero */
		return sign;
	uint32_t mant = (a & 0x7fffffu) | 0x800000u;
	uint32_t shift = 126u - e; /* 14 .. 24 */
	uint32_t q = mant >> shift;
	uint32_t rem = mant & ((1u << shift) - 1u);
	uint32_t half = 1u << (shift - 1u);
	if (rem > half || (rem == half && (q & 1u)))
		q++; /* may carry into the smallest normal, 0x0400: still right */
	return (uint16_t)(sign | q);
}

static inline float lowp_fp16_to_float(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
	uint32_t e = (h >> 10) & 0x1fu;
	uint32_t mant = h & 0x3ffu;

	if (e == 0) { /* zero or subnormal: mant * 2^-24, exact in fp32 */
		float v = (float)mant * 0x1p-24f;
		return sign ? -v : v;
	}
	if (e == 31)
		return lowp_from_bits(sign | 0x7f800000u | (mant << 13));
	return lowp_from_bits(sign | ((e + 112u) << 23) | (mant << 13));
}

static inline float lowp_round_bf16(float x)
{
	return lowp_bf16_to_float(lowp_bf16_bits(x));
}

/*
 * x rounded to the nearest half, as fp32: the same value as
 * lowp_fp16_to_float(lowp_fp16_bits(x)), but branch-free so that buffer
 * loops vectorise. Normal halves: the fp32 mantissa is rounded to 10 bits
 * in place (a carry may bump the exponent); past 65504 the result is
 * inf. Subnormal halves are multiples of 2^-24, which is the fp32 spacing
 * in [0.5, 1): adding and taking away 0.5 rounds to them, exactly, under
 * the default rounding mode (this needs no -ffast-math, which would fold
 * it away).
 */
static inline float lowp_round_fp16(float x)
{
	uint32_t u = lowp_bits(x);
	uint32_t sign = u & 0x80000000u, a = u & 0x7fffffffu;
	uint32_t r = (a + 0xfffu + ((a >> 13) & 1u)) & ~0x1fffu;
	uint32_t over = 0u - (uint32_t)(r > 0x477fe000u); /* beyond 65504 */
	r = (r & ~over) | (0x7f800000u & over);
	float sub_value = (lowp_from_bits(a) + 0.5f) - 0.5f;
	uint32_t sub = 0u - (uint32_t)(a < 0x38800000u); /* below 2^-14 */
	r = (r & ~sub) | (lowp_bits(sub_value) & sub);
	uint32_t nan = 0u - (uint32_t)(a > 0x7f800000u);
	r = (r & ~nan) | ((a | 0x00400000u) & nan);
	return lowp_from_bits(r | sign);
}

/* x rounded to the precision p (GPT_FP32: x itself). */
static inline float lowp_round(float x, gpt_precision p)
{
	switch (p) {
	case GPT_BF16:
		return lowp_round_bf16(x);
	case GPT_FP16:
		return lowp_round_fp16(x);
	default:
		return x;
	}
}

#endif
