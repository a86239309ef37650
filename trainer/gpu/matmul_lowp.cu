/*
 * matmul_lowp.cu - the linear layer in bf16 or fp16 through cuBLASLt
 * (ops_lowp.h): 16-bit A and B, fp32 compute and scale, the output in the
 * 16-bit type (activations) or fp32 (weight gradients, accumulated with
 * beta 1). The bias and GELU ride in the epilogue: forward BIAS or
 * GELU_AUX_BIAS (the pre-activation kept as the epilogue's aux output),
 * backward DGELU (the same aux read back). The bias gradient is our own
 * column sum: cuBLASLt's BGRAD epilogues overwrite their output in the
 * output's type, and ours accumulates over micro-batches in fp32.
 *
 * The row-major to column-major reading is matmul_gpu.cu's. A GEMM's
 * plan (descriptors, layouts and the heuristic's first algorithm) is made
 * on the first call of its shape and kept for the process; only the
 * pointers are set per call. The heuristic is told the pointers' actual
 * alignment, which is part of the plan's key. One workspace serves all.
 * A process that fills the table (many models of other shapes) still
 * runs: a new shape then gets a plan for its call alone.
 */
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

#include "ops_lowp.h"

#define WORKSPACE_BYTES (32u << 20)
#define MAX_PLANS       128

typedef struct plan_key {
	cublasOperation_t ta, tb;
	int m, n, k, lda, ldb, ldd;
	cudaDataType_t ab, d;
	cublasLtEpilogue_t epi;
	int accumulate;     /* beta 1 */
	unsigned align[4];  /* A, B, D, and the epilogue's pointers: bytes, at most 256 */
} plan_key;

typedef struct plan {
	plan_key key;
	cublasLtMatmulDesc_t op;
	cublasLtMatrixLayout_t la, lb, ld;
	cublasLtMatmulAlgo_t algo;
} plan;

static cublasLtHandle_t lt;
static void *workspace;
static plan plans[MAX_PLANS];
static int nplans;

static unsigned alignment(const void *p)
{
	uintptr_t a = (uintptr_t)p;
	unsigned al = 256;
	while (al > 1 && a % al)
		al /= 2;
	return al;
}

static bool ok(cublasStatus_t s)
{
	return s == CUBLAS_STATUS_SUCCESS;
}

static void plan_destroy(plan *p)
{
	if (p->la)
		cublasLtMatrixLayoutDestroy(p->la);
	if (p->lb)
		cublasLtMatrixLayoutDestroy(p->lb);
	if (p->ld)
		cublasLtMatrixLayoutDestroy(p->ld);
	if (p->op)
		cublasLtMatmulDescDestroy(p->op);
	memset(p, 0, sizeof(*p));
}

/*
 * Fill p for key k. The epilogue's pointers go in before the heuristic:
 * it reads their alignment from them. RET 0, or -1 (p then empty).
 */
static int plan_make(plan *p, const plan_key *k, const void *bias, const void *aux)
{
	memset(p, 0, sizeof(*p));
	p->key = *k;
	cublasLtMatmulPreference_t pref = NULL;
	cublasLtMatmulHeuristicResult_t h;
	int found = 0;
	uint64_t ws = WORKSPACE_BYTES;
	uint32_t al[4] = {k->align[0], k->align[1], k->align[2], k->align[2]};
	bool good =
	    ok(cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F)) &&
	    ok(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &k->ta,
	                                      sizeof(k->ta))) &&
	    ok(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &k->tb,
	                                      sizeof(k->tb))) &&
	    ok(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &k->epi,
	                                      sizeof(k->epi))) &&
	    ok(cublasLtMatrixLayoutCreate(&p->la, k->ab, k->ta == CUBLAS_OP_N ? k->m : k->k,
	                                  k->ta == CUBLAS_OP_N ? k->k : k->m, k->lda)) &&
	    ok(cublasLtMatrixLayoutCreate(&p->lb, k->ab, k->tb == CUBLAS_OP_N ? k->k : k->n,
	                                  k->tb == CUBLAS_OP_N ? k->n : k->k, k->ldb)) &&
	    ok(cublasLtMatrixLayoutCreate(&p->ld, k->d, k->m, k->n, k->ldd)) &&
	    ok(cublasLtMatmulPreferenceCreate(&pref)) &&
	    ok(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
	                                            &ws, sizeof(ws))) &&
	    ok(cublasLtMatmulPreferenceSetAttribute(
	        pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al[0], sizeof(al[0]))) &&
	    ok(cublasLtMatmulPreferenceSetAttribute(
	        pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al[1], sizeof(al[1]))) &&
	    ok(cublasLtMatmulPreferenceSetAttribute(
	        pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al[2], sizeof(al[2]))) &&
	    ok(cublasLtMatmulPreferenceSetAttribute(
	        pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al[3], sizeof(al[3])));
	if (good && bias)
		good = ok(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
		                                         &bias, sizeof(bias)));
	if (good && aux) {
		int64_t aux_ld = k->ldd; /* the aux has D's shape */
		good = ok(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD,
		                                         &aux_ld, sizeof(aux_ld))) &&
		       ok(cublasLtMatmulDescSetAttribute(
		           p->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof(aux)));
	}
	good = good && ok(cublasLtMatmulAlgoGetHeuristic(lt, p->op, p->la, p->lb, p->ld, p->ld,
	                                                 pref, 1, &h, &found)) &&
	       found > 0;
	if (pref)
		cublasLtMatmulPreferenceDestroy(pref);
	if (!good) {
		plan_destroy(p);
		return -1;
	}
	p->algo = h.algo;
	return 0;
}

/*
 * The kept plan of k, made now if new; with the table full (a process
 * that made many models of other shapes), a plan made in *spare for this
 * call alone, which the caller destroys. RET the plan, or NULL.
 */
static plan *find_plan(const plan_key *k, const void *bias, const void *aux, plan *spare)
{
	for (int i = 0; i < nplans; i++)
		if (!memcmp(&plans[i].key, k, sizeof(*k)))
			return &plans[i];
	plan *p = nplans < MAX_PLANS ? &plans[nplans] : spare;
	if (plan_make(p, k, bias, aux) < 0)
		return NULL;
	if (p != spare)
		nplans++;
	return p;
}

/*
 * D = alpha op(A) op(B) + (accumulate ? D : 0), column-major; bias and
 * aux the epilogue's pointers (NULL when epi has none).
 */
static int gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void *A,
                int lda, const void *B, int ldb, void *D, int ldd, cudaDataType_t ab,
                cudaDataType_t d, float alpha, int accumulate, cublasLtEpilogue_t epi,
                const void *bias, void *aux)
{
	if (!lt && !ok(cublasLtCreate(&lt)))
		return -1;
	if (!workspace && cudaMalloc(&workspace, WORKSPACE_BYTES) != cudaSuccess)
		return -1;
	plan_key key;
	memset(&key, 0, sizeof(key)); /* the padding too: keys compare with memcmp */
	key.ta = ta;
	key.tb = tb;
	key.m = m;
	key.n = n;
	key.k = k;
	key.lda = lda;
	key.ldb = ldb;
	key.ldd = ldd;
	key.ab = ab;
	key.d = d;
	key.epi = epi;
	key.accumulate = accumulate;
	key.align[0] = alignment(A);
	key.align[1] = alignment(B);
	key.align[2] = alignment(D);
	unsigned ab_al = bias ? alignment(bias) : 256, ax_al = aux ? alignment(aux) : 256;
	key.align[3] = ab_al < ax_al ? ab_al : ax_al;
	plan spare;
	plan *p = find_plan(&key, bias, aux, &spare);
	if (!p)
		return -1;
	float beta = accumulate ? 1.0f : 0.0f;
	bool good =
	    (!bias || ok(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
	                                                &bias, sizeof(bias)))) &&
	    (!aux || ok(cublasLtMatmulDescSetAttribute(
	                 p->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof(aux)))) &&
	    ok(cublasLtMatmul(lt, p->op, &alpha, A, p->la, B, p->lb, &beta, D, p->ld, D, p->ld,
	                      &p->algo, workspace, WORKSPACE_BYTES, 0));
	if (p == &spare)
		plan_destroy(&spare); /* cuBLASLt copied what it needs at the call */
	return good ? 0 : -1;
}

static cudaDataType_t cuda_type(gpu_lowp fmt)
{
	return fmt == GPU_FP16 ? CUDA_R_16F : CUDA_R_16BF;
}

extern "C" {

int gpu_lowp_matmul_forward(void *out, void *gelu_pre, const void *inp, const void *w,
                            const void *bias, int N, int C, int OC, int ldout, gpu_lowp fmt)
{
	cudaDataType_t t = cuda_type(fmt);
	cublasLtEpilogue_t epi = gelu_pre ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS
	                         : bias   ? CUBLASLT_EPILOGUE_BIAS
	                                  : CUBLASLT_EPILOGUE_DEFAULT;
	/* GELU_AUX_BIAS needs a bias; the model's fc layer has one */
	if (gelu_pre && !bias)
		return -1;
	return gemm(CUBLAS_OP_T, CUBLAS_OP_N, OC, N, C, w, C, inp, C, out, ldout, t, t, 1.0f, 0,
	            epi, bias, gelu_pre);
}

int gpu_lowp_matmul_backward(void *dinp, float *dw, float *dbias, float *scratch,
                             const void *dout, const void *inp, const void *w,
                             const void *gelu_pre, float alpha, int N, int C, int OC, int lddout,
                             gpu_lowp fmt)
{
	cudaDataType_t t = cuda_type(fmt);
	if (dbias)
		gpu_lowp_column_sum(dbias, scratch, dout, alpha, N, OC, lddout, fmt);
	if (gemm(CUBLAS_OP_N, CUBLAS_OP_N, C, N, OC, w, C, dout, lddout, dinp, C, t, t, alpha, 0,
	         gelu_pre ? CUBLASLT_EPILOGUE_DGELU : CUBLASLT_EPILOGUE_DEFAULT, NULL,
	         (void *)gelu_pre) < 0)
		return -1;
	return gemm(CUBLAS_OP_N, CUBLAS_OP_T, C, OC, N, inp, C, dout, lddout, dw, C, t, CUDA_R_32F,
	            alpha, 1, CUBLASLT_EPILOGUE_DEFAULT, NULL, NULL);
}

} /* extern "C" */
