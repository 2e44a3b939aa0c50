// radiofloor: the least a radio server can do, as a floor for bench/radio.sh's figures: one
// epoll thread that accepts, reads a request head, answers with a response head and BURST bytes
// at once, then sends RATE*TICK_MS/1000 bytes to every listener every TICK_MS (default 250) ms (one send each, dropped when
// the socket is full). Run against the same load generator in the same run, its time to first
// byte is the load generator's and the kernel's share of a server's figure. Loopback only.
//
//   radiofloor PORT_FILE [BURST [RATE [TICK_MS]]]
//
// Binds 127.0.0.1 on a free port, writes the port to PORT_FILE, serves until killed.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { MAX_FDS = 1 << 20 };
static unsigned char state[MAX_FDS];   // 0 unused, 1 waiting for the request, 2 streaming
static int streaming[MAX_FDS];
static int streaming_count;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: radiofloor PORT_FILE [BURST [RATE [TICK_MS]]]\n"); return 2; }
    int burst = argc > 2 ? atoi(argv[2]) : 4096;
    int rate = argc > 3 ? atoi(argv[3]) : 16000;
    int tick_ms = argc > 4 ? atoi(argv[4]) : 250;
    if (burst < 1 || burst > (1 << 20) || rate < 4 || rate > (1 << 24) || tick_ms < 10 || tick_ms > 10000) { fprintf(stderr, "radiofloor: bad size\n"); return 2; }
    struct rlimit limit;
    getrlimit(RLIMIT_NOFILE, &limit);
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);

    static const char head[] = "HTTP/1.0 200 OK\r\nContent-Type: audio/mpeg\r\nCache-Control: no-cache\r\n\r\n";
    int first_len = (int)sizeof head - 1 + burst;
    int tick_len = (int)((int64_t)rate * tick_ms / 1000);
    uint64_t tick_ns = (uint64_t)tick_ms * 1000000ull;
    char *first = malloc((size_t)first_len), *tick = calloc((size_t)tick_len, 1);
    if (!first || !tick) return 1;
    memcpy(first, head, sizeof head - 1);
    memset(first + sizeof head - 1, 0x55, (size_t)burst);

    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = 0};
    inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    socklen_t alen = sizeof addr;
    if (bind(lfd, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(lfd, 4096) < 0 ||
        getsockname(lfd, (struct sockaddr *)&addr, &alen) < 0) { perror("radiofloor: listen"); return 1; }
    FILE *pf = fopen(argv[1], "w");
    if (!pf) { perror("radiofloor: port file"); return 1; }
    fprintf(pf, "%d\n", ntohs(addr.sin_port));
    fclose(pf);

    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = lfd};
    epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
    struct epoll_event events[256];
    char input[4096];
    uint64_t next_tick = now_ns() + tick_ns;
    for (;;) {
        uint64_t now = now_ns();
        int timeout = now >= next_tick ? 0 : (int)((next_tick - now) / 1000000) + 1;
        int n = epoll_wait(ep, events, 256, timeout);
        for (int e = 0; e < n; e++) {
            int fd = events[e].data.fd;
            if (fd == lfd) {
                for (;;) {
                    int c = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                    if (c < 0) break;
                    if (c >= MAX_FDS) { close(c); continue; }
                    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    state[c] = 1;
                    struct epoll_event cev = {.events = EPOLLIN, .data.fd = c};
                    epoll_ctl(ep, EPOLL_CTL_ADD, c, &cev);
                }
                continue;
            }
            ssize_t r = recv(fd, input, sizeof input, 0);
            if (r == 0 || (r < 0 && errno != EAGAIN)) {
                epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
                close(fd);
                if (state[fd] == 2) {
                    for (int i = 0; i < streaming_count; i++)
                        if (streaming[i] == fd) { streaming[i] = streaming[--streaming_count]; break; }
                }
                state[fd] = 0;
                continue;
            }
            if (state[fd] == 1 && r > 0 && memmem(input, (size_t)r, "\r\n\r\n", 4)) {
                send(fd, first, (size_t)first_len, MSG_NOSIGNAL);
                state[fd] = 2;
                streaming[streaming_count++] = fd;
            }
        }
        if (now_ns() >= next_tick) {
            next_tick += tick_ns;
            for (int i = 0; i < streaming_count; i++) send(streaming[i], tick, (size_t)tick_len, MSG_NOSIGNAL | MSG_DONTWAIT);
        }
    }
}
