/*
 * version.h - which trainyard this is: the release (the VERSION file) and
 * the commit it was built from (git, when the build had one; else
 * "unknown"). Written into build/gen/version.c by tools/version-gen.
 */
#ifndef TY_VERSION_H
#define TY_VERSION_H

extern const char trainyard_version[];
extern const char trainyard_revision[];

#endif
