/* version.c — the version of the libe2b actually linked, which a program
 * built against one e2b.h may run against a newer shared library. */
#include "e2b.h"

const char *e2b_version(void) { return E2B_VERSION; }

unsigned e2b_version_num(void) { return E2B_VERSION_NUM; }
