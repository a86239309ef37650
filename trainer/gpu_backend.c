/*
 * gpu_backend.c - find and load the GPU backend library (gpu_backend.h).
 */
#include "gpu_backend.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "layout.h"

/* ../lib/libtytrain-cuda.so beside this program. RET 0, or -1. */
static int beside_program(char *out, size_t outlen)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -1;
	exe[n] = '\0';
	char *slash = strrchr(exe, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	int w = snprintf(out, outlen, "%s/../lib/%s", exe, GPU_BACKEND_FILE);
	return w < 0 || (size_t)w >= outlen ? -1 : 0;
}

const gpu_backend *gpu_backend_load(char *err, size_t errlen)
{
	static const gpu_backend *loaded;
	if (loaded)
		return loaded;
	char path[PATH_MAX];
	const char *env = getenv(GPU_BACKEND_ENV);
	if (env && *env)
		snprintf(path, sizeof(path), "%s", env);
	else if (beside_program(path, sizeof(path)) < 0) {
		snprintf(err, errlen, "could not find the GPU backend beside this program");
		return NULL;
	}
	if (access(path, R_OK) != 0) {
		snprintf(err, errlen,
		         "the GPU backend %s is not there: this trainer was built without it "
		         "(build it with make GPU=1 on a machine with the CUDA toolkit)",
		         path);
		return NULL;
	}
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(err, errlen, "could not load the GPU backend: %s", dlerror());
		return NULL;
	}
	const gpu_backend *(*get)(void);
	*(void **)&get = dlsym(h, GPU_BACKEND_SYMBOL);
	const gpu_backend *b = get ? get() : NULL;
	if (!b || b->abi != GPU_BACKEND_ABI) {
		snprintf(err, errlen, "the GPU backend %s is of another build (ABI %d, want %d)",
		         path, b ? b->abi : -1, GPU_BACKEND_ABI);
		dlclose(h);
		return NULL;
	}
	loaded = b;
	return b;
}
