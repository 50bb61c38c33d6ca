/* loopback.h — a listening loopback socket for tests that need a peer. A
 * test that never accepts gets a peer that never answers (a request to it is
 * connected by the kernel's backlog); one that accepts plays the server. */
#ifndef E2B_TEST_LOOPBACK_H
#define E2B_TEST_LOOPBACK_H
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <stdio.h>
#include <unistd.h>

#include "e2b.h"

/* The socket, or -1; *port gets its port. */
static int listen_loopback(int *port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 8) != 0 ||
      getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  *port = ntohs(a.sin_port);
  return fd;
}

/* A client whose API is the loopback port: a request's attempt may wait
 * 30 s (its deadline is curl's), the call 60 s; retries extra attempts. */
static inline e2b_client *loopback_client(e2b_loop *loop, int port, int retries) {
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
  e2b_config cfg = {0};
  cfg.api_key = "test-key";
  cfg.api_url = url;
  cfg.request_timeout_ms = 30000;
  cfg.budget_ms = 60000;
  cfg.max_retries = retries;
  e2b_error err;
  return e2b_client_new(loop, &cfg, &err);
}

/* A loop, a client and a sandbox handle ("sbx") whose API and envd are a
 * loopback socket that never answers: requests start and wait. */
typedef struct loopback_env {
  int fd;
  e2b_loop *loop;
  e2b_client *client;
  e2b_sbx *sbx;
} loopback_env;

/* 0, or -1 with nothing left to close. */
static inline int loopback_env_open(loopback_env *env) {
  int port = 0;
  *env = (loopback_env){.fd = listen_loopback(&port)};
  if (env->fd < 0) return -1;
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
  e2b_config cfg = {0};
  cfg.api_key = "test-key";
  cfg.api_url = url;
  cfg.sandbox_url = url;
  e2b_error err;
  env->loop = e2b_loop_new(&err);
  env->client = env->loop ? e2b_client_new(env->loop, &cfg, &err) : NULL;
  env->sbx = env->client ? e2b_sbx_new(env->client, "sbx", "token", NULL, &err) : NULL;
  return env->sbx ? 0 : -1;
}

/* Closes the socket first, so that unattended requests fail and are freed
 * (the loop steps until they are, for at most 20 s); returns how many were
 * left. */
static inline size_t loopback_env_close(loopback_env *env) {
  if (env->sbx) e2b_sbx_release(env->sbx);
  if (env->fd >= 0) close(env->fd);
  size_t left = 0;
  if (env->loop) {
    for (int i = 0; i < 400 && e2b_loop_unattended(env->loop) > 0; i++) e2b_loop_step(env->loop, 50);
    left = e2b_loop_unattended(env->loop);
  }
  if (env->client) e2b_client_release(env->client);
  if (env->loop) e2b_loop_release(env->loop);
  *env = (loopback_env){.fd = -1};
  return left;
}
#endif
