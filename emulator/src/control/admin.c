/* admin.c — e2b-local's own admin API on the main listener (loopback peers
 * with X-Admin-Token only): fault injection rules, what clients cost the
 * server (connections, TLS handshakes, requests: netstats.h), and the host
 * loopback ports that stand in for the internet (egress.h). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "codec.h"
#include "egress.h"
#include "faults.h"
#include "netstats.h"
#include "server.h"

const char *connect_code_for_status(int status) {
  switch (status) {
  case 400: return "invalid_argument";
  case 401: return "unauthenticated";
  case 403: return "permission_denied";
  case 404: return "not_found";
  case 408: return "deadline_exceeded";
  case 409: return "already_exists";
  case 412: return "failed_precondition";
  case 429: return "resource_exhausted";
  case 499: return "canceled";
  case 501: return "unimplemented";
  case 502:
  case 503: return "unavailable";
  case 504: return "deadline_exceeded";
  case 500: return "internal";
  default: return status >= 500 ? "internal" : "unknown";
  }
}

static int peer_is_loopback(struct MHD_Connection *c) {
  const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  if (!ci || !ci->client_addr) return 0;
  const struct sockaddr *sa = ci->client_addr;
  if (sa->sa_family == AF_INET)
    return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
  if (sa->sa_family == AF_INET6) {
    const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(a)) return 1;
    return IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127;
  }
  return 0;
}

static enum MHD_Result h_faults_post(http_req *r) {
  enum MHD_Result res;
  json_t *b = http_body_json(r, &res);
  if (!b) return res;
  int status = 200;
  json_t *out = faults_add(b, &status);
  json_decref(b);
  return http_json(r->conn, (unsigned)status, out);
}

static enum MHD_Result h_faults_get(http_req *r) { return http_json(r->conn, 200, faults_list()); }

static enum MHD_Result h_faults_delete(http_req *r) {
  faults_clear();
  return http_json(r->conn, 200, json_pack("{s:[]}", "rules"));
}

static json_t *standins_json(void) {
  uint16_t ports[EGRESS_STANDIN_MAX];
  int n = egress_standins(ports);
  json_t *arr = json_array();
  for (int i = 0; i < n; i++) json_array_append_new(arr, json_integer(ports[i]));
  return json_pack("{s:o}", "ports", arr);
}

static enum MHD_Result h_internet_get(http_req *r) { return http_json(r->conn, 200, standins_json()); }

/* {"ports": [1..65535, ...]} replaces the list; DELETE (an empty list) clears it. */
static enum MHD_Result h_internet_put(http_req *r) {
  uint16_t ports[EGRESS_STANDIN_MAX];
  int n = 0;
  if (strcmp(r->method, "PUT") == 0) {
    enum MHD_Result res;
    json_t *b = http_body_json(r, &res);
    if (!b) return res;
    json_t *arr = json_object_get(b, "ports");
    int ok = json_is_array(arr) && json_array_size(arr) <= EGRESS_STANDIN_MAX;
    for (size_t i = 0; ok && i < json_array_size(arr); i++) {
      json_t *v = json_array_get(arr, i);
      ok = json_is_integer(v) && json_integer_value(v) >= 1 && json_integer_value(v) <= 65535;
      if (ok) ports[n++] = (uint16_t)json_integer_value(v);
    }
    json_decref(b);
    if (!ok)
      return http_error(r->conn, 400, "field 'ports' must be an array of at most %d port numbers (1-65535)",
                        EGRESS_STANDIN_MAX);
  }
  egress_set_standins(ports, n);
  return http_json(r->conn, 200, standins_json());
}

static enum MHD_Result h_stats_get(http_req *r) { return http_json(r->conn, 200, netstats_json()); }

static enum MHD_Result h_method(http_req *r) {
  return http_error(r->conn, 405, "method %s not allowed on %s", r->method, r->url);
}

void admin_route(http_req *r) {
  const char *tok = http_header(r->conn, "X-Admin-Token");
  if (!peer_is_loopback(r->conn) || !tok || !g_server.admin_token ||
      !e2b_secure_streq(tok, g_server.admin_token)) {
    r->early_status = 403;
    snprintf(r->early_msg, sizeof r->early_msg, "the admin API needs a loopback peer and a valid X-Admin-Token");
    return;
  }
  if (strcmp(r->url, "/_e2b_local/stats") == 0) {
    r->on_complete = strcmp(r->method, "GET") == 0 ? h_stats_get : h_method;
    return;
  }
  if (strcmp(r->url, "/_e2b_local/internet") == 0) {
    int put = strcmp(r->method, "PUT") == 0 || strcmp(r->method, "DELETE") == 0;
    r->on_complete = put ? h_internet_put : strcmp(r->method, "GET") == 0 ? h_internet_get : h_method;
    return;
  }
  if (strcmp(r->url, "/_e2b_local/faults") != 0) return; /* 404 */
  if (strcmp(r->method, "POST") == 0)
    r->on_complete = h_faults_post;
  else if (strcmp(r->method, "GET") == 0)
    r->on_complete = h_faults_get;
  else if (strcmp(r->method, "DELETE") == 0)
    r->on_complete = h_faults_delete;
  else
    r->on_complete = h_method;
}
