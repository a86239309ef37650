/*
 * jobspec_command.c - the rules of a command job's program (jobspec_command.h).
 */
#include "jobspec_command.h"

#include <stdio.h>
#include <string.h>

#include "error.h"

/* Names a job may set, then prefixes (ending in '_'): threads, determinism, the frameworks'. */
static const char *const env_allowed[] = {
    "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "PYTHONHASHSEED",
    "PYTHONUNBUFFERED", "PYTHONWARNINGS", "PYTHONOPTIMIZE", "CUBLAS_WORKSPACE_CONFIG",
    "TOKENIZERS_PARALLELISM", "TZ", "LANG", "LC_ALL",
    /* prefixes */
    "APP_", "NCCL_", "GLOO_", "TORCH_", NULL};

const char *const *jobspec_env_allowed_list(void)
{
	return env_allowed;
}

static bool env_name_well_formed(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > JOBSPEC_ENV_NAME_MAX || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return false;
	return true;
}

bool jobspec_env_allowed(const char *name)
{
	if (!env_name_well_formed(name))
		return false;
	for (size_t i = 0; env_allowed[i]; i++) {
		size_t n = strlen(env_allowed[i]);
		bool prefix = env_allowed[i][n - 1] == '_';
		if (prefix ? strncmp(name, env_allowed[i], n) == 0 && name[n] != '\0'
		           : strcmp(name, env_allowed[i]) == 0)
			return true;
	}
	return false;
}

/* A path of the bundle, "./" dropped: relative, plain components. RET 0, or -ERR_F_* with why. */
static int bundle_path(const char *arg, char *out, size_t outlen, char *why, size_t whylen)
{
	while (strncmp(arg, "./", 2) == 0)
		arg += 2;
	size_t n = strlen(arg);
	if (n == 0 || n >= outlen || n > JOBSPEC_TARGET_MAX) {
		snprintf(why, whylen, "names no file of the code bundle");
		return -ERR_F_COMMAND_NOT_IN_BUNDLE;
	}
	if (arg[0] == '/') {
		snprintf(why, whylen,
		         "is an absolute path; the command runs the code bundle's files");
		return -ERR_F_COMMAND_NOT_IN_BUNDLE;
	}
	for (const char *p = arg; *p;) {
		const char *e = strchr(p, '/');
		size_t k = e ? (size_t)(e - p) : strlen(p);
		if (k == 0 || (k == 1 && p[0] == '.') || (k == 2 && p[0] == '.' && p[1] == '.')) {
			snprintf(why, whylen, "leaves the code bundle or is not a plain path");
			return -ERR_F_COMMAND_NOT_IN_BUNDLE;
		}
		p += k + (e ? 1 : 0);
		if (e && !*p) {
			snprintf(why, whylen, "names a directory, not a file of the code bundle");
			return -ERR_F_COMMAND_NOT_IN_BUNDLE;
		}
	}
	memcpy(out, arg, n + 1);
	return 0;
}

static bool is_python(const char *a)
{
	return strcmp(a, "python3") == 0 || strcmp(a, "python") == 0;
}

static bool is_shell(const char *a)
{
	return strcmp(a, "bash") == 0 || strcmp(a, "sh") == 0;
}

/* A module name "a.b" as the bundle path "a/b". RET 0, or -ERR_F_*. */
static int module_path(const char *m, char *out, size_t outlen)
{
	size_t n = strlen(m);
	if (n == 0 || n >= outlen)
		return -ERR_F_COMMAND_NOT_IN_BUNDLE;
	for (size_t i = 0; i < n; i++) {
		char ch = m[i];
		bool word = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		            (ch >= '0' && ch <= '9') || ch == '_';
		if (!word && !(ch == '.' && i > 0 && i + 1 < n && m[i + 1] != '.'))
			return -ERR_F_COMMAND_NOT_IN_BUNDLE;
		out[i] = ch == '.' ? '/' : ch;
	}
	out[n] = '\0';
	return 0;
}

/* An interpreter's options, then its script or module. RET 0, or -ERR_F_* with why. */
static int interpreted(const jobspec_command *c, bool python, jobspec_target *t, int *bad,
                       char *why, size_t whylen)
{
	for (int i = 1; i < c->argc; i++) {
		const char *a = jobspec_command_arg(c, i);
		*bad = i;
		if (a[0] == '-' && a[1] != '-' && strchr(a + 1, 'c')) {
			snprintf(why, whylen,
			         "a program given as a string (-c) is a shell string; "
			         "run a file of the code bundle");
			return -ERR_F_COMMAND_NOT_ARGV;
		}
		if (python && strcmp(a, "-m") == 0) {
			if (i + 1 >= c->argc || module_path(jobspec_command_arg(c, i + 1), t->path,
			                                    sizeof(t->path)) < 0) {
				snprintf(why, whylen,
				         "-m needs the name of a module of the code bundle");
				return -ERR_F_COMMAND_NOT_IN_BUNDLE;
			}
			t->runs = JOBSPEC_RUNS_MODULE;
			t->arg = i + 1;
			return 0;
		}
		if (strcmp(a, "--") == 0 || a[0] != '-') {
			int k = strcmp(a, "--") == 0 ? i + 1 : i;
			*bad = k < c->argc ? k : i;
			if (k >= c->argc) {
				snprintf(why, whylen, "the interpreter is given no file to run");
				return -ERR_F_COMMAND_NOT_IN_BUNDLE;
			}
			t->runs = JOBSPEC_RUNS_SCRIPT;
			t->arg = k;
			return bundle_path(jobspec_command_arg(c, k), t->path, sizeof(t->path), why,
			                   whylen);
		}
		/* options with a value of their own */
		if ((python && (strcmp(a, "-W") == 0 || strcmp(a, "-X") == 0)) ||
		    (!python && (strcmp(a, "-o") == 0 || strcmp(a, "+o") == 0)))
			i++;
	}
	*bad = 0;
	snprintf(why, whylen, "the interpreter is given no file to run");
	return -ERR_F_COMMAND_NOT_IN_BUNDLE;
}

int jobspec_command_target(const jobspec_command *c, jobspec_target *t, int *bad_arg, char *why,
                           size_t whylen)
{
	memset(t, 0, sizeof(*t));
	*bad_arg = 0;
	if (c->argc < 1) {
		snprintf(why, whylen, "the command is empty");
		return -ERR_F_COMMAND_NOT_IN_BUNDLE;
	}
	const char *a0 = jobspec_command_arg(c, 0);
	if (is_python(a0) || is_shell(a0))
		return interpreted(c, is_python(a0), t, bad_arg, why, whylen);
	t->runs = JOBSPEC_RUNS_FILE;
	t->arg = 0;
	return bundle_path(a0, t->path, sizeof(t->path), why, whylen);
}
