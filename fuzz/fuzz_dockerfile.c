/* fuzz_dockerfile.c — libFuzzer target for core/src/template/dockerfile.c,
 * which reads a Dockerfile somebody else may have written. The whole input
 * is the text. A parse either refuses (field "dockerfile", a message) or
 * gives a base image and steps E2B has: types among RUN, COPY, ENV,
 * WORKDIR, USER with their argument counts, USER root and WORKDIR / first,
 * every string no longer than the text, and within the step bound. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static void check_step(const e2b_template_step *s, size_t size) {
  static const char *const types[] = {"RUN", "COPY", "ENV", "WORKDIR", "USER"};
  static const size_t min[] = {1, 2, 2, 1, 1}, max[] = {1, 3, 2 * E2B_DOCKERFILE_MAX, 1, 1};
  int known = -1;
  for (int t = 0; t < 5; t++)
    if (!strcmp(s->type, types[t])) known = t;
  if (known < 0 || s->arg_count < min[known] || s->arg_count > max[known]) abort();
  if (known == 2 && s->arg_count % 2) abort();
  for (size_t k = 0; k < s->arg_count; k++)
    if (!s->args[k] || strlen(s->args[k]) > size + 16) abort(); /* +16: the defaults' own words */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  e2b_dockerfile d;
  e2b_error err;
  if (e2b_dockerfile_parse((const char *)data, size, &d, &err) != 0) {
    if (err.code != E2B_ERR_INVALID_ARGUMENT || strcmp(err.field, "dockerfile") || !err.message[0]) abort();
    if (d.steps || d.from_image || d.start_cmd) abort();
    return 0;
  }
  if (!d.from_image || d.step_count < 4 || d.step_count > E2B_DOCKERFILE_STEPS_MAX) abort();
  if (strcmp(d.steps[0].type, "USER") || strcmp(d.steps[0].args[0], "root")) abort();
  if (strcmp(d.steps[1].type, "WORKDIR") || strcmp(d.steps[1].args[0], "/")) abort();
  for (size_t i = 0; i < d.step_count; i++) check_step(&d.steps[i], size);
  if (d.start_cmd && strlen(d.start_cmd) > size) abort();
  e2b_dockerfile_free(&d);
  return 0;
}
