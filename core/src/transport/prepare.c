/* prepare.c — what makes an e2b_req a call of a client or a sandbox: its
 * URL, method, JSON body and the headers each kind of request carries
 * (API key, envd routing and access token, Connect protocol, user). It
 * depends on client.c (the configuration) and transfer.c (the request);
 * neither calls back into it. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int set_json_body(e2b_req *req, json_t *body, e2b_error *err) {
  if (!body) return 0;
  char *text = json_dumps(body, JSON_COMPACT);
  if (!text || e2b_growbuf_append(&req->xfer.request_body, text, strlen(text)) != 0) {
    free(text);
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, req->op, "out of memory");
    return -1;
  }
  free(text);
  curl_easy_setopt(req->easy, CURLOPT_POSTFIELDS, req->xfer.request_body.data);
  curl_easy_setopt(req->easy, CURLOPT_POSTFIELDSIZE, (long)req->xfer.request_body.len);
  return e2b_req_add_header(req, "Content-Type", "application/json", err);
}

static int set_method(e2b_req *req, const char *method) {
  if (strcmp(method, "GET") == 0) return 0;
  if (strcmp(method, "POST") == 0) {
    curl_easy_setopt(req->easy, CURLOPT_POST, 1L);
    if (req->xfer.request_body.len == 0) {
      curl_easy_setopt(req->easy, CURLOPT_POSTFIELDS, "");
      curl_easy_setopt(req->easy, CURLOPT_POSTFIELDSIZE, 0L);
    }
    return 0;
  }
  curl_easy_setopt(req->easy, CURLOPT_CUSTOMREQUEST, method);
  return 0;
}

/* Points req at base + path. */
static int set_url(e2b_req *req, const char *base, const char *path, e2b_error *err) {
  size_t n = strlen(base) + strlen(path) + 1;
  char *url = malloc(n);
  if (!url) {
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, req->op, "out of memory");
    return -1;
  }
  snprintf(url, n, "%s%s", base, path);
  curl_easy_setopt(req->easy, CURLOPT_URL, url);
  free(url);
  return 0;
}

int e2b_client_prepare_control(e2b_client *c, e2b_req *req, const char *method, const char *path,
                               json_t *body, e2b_error *err) {
  if (!c->api_key) {
    e2b_err_set(err, E2B_ERR_AUTH, req->op,
                "no API key: set api_key or the E2B_API_KEY environment variable");
    return -1;
  }
  if (set_url(req, c->api_url, path, err) != 0) return -1;
  req->client = c;
  e2b_client_retain(c);
  req->error_style = ERR_CONTROL;
  e2b_req_set_unary(req, c);
  curl_easy_setopt(req->easy, CURLOPT_USERAGENT, c->user_agent);
  if (e2b_req_add_header(req, "X-API-Key", c->api_key, err) != 0 ||
      e2b_req_add_header(req, "Accept", "application/json", err) != 0 ||
      set_json_body(req, body, err) != 0)
    return -1;
  return set_method(req, method);
}

/* A volume content call: the API host, but the volume's own token (a
 * bearer secret, never the API key, which that API does not take). */
int e2b_client_prepare_volume(e2b_client *c, e2b_req *req, const char *method, const char *path,
                              const char *token, json_t *body, e2b_error *err) {
  if (set_url(req, c->api_url, path, err) != 0) return -1;
  req->client = c;
  e2b_client_retain(c);
  req->error_style = ERR_CONTROL;
  curl_easy_setopt(req->easy, CURLOPT_USERAGENT, c->user_agent);
  size_t n = strlen(token) + 8;
  char *bearer = malloc(n);
  if (!bearer) {
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, req->op, "out of memory");
    return -1;
  }
  snprintf(bearer, n, "Bearer %s", token);
  int rc = e2b_req_add_header(req, "Authorization", bearer, err);
  e2b_free_secret(bearer);
  if (rc != 0 || e2b_req_add_header(req, "Accept", "application/json", err) != 0 ||
      /* curl would otherwise wait for "100 Continue" before an upload */
      e2b_req_add_header(req, "Expect", "", err) != 0 || set_json_body(req, body, err) != 0)
    return -1;
  return set_method(req, method);
}

/* Headers every envd request carries, whichever host it goes to. */
int e2b_sbx_prepare_envd(e2b_sbx *s, e2b_req *req, const char *path_and_query, e2b_error *err);
int e2b_sbx_prepare_envd(e2b_sbx *s, e2b_req *req, const char *path_and_query, e2b_error *err) {
  if (s->gone.code) { /* gone is final: nothing more is sent to it (gone.c) */
    *err = s->gone;
    return -1;
  }
  if (set_url(req, s->envd_url, path_and_query, err) != 0) return -1;
  req->sbx = s;
  e2b_sbx_retain(s);
  curl_easy_setopt(req->easy, CURLOPT_USERAGENT, s->client->user_agent);
  char port[16];
  snprintf(port, sizeof port, "%d", E2B_ENVD_PORT);
  if (e2b_req_add_header(req, "E2b-Sandbox-Id", s->sandbox_id, err) != 0 ||
      e2b_req_add_header(req, "E2b-Sandbox-Port", port, err) != 0 ||
      /* curl would otherwise wait for "100 Continue" before large bodies. */
      e2b_req_add_header(req, "Expect", "", err) != 0)
    return -1;
  if (s->access_token && e2b_req_add_header(req, "X-Access-Token", s->access_token, err) != 0)
    return -1;
  return 0;
}

static int add_user_auth(e2b_req *req, const char *user, e2b_error *err) {
  if (!user) return 0;
  size_t n = strlen(user);
  char *plain = malloc(n + 2);
  if (!plain) return -1;
  memcpy(plain, user, n);
  plain[n] = ':';
  char *b64 = e2b_b64_encode_alloc(plain, n + 1);
  free(plain);
  if (!b64) return -1;
  size_t hn = strlen(b64) + 8;
  char *value = malloc(hn);
  if (!value) {
    free(b64);
    return -1;
  }
  snprintf(value, hn, "Basic %s", b64);
  free(b64);
  int rc = e2b_req_add_header(req, "Authorization", value, err);
  free(value);
  return rc;
}

int e2b_sbx_prepare_rpc(e2b_sbx *s, e2b_req *req, const char *method_path, const char *user,
                        json_t *body, int stream, e2b_error *err) {
  if (e2b_sbx_prepare_envd(s, req, method_path, err) != 0) return -1;
  req->error_style = ERR_CONNECT;
  curl_easy_setopt(req->easy, CURLOPT_POST, 1L);
  curl_easy_setopt(req->easy, CURLOPT_CONNECTTIMEOUT_MS, s->client->request_timeout_ms);
  if (e2b_req_add_header(req, "Connect-Protocol-Version", "1", err) != 0 ||
      add_user_auth(req, user, err) != 0)
    return -1;
  char *text = json_dumps(body, JSON_COMPACT);
  if (!text) {
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, req->op, "out of memory");
    return -1;
  }
  size_t len = strlen(text);
  if (stream) {
    /* Server-streaming calls send their one request message enveloped. The
     * body is sized to fit: a kept command's holds its wrapper script, and
     * thousands of them may wait for an answer at once. */
    char *env = malloc(E2B_ENV_HEADER_SIZE + len + 1);
    if (env) {
      e2b_envelope_header(0, (uint32_t)len, (uint8_t *)env);
      memcpy(env + E2B_ENV_HEADER_SIZE, text, len + 1);
    }
    free(text);
    text = env;
    len += E2B_ENV_HEADER_SIZE;
    req->mode = BODY_EVENTS;
    /* A repeated Start would start a second process: never sent twice. */
    e2b_req_no_replay(req);
  } else {
    e2b_req_set_unary(req, s->client);
  }
  if (!text) {
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, req->op, "out of memory");
    return -1;
  }
  e2b_growbuf_free(&req->xfer.request_body);
  req->xfer.request_body = (growbuf){text, len, len + 1}; /* taken as it is, not copied */
  curl_easy_setopt(req->easy, CURLOPT_POSTFIELDS, req->xfer.request_body.data);
  curl_easy_setopt(req->easy, CURLOPT_POSTFIELDSIZE, (long)req->xfer.request_body.len);
  return e2b_req_add_header(req, "Content-Type",
                            stream ? "application/connect+json" : "application/json", err);
}
