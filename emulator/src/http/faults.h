/* faults.h — deterministic fault injection for clients' reliability specs.
 *
 * Rules are added over the admin endpoint (POST /_e2b_local/faults) and
 * matched against every control-plane request ("<METHOD> <path>") and every
 * envd request ("<METHOD> envd:<path>"). A rule fires with its probability,
 * drawn from one PRNG seeded by the caller, until its count is used up. */
#ifndef EMU_FAULTS_H
#define EMU_FAULTS_H

#include <jansson.h>
#include <stdint.h>

typedef enum { FA_NONE = 0, FA_STATUS, FA_STALL, FA_DROP, FA_DROP_MID } fault_action;

/* Who answers an injected status, as on E2B: the control plane (its error
 * body), envd (a Connect error on RPC routes), or the edge proxy in front of
 * envd, which is what refuses with 429 (too many connections). */
enum { FAULT_API = 0, FAULT_CONNECT, FAULT_EDGE };

typedef struct fault_hit {
  fault_action action;
  int status;        /* FA_STATUS */
  int retry_after_s; /* FA_STATUS, -1 = no Retry-After */
  int ms;            /* FA_STALL */
  int64_t after_events, after_bytes; /* FA_DROP_MID, -1 = unset */
  int rule_id;
} fault_hit;

/* Returns 1 and fills *hit when a rule fires for this request. */
int faults_check(const char *method, const char *match_path, fault_hit *hit);

/* Admin API bodies. Each returns the response JSON (new reference) and sets
 * *status; on a bad request *status is 400 and the JSON is an error body. */
json_t *faults_add(json_t *body, int *status);
json_t *faults_list(void);
void faults_clear(void);

#endif
