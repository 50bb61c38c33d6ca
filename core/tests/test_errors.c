/* The error taxonomy: HTTP statuses, Connect codes and curl results map to
 * the API's kinds; "could not look" is never not_found. */
#include "internal.h"
#include "testing.h"

static e2b_error http(int status, req_error_style style, const char *body) {
  e2b_error err;
  e2b_err_from_http(&err, status, style, "op", body, body ? strlen(body) : 0, 7000);
  return err;
}

static void control_plane_statuses_map_to_kinds(void) {
  CHECK(http(404, ERR_CONTROL, "{\"code\":404,\"message\":\"sandbox not found\"}").code == E2B_ERR_NOT_FOUND);
  CHECK(http(401, ERR_CONTROL, NULL).code == E2B_ERR_AUTH);
  CHECK(http(403, ERR_CONTROL, NULL).code == E2B_ERR_AUTH);
  CHECK(http(409, ERR_CONTROL, NULL).code == E2B_ERR_CONFLICT);
  CHECK(http(400, ERR_CONTROL, NULL).code == E2B_ERR_INVALID_ARGUMENT);
  CHECK(http(504, ERR_CONTROL, NULL).code == E2B_ERR_TIMEOUT);
  CHECK(http(501, ERR_CONTROL, NULL).code == E2B_ERR_UNSUPPORTED);
  e2b_error e = http(500, ERR_CONTROL, "{\"code\":500,\"message\":\"boom\"}");
  CHECK(e.code == E2B_ERR_UNAVAILABLE && e.retryable == 1 && e.status == 500);
  CHECK(strstr(e.message, "boom") != NULL);
  e = http(503, ERR_ENVD_HTTP, "<html>bad gateway</html>");
  CHECK(e.code == E2B_ERR_UNAVAILABLE);
  CHECK(strstr(e.message, "bad gateway") != NULL);
}

static void rate_limits_carry_retry_after(void) {
  e2b_error e = http(429, ERR_CONTROL, "{\"code\":429,\"message\":\"slow down\"}");
  CHECK(e.code == E2B_ERR_RATE_LIMITED && e.retryable == 1 && e.retry_after_ms == 7000);
  e = http(500, ERR_CONTROL, NULL);
  CHECK(e.retry_after_ms == -1);
}

static void not_found_only_from_a_real_404(void) {
  int statuses[] = {500, 502, 503, 504, 408, 429};
  for (size_t i = 0; i < sizeof statuses / sizeof statuses[0]; i++)
    CHECK(http(statuses[i], ERR_CONTROL, NULL).code != E2B_ERR_NOT_FOUND);
  /* A Connect route that does not exist answers a plain 404: unimplemented. */
  CHECK(http(404, ERR_CONNECT, NULL).code == E2B_ERR_UNSUPPORTED);
}

static void connect_codes_win_over_http_status(void) {
  e2b_error e = http(404, ERR_CONNECT, "{\"code\":\"not_found\",\"message\":\"no such file\"}");
  CHECK(e.code == E2B_ERR_NOT_FOUND && e.status == 404);
  e = http(400, ERR_CONNECT, "{\"code\":\"already_exists\",\"message\":\"exists\"}");
  CHECK(e.code == E2B_ERR_CONFLICT);
  CHECK(e2b_code_from_connect("unauthenticated") == E2B_ERR_AUTH);
  /* envd refusing a path is not a credentials problem */
  CHECK(e2b_code_from_connect("permission_denied") == E2B_ERR_PERMISSION);
  CHECK(http(403, ERR_ENVD_HTTP, "{\"code\":403,\"message\":\"read-only\"}").code == E2B_ERR_PERMISSION);
  CHECK(http(401, ERR_ENVD_HTTP, NULL).code == E2B_ERR_AUTH);
  CHECK(e2b_code_from_connect("resource_exhausted") == E2B_ERR_RATE_LIMITED);
  CHECK(e2b_code_from_connect("deadline_exceeded") == E2B_ERR_TIMEOUT);
  CHECK(e2b_code_from_connect("unavailable") == E2B_ERR_UNAVAILABLE);
  CHECK(e2b_code_from_connect("canceled") == E2B_ERR_CANCELED);
  CHECK(e2b_code_from_connect("unimplemented") == E2B_ERR_UNSUPPORTED);
  CHECK(e2b_code_from_connect("internal") == E2B_ERR_SANDBOX);
  CHECK(e2b_code_from_connect(NULL) == E2B_ERR_SANDBOX);
}

static void curl_failures_are_could_not_look(void) {
  e2b_error e;
  e2b_err_from_curl(&e, CURLE_COULDNT_CONNECT, "op", "refused");
  CHECK(e.code == E2B_ERR_UNAVAILABLE && e.retryable == 1);
  e2b_err_from_curl(&e, CURLE_OPERATION_TIMEDOUT, "op", NULL);
  CHECK(e.code == E2B_ERR_TIMEOUT);
  e2b_err_from_curl(&e, CURLE_PEER_FAILED_VERIFICATION, "op", NULL);
  CHECK(e.code == E2B_ERR_UNAVAILABLE && e.retryable == 0);
  e2b_err_from_curl(&e, CURLE_RECV_ERROR, "op", NULL);
  CHECK(e.code == E2B_ERR_UNAVAILABLE && e.retryable == 1);
}

static void kinds_have_the_api_names(void) {
  CHECK_STR(e2b_code_name(E2B_ERR_NOT_FOUND), "not_found");
  CHECK_STR(e2b_code_name(E2B_ERR_RATE_LIMITED), "rate_limited");
  CHECK_STR(e2b_code_name(E2B_ERR_INVALID_ARGUMENT), "invalid_argument");
  CHECK_STR(e2b_code_name(E2B_ERR_SANDBOX), "sandbox");
  CHECK_STR(e2b_code_name(E2B_ERR_PERMISSION), "permission");
  CHECK_STR(e2b_code_name(E2B_OK), "ok");
}

static void messages_never_exceed_the_buffer(void) {
  char big[4000];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = 0;
  e2b_error e;
  e2b_err_set(&e, E2B_ERR_SANDBOX, "op", "%s", big);
  CHECK(strlen(e.message) == E2B_ERROR_SIZE - 1);
}

int main(void) {
  RUN(control_plane_statuses_map_to_kinds);
  RUN(rate_limits_carry_retry_after);
  RUN(not_found_only_from_a_real_404);
  RUN(connect_codes_win_over_http_status);
  RUN(curl_failures_are_could_not_look);
  RUN(kinds_have_the_api_names);
  RUN(messages_never_exceed_the_buffer);
  return TESTING_DONE();
}
