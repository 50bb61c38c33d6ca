/* control_parse.h — the request parsers of the control plane's create and
 * list routes, exposed as pure functions so fuzz/fuzz_control.c can reach
 * them (control.c keeps the logic). */
#ifndef EMU_CONTROL_PARSE_H
#define EMU_CONTROL_PARSE_H

#include <jansson.h>
#include <stddef.h>

/* A NewSandbox body (without volume mounts): 0, or -1 with a message in err. */
int control_parse_create(json_t *body, char *err, size_t cap);
/* The list route's ?metadata= query: an object of pairs (new reference), or
 * NULL when no sandbox can match. */
json_t *control_parse_metadata_filter(const char *query);

#endif
