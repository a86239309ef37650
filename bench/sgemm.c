/*
 * sgemm.c - the machine's sgemm rate through OpenBLAS, the yardstick of
 * the trainer benchmark: C = A B for square-ish shapes like the model's,
 * timed over repeats after a warm-up. Prints one JSON line per shape and
 * the best rate.
 *
 * usage: sgemm THREADS
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 2;
	openblas_set_num_threads(threads);
	/* (M, N, K): the 124M model's QKV and MLP products at B*T = 256 and 1024 */
	static const int shapes[][3] = {{256, 2304, 768},
	                                {256, 3072, 768},
	                                {1024, 1152, 384},
	                                {1024, 1536, 384},
	                                {1024, 1024, 1024}};
	double best = 0;
	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
		float *a = malloc(sizeof(float) * (size_t)M * K),
		      *b = malloc(sizeof(float) * (size_t)K * N),
		      *c = malloc(sizeof(float) * (size_t)M * N);
		for (size_t i = 0; i < (size_t)M * K; i++)
			a[i] = (float)(i % 13) * 0.01f;
		for (size_t i = 0; i < (size_t)K * N; i++)
			b[i] = (float)(i % 7) * 0.01f;
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, a, K, b, K,
		            0.0f, c, N);
		int reps = 0;
		double t0 = now(), t;
		do {
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, a, K, b,
			            K, 0.0f, c, N);
			reps++;
		} while ((t = now() - t0) < 0.5);
		double rate = 2.0 * M * N * K * reps / t;
		if (rate > best)
			best = rate;
		printf("{\"M\":%d,\"N\":%d,\"K\":%d,\"threads\":%d,\"flops_per_s\":%.4g}\n", M, N,
		       K, threads, rate);
		free(a);
		free(b);
		free(c);
	}
	printf("{\"best_flops_per_s\":%.4g}\n", best);
	return 0;
}
