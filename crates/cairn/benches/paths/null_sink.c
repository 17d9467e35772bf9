// A null HTTP/1.1 server: reads each request's body and answers 204 at once, or, given a
// file, appends each body to it and fdatasyncs before the 204. What curl alone can do over
// loopback, 8 MiB PATCHes against one PATCH (BENCHMARKS.md, "What the 8 MiB PATCHes lose").
//   cc -O2 -o null_sink null_sink.c && ./null_sink PORT [FILE]
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <strings.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <fcntl.h>
static char buf[1<<20];
int main(int argc, char **argv) {
  int port = atoi(argv[1]);
  int sync_fd = argc > 2 ? open(argv[2], O_WRONLY|O_CREAT|O_TRUNC, 0644) : -1;
  int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {0}; a.sin_family = AF_INET; a.sin_port = htons(port); a.sin_addr.s_addr = htonl(0x7f000001);
  if (bind(s, (void*)&a, sizeof a) || listen(s, 16)) { perror("bind"); return 1; }
  for (;;) {
    int c = accept(s, 0, 0);
    size_t have = 0;
    for (;;) {
      char *end;
      while (!(end = memmem(buf, have, "\r\n\r\n", 4))) {
        ssize_t n = read(c, buf + have, sizeof buf - have);
        if (n <= 0) goto done;
        have += n;
      }
      size_t head = end + 4 - buf;
      long long len = 0;
      for (char *p = buf; p < end; p++)
        if (!strncasecmp(p, "\ncontent-length:", 16)) len = atoll(p + 16);
      long long got = have - head;
      if (got > len) got = len; // no pipelining from curl
      if (sync_fd >= 0) write(sync_fd, buf + head, got);
      while (got < len) {
        ssize_t n = read(c, buf, sizeof buf < (size_t)(len - got) ? sizeof buf : (size_t)(len - got));
        if (n <= 0) goto done;
        if (sync_fd >= 0) write(sync_fd, buf, n);
        got += n;
      }
      if (sync_fd >= 0) fdatasync(sync_fd);
      have = 0;
      const char *r = "HTTP/1.1 204 No Content\r\nTus-Resumable: 1.0.0\r\n\r\n";
      write(c, r, strlen(r));
    }
  done:
    close(c);
  }
}
