/* error.c — one error taxonomy, mapped from curl results, HTTP statuses and
 * Connect codes. "Could not look" (5xx, resets, timeouts) is never reported
 * as E2B_ERR_NOT_FOUND. */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const code_names[] = {
    "ok",       "not_found",   "auth",     "rate_limited", "timeout",  "unavailable",
    "unsupported", "invalid_argument", "conflict", "canceled", "protocol", "sandbox", "permission",
};

const char *e2b_code_name(e2b_code code) {
  if ((unsigned)code < sizeof code_names / sizeof code_names[0]) return code_names[code];
  return "sandbox";
}

void e2b_error_clear(e2b_error *err) {
  if (!err) return;
  memset(err, 0, sizeof *err);
  err->retry_after_ms = -1;
}

int e2b_err_failed(const e2b_error *err) { return err && err->code != E2B_OK; }

void e2b_err_set(e2b_error *err, e2b_code code, const char *op, const char *fmt, ...) {
  if (!err) return;
  e2b_error_clear(err);
  err->code = code;
  if (op) snprintf(err->op, sizeof err->op, "%s", op);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->message, sizeof err->message, fmt, ap);
  va_end(ap);
  err->retryable = e2b_code_retryable(code);
}

int e2b_code_retryable(e2b_code code) {
  return code == E2B_ERR_UNAVAILABLE || code == E2B_ERR_RATE_LIMITED || code == E2B_ERR_TIMEOUT;
}

void e2b_err_from_curl(e2b_error *err, CURLcode rc, const char *op, const char *detail) {
  const char *what = detail && *detail ? detail : curl_easy_strerror(rc);
  switch (rc) {
  case CURLE_OPERATION_TIMEDOUT:
    e2b_err_set(err, E2B_ERR_TIMEOUT, op, "request timed out (%s)", what);
    break;
  case CURLE_URL_MALFORMAT:
  case CURLE_UNSUPPORTED_PROTOCOL:
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "bad URL (%s)", what);
    break;
  case CURLE_PEER_FAILED_VERIFICATION:
  case CURLE_SSL_CONNECT_ERROR:
  case CURLE_SSL_CERTPROBLEM:
  case CURLE_SSL_CACERT_BADFILE:
    /* Not retryable: TLS verification stays on, so repeating cannot help. */
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, op,
                "TLS failure (%s); a server with a private CA (e2b-local's) is trusted through "
                "ca_file or E2B_CA_FILE", what);
    err->retryable = 0;
    break;
  case CURLE_OUT_OF_MEMORY:
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, op, "out of memory");
    err->retryable = 0;
    break;
  default:
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, op, "could not reach the server (%s)", what);
    break;
  }
}

static e2b_code code_from_status(int status, req_error_style style) {
  switch (status) {
  case 400: return E2B_ERR_INVALID_ARGUMENT;
  case 401: return E2B_ERR_AUTH;
  /* envd's 403 is about a path, not about credentials */
  case 403: return style == ERR_CONTROL ? E2B_ERR_AUTH : E2B_ERR_PERMISSION;
  case 404: return style == ERR_CONNECT ? E2B_ERR_UNSUPPORTED : E2B_ERR_NOT_FOUND;
  case 408:
  case 504: return E2B_ERR_TIMEOUT;
  case 409: return E2B_ERR_CONFLICT;
  case 429: return E2B_ERR_RATE_LIMITED;
  case 501: return E2B_ERR_UNSUPPORTED;
  default:
    if (status >= 500) return E2B_ERR_UNAVAILABLE;
    return E2B_ERR_SANDBOX;
  }
}

e2b_code e2b_code_from_connect(const char *c) {
  static const struct {
    const char *name;
    e2b_code code;
  } map[] = {
      {"not_found", E2B_ERR_NOT_FOUND},          {"invalid_argument", E2B_ERR_INVALID_ARGUMENT},
      {"out_of_range", E2B_ERR_INVALID_ARGUMENT}, {"unauthenticated", E2B_ERR_AUTH},
      {"permission_denied", E2B_ERR_PERMISSION},       {"resource_exhausted", E2B_ERR_RATE_LIMITED},
      {"unavailable", E2B_ERR_UNAVAILABLE},      {"deadline_exceeded", E2B_ERR_TIMEOUT},
      {"canceled", E2B_ERR_CANCELED},            {"already_exists", E2B_ERR_CONFLICT},
      {"aborted", E2B_ERR_CONFLICT},             {"unimplemented", E2B_ERR_UNSUPPORTED},
  };
  for (size_t i = 0; c && i < sizeof map / sizeof map[0]; i++)
    if (strcmp(c, map[i].name) == 0) return map[i].code;
  return E2B_ERR_SANDBOX;
}

void e2b_err_from_connect(e2b_error *err, const char *connect_code, const char *message,
                          const char *op) {
  const char *code = connect_code && *connect_code ? connect_code : "unknown";
  e2b_err_set(err, e2b_code_from_connect(code), op, "%s: %s", code,
              message && *message ? message : "(no message)");
  err->status = e2b_connect_code_http_status(code);
}

/* Takes the message (and Connect code) out of an error body when it is JSON;
 * otherwise quotes the start of the body as text. */
void e2b_err_from_http(e2b_error *err, int status, req_error_style style, const char *op,
                       const char *body, size_t body_len, long retry_after_ms) {
  char text[256] = "";
  const char *connect_code = NULL;
  json_t *root = body_len ? json_loadb(body, body_len, 0, NULL) : NULL;
  if (json_is_object(root)) {
    const char *m = json_string_value(json_object_get(root, "message"));
    if (m) snprintf(text, sizeof text, "%s", m);
    json_t *code = json_object_get(root, "code");
    if (style == ERR_CONNECT && json_is_string(code)) connect_code = json_string_value(code);
  } else if (body_len) {
    size_t n = body_len < sizeof text - 1 ? body_len : sizeof text - 1;
    for (size_t i = 0; i < n; i++) {
      unsigned char ch = (unsigned char)body[i];
      text[i] = ch >= 0x20 && ch < 0x7f ? (char)ch : ' ';
    }
    text[n] = 0;
  }
  if (connect_code) {
    e2b_err_from_connect(err, connect_code, text, op);
  } else {
    e2b_code code = code_from_status(status, style);
    e2b_err_set(err, code, op, "HTTP %d%s%s", status, *text ? ": " : "", text);
  }
  err->status = status;
  if (status == 429) err->retry_after_ms = retry_after_ms;
  /* A 502 from the edge means the sandbox is gone or paused; that is decided
   * above this layer (after one info check), so report it as unavailable. */
  json_decref(root);
}
