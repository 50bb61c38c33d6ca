/* sudo_client.c — `sudo` inside a sandbox: hands the command, its
 * environment, working directory and stdio to the agent (sudo.h) and
 * exits with the command's status. */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sudo.h"

extern char **environ;

static int usage(void) {
  fprintf(stderr, "usage: sudo [-u USER] [-E] [-n] [-H] [-i | -s] [--] COMMAND [ARGS...]\n"
                  "(e2b-local: the sandbox's agent runs COMMAND as USER, root by default)\n");
  return 1;
}

/* Parses the options sudo users rely on; returns the index of the command. */
static int parse(int argc, char **argv, const char **user, int *keep_env, int *shell) {
  int i = 1;
  for (; i < argc && argv[i][0] == '-'; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--") == 0) return i + 1;
    if (strcmp(a, "-u") == 0 && i + 1 < argc) {
      *user = argv[++i];
    } else if (strncmp(a, "--user=", 7) == 0) {
      *user = a + 7;
    } else if (strcmp(a, "-E") == 0 || strcmp(a, "--preserve-env") == 0) {
      *keep_env = 1;
    } else if (strcmp(a, "-i") == 0 || strcmp(a, "--login") == 0) {
      *shell = 2;
    } else if (strcmp(a, "-s") == 0 || strcmp(a, "--shell") == 0) {
      *shell = 1;
    } else if (strcmp(a, "-n") != 0 && strcmp(a, "-H") != 0 && strcmp(a, "-S") != 0) {
      fprintf(stderr, "sudo: option %s is not supported in e2b-local\n", a);
      return -1;
    }
  }
  return i;
}

static json_t *request(int argc, char **argv, int first, const char *user, int keep_env, int shell) {
  json_t *args = json_array(), *env = json_array();
  if (shell) json_array_append_new(args, json_string("/bin/bash"));
  if (shell == 2) json_array_append_new(args, json_string("-l"));
  if (shell && first < argc) json_array_append_new(args, json_string("-c"));
  for (int i = first; i < argc; i++) json_array_append_new(args, json_string(argv[i]));
  for (char **e = environ; *e; e++) {
    /* sudo's env_reset: the target user's identity, the caller's terminal and path */
    int keep = keep_env || strncmp(*e, "PATH=", 5) == 0 || strncmp(*e, "TERM=", 5) == 0 ||
               strncmp(*e, "LANG=", 5) == 0 || strncasecmp(*e, "http_proxy=", 11) == 0 ||
               strncasecmp(*e, "https_proxy=", 12) == 0 || strncasecmp(*e, "no_proxy=", 9) == 0;
    if (keep) json_array_append_new(env, json_string(*e));
  }
  char cwd[4096];
  return json_pack("{s:s, s:s, s:b, s:o, s:o}", "user", user, "cwd", getcwd(cwd, sizeof cwd) ? cwd : "/",
                   "login", shell == 2, "argv", args, "env", env);
}

static int send_request(int s, json_t *req) {
  char *text = json_dumps(req, JSON_COMPACT);
  if (!text || strlen(text) > SUDO_REQUEST_MAX) {
    free(text);
    errno = E2BIG;
    return -1;
  }
  int fds[3] = {0, 1, 2};
  char ctl[CMSG_SPACE(sizeof fds)];
  struct iovec iov = {text, strlen(text)};
  struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
  struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof fds);
  memcpy(CMSG_DATA(c), fds, sizeof fds);
  ssize_t n = sendmsg(s, &mh, MSG_NOSIGNAL);
  free(text);
  return n < 0 ? -1 : 0;
}

int sudo_main(int argc, char **argv) {
  const char *user = "root";
  int keep_env = 0, shell = 0;
  int first = parse(argc, argv, &user, &keep_env, &shell);
  if (first < 0) return 1;
  if (first >= argc && !shell) return usage();
  int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  memcpy(sa.sun_path + 1, SUDO_SOCKET, sizeof SUDO_SOCKET - 1);
  socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + sizeof SUDO_SOCKET - 1);
  json_t *req = request(argc, argv, first, user, keep_env, shell);
  if (s < 0 || connect(s, (struct sockaddr *)&sa, len) != 0 || send_request(s, req) != 0) {
    fprintf(stderr, "sudo: cannot reach the sandbox's agent: %s\n", strerror(errno));
    return 1;
  }
  json_decref(req);
  /* The answer: the command's wait status, or why it could not run. */
  char buf[512];
  ssize_t n;
  do {
    n = recv(s, buf, sizeof buf - 1, 0);
  } while (n < 0 && errno == EINTR);
  if (n <= 0) {
    fprintf(stderr, "sudo: the agent did not answer\n");
    return 1;
  }
  buf[n] = '\0';
  int status;
  if (sscanf(buf, "status %d", &status) == 1)
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  fprintf(stderr, "sudo: %s\n", buf);
  return strstr(buf, ": command not found") ? 127 : 1;
}
