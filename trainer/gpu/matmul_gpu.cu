/*
 * matmul_gpu.cu - the linear layer on the GPU through cuBLASLt
 * (ops_gpu.h): fp32 in and out, fp32 compute (CUBLAS_COMPUTE_32F, so no
 * TF32 rounding: the CPU's results to fp32 summation order), the bias
 * added in the forward GEMM's epilogue.
 *
 * Row-major X [N,C] is column-major X^T [C,N] to cuBLAS, so
 *   out^T [OC,N] = (w [OC,C] as col-major [C,OC])^T . inp^T,
 *   dinp^T [C,N] = (w as col-major [C,OC]) . dout^T [OC,N],
 *   dw^T [C,OC] += inp^T [C,N] . (dout^T)^T,
 * and dbias is a column sum of dout, one thread per column in row order.
 */
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <stdio.h>

#include "ops_gpu.h"

static cublasLtHandle_t lt;

/* One GEMM D = alpha op(A) op(B) + beta D, column-major, fp32; bias: the bias epilogue. */
static int gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const float *A,
                int lda, const float *B, int ldb, float *D, int ldd, float beta, const float *bias)
{
	if (!lt && cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS)
		return -1;
	cublasLtMatmulDesc_t op = NULL;
	cublasLtMatrixLayout_t la = NULL, lb = NULL, ld = NULL;
	int ok =
	    cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS;
	ok = ok &&
	     cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)) ==
	         CUBLAS_STATUS_SUCCESS &&
	     cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)) ==
	         CUBLAS_STATUS_SUCCESS;
	if (ok && bias) {
		cublasLtEpilogue_t e = CUBLASLT_EPILOGUE_BIAS;
		ok = cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &e,
		                                    sizeof(e)) == CUBLAS_STATUS_SUCCESS &&
		     cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
		                                    sizeof(bias)) == CUBLAS_STATUS_SUCCESS;
	}
	ok = ok &&
	     cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, ta == CUBLAS_OP_N ? m : k,
	                                ta == CUBLAS_OP_N ? k : m, lda) == CUBLAS_STATUS_SUCCESS &&
	     cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, tb == CUBLAS_OP_N ? k : n,
	                                tb == CUBLAS_OP_N ? n : k, ldb) == CUBLAS_STATUS_SUCCESS &&
	     cublasLtMatrixLayoutCreate(&ld, CUDA_R_32F, m, n, ldd) == CUBLAS_STATUS_SUCCESS;
	float alpha = 1.0f;
	ok = ok && cublasLtMatmul(lt, op, &alpha, A, la, B, lb, &beta, D, ld, D, ld, NULL, NULL, 0,
	                          0) == CUBLAS_STATUS_SUCCESS;
	if (la)
		cublasLtMatrixLayoutDestroy(la);
	if (lb)
		cublasLtMatrixLayoutDestroy(lb);
	if (ld)
		cublasLtMatrixLayoutDestroy(ld);
	if (op)
		cublasLtMatmulDescDestroy(op);
	return ok ? 0 : -1;
}

__global__ void column_sum(float *dbias, const float *dout, int N, int OC)
{
	int c = blockIdx.x * blockDim.x + threadIdx.x;
	if (c >= OC)
		return;
	float s = 0.0f;
	for (int n = 0; n < N; n++)
		s += dout[(size_t)n * OC + c];
	dbias[c] += s;
}

extern "C" {

int gpu_matmul_forward(float *out, const float *inp, const float *w, const float *bias, int N,
                       int C, int OC)
{
	return gemm(CUBLAS_OP_T, CUBLAS_OP_N, OC, N, C, w, C, inp, C, out, OC, 0.0f, bias);
}

int gpu_matmul_backward(float *dinp, float *dw, float *dbias, const float *dout, const float *inp,
                        const float *w, int N, int C, int OC)
{
	if (gemm(CUBLAS_OP_N, CUBLAS_OP_N, C, N, OC, w, C, dout, OC, dinp, C, 0.0f, NULL) < 0 ||
	    gemm(CUBLAS_OP_N, CUBLAS_OP_T, C, OC, N, inp, C, dout, OC, dw, C, 1.0f, NULL) < 0)
		return -1;
	if (dbias)
		column_sum<<<(OC + 255) / 256, 256>>>(dbias, dout, N, OC);
	return 0;
}

/* The LM head is the linear layer over the V real rows of wte, logits' rows Vp apart. */
int gpu_lmhead_forward(float *logits, const float *inp, const float *wte, int N, int C, int V,
                       int Vp)
{
	if (gemm(CUBLAS_OP_T, CUBLAS_OP_N, V, N, C, wte, C, inp, C, logits, Vp, 0.0f, NULL) < 0)
		return -1;
	gpu_pad_logits(logits, N, V, Vp);
	return 0;
}

int gpu_lmhead_backward(float *dinp, float *dwte, const float *dlogits, const float *inp,
                        const float *wte, int N, int C, int V, int Vp)
{
	if (gemm(CUBLAS_OP_N, CUBLAS_OP_N, C, N, V, wte, C, dlogits, Vp, dinp, C, 0.0f, NULL) < 0 ||
	    gemm(CUBLAS_OP_N, CUBLAS_OP_T, C, V, N, inp, C, dlogits, Vp, dwte, C, 1.0f, NULL) < 0)
		return -1;
	return 0;
}

} /* extern "C" */
