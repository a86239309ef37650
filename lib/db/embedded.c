/*
 * embedded.c - lookup in the generated embedded_files table.
 */
#include "embedded.h"

#include <string.h>

const embedded_file *embedded_find(const char *path)
{
	for (const embedded_file *f = embedded_files; f->path; f++)
		if (strcmp(f->path, path) == 0)
			return f;
	return NULL;
}
