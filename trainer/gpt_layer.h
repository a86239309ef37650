/*
 * gpt_layer.h - the tensors of one layer unit, shared by the layout
 * (gpt.c) and the model (gpt_model.c). Private to those two files.
 */
#ifndef TY_GPT_LAYER_H
#define TY_GPT_LAYER_H

/* In layout order (gpt.h). */
enum layer_tensor {
	LT_LN1W,
	LT_LN1B,
	LT_QKVW,
	LT_QKVB,
	LT_ATTPROJW,
	LT_ATTPROJB,
	LT_LN2W,
	LT_LN2B,
	LT_FCW,
	LT_FCB,
	LT_FCPROJW,
	LT_FCPROJB,
	LT_COUNT
};

/* "ln1w", "ln1b", "qkvw", ...: the names after "h<l>." in gpt_tensors(). */
extern const char *const gpt_layer_tensor_name[LT_COUNT];

#endif
