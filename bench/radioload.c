// radioload: holds N HTTP listeners on one radio stream from one process (epoll), and reports
// how many received at least 0.99x the stream's rate over the measured window, and the time to
// the first audio byte (p50/p99/max). Loopback only. Written for bench/radio.sh.
//
//   radioload HOST PORT PATH COUNT RATE_BYTES_PER_S SETTLE_S MEASURE_S [SOURCE_ADDRS [CONNECT_BATCH]]
//
// Connections are opened all at once (non-blocking connects, spread over SOURCE_ADDRS addresses
// 127.0.0.1..N so the ephemeral ports of one address are never short), each sends an HTTP/1.0
// GET (the bare stream until close, for any server), and every byte is read and counted. After
// SETTLE_S seconds the byte counts are snapshot, and again MEASURE_S seconds later. One JSON
// line on stdout. Time to first audio byte is given from connect() (includes the kernel's
// accept queue: a burst of thousands of SYNs overflows it and waits for SYN retransmits) and
// from the request being sent (the server's own latency). CONNECT_BATCH (default 16): after
// every so many connects, the events ready so far are handled (requests sent, answers read), as
// a thousand independent clients would each send their request as soon as they are connected;
// 0 issues every connect before handling any event, so the first connections' times include
// the load generator's own connect phase (tens of ms at thousands).
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

struct conn {
    int fd;
    int state;              // 0 connecting, 1 sending, 2 reading head, 3 reading body, 4 closed
    int sent;
    int head_match;         // how much of "\r\n\r\n" has been seen
    uint64_t started_ns;
    uint64_t first_byte_ns; // first body byte, 0 until then
    uint64_t sent_ns;       // when the request was all sent (the connection was accepted)
    uint64_t body_bytes;
    uint64_t mark_bytes;    // body bytes at the start of the measured window
    int status_ok;
};

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static struct conn *conns;
static int ep;
static char request[512];
static int request_len;
static int failed_connect, closed_early;
static char buffer[256 * 1024];

// One epoll event of connection `i`: finish the connect, send the request, read what came.
static void handle(uint32_t i) {
    struct conn *c = &conns[i];
    if (c->state == 4) return;
    if (c->state == 0) {
        int error = 0;
        socklen_t len = sizeof error;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &error, &len);
        if (error) { close(c->fd); c->state = 4; failed_connect++; return; }
        c->state = 1;
    }
    if (c->state == 1) {
        ssize_t w = send(c->fd, request + c->sent, (size_t)(request_len - c->sent), MSG_NOSIGNAL);
        if (w > 0) c->sent += (int)w;
        if (c->sent == request_len) {
            c->state = 2;
            c->sent_ns = now_ns();
            struct epoll_event ev = {.events = EPOLLIN, .data.u32 = i};
            epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
        }
        return;
    }
    for (int reads = 0; reads < 4; reads++) {
        ssize_t r = recv(c->fd, buffer, sizeof buffer, MSG_DONTWAIT);
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
            close(c->fd);
            c->state = 4;
            closed_early++;
            break;
        }
        if (r < 0) break;
        ssize_t start = 0;
        if (c->state == 2) {
            if (c->head_match == 0 && r >= 12 && memcmp(buffer, "HTTP/1.", 7) == 0 && memcmp(buffer + 9, "200", 3) == 0)
                c->status_ok = 1;
            if (c->head_match == 0 && r >= 12 && memcmp(buffer, "ICY 200", 7) == 0) c->status_ok = 1;
            static const char end[] = "\r\n\r\n";
            for (; start < r && c->head_match < 4; start++) {
                c->head_match = buffer[start] == end[c->head_match] ? c->head_match + 1 : (buffer[start] == '\r');
            }
            if (c->head_match == 4) c->state = 3;
        }
        if (c->state == 3 && r > start) {
            if (!c->first_byte_ns) c->first_byte_ns = now_ns();
            c->body_bytes += (uint64_t)(r - start);
        }
        if (r < (ssize_t)sizeof buffer) break;
    }
}

int main(int argc, char **argv) {
    if (argc < 8) {
        fprintf(stderr, "usage: radioload HOST PORT PATH COUNT RATE SETTLE_S MEASURE_S [SOURCE_ADDRS [CONNECT_BATCH]]\n");
        return 2;
    }
    const char *host = argv[1];
    int port = atoi(argv[2]);
    const char *path = argv[3];
    int count = atoi(argv[4]);
    double rate = atof(argv[5]);
    double settle = atof(argv[6]);
    double measure = atof(argv[7]);
    int sources = argc > 8 ? atoi(argv[8]) : 8;
    int connect_batch = argc > 9 ? atoi(argv[9]) : 16;
    if (connect_batch < 0 || connect_batch > 1000000 ||
        count < 1 || count > 1000000 || port < 1 || port > 65535 || rate <= 0 || sources < 1 || sources > 250 ||
        settle < 0 || settle > 3600 || measure <= 0 || measure > 3600) {
        fprintf(stderr, "radioload: argument out of range\n");
        return 2;
    }
    struct rlimit limit;
    getrlimit(RLIMIT_NOFILE, &limit);
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
    if ((rlim_t)count + 16 > limit.rlim_cur) {
        fprintf(stderr, "radioload: %d connections need more descriptors than the limit (%lu)\n", count,
                (unsigned long)limit.rlim_cur);
        return 2;
    }

    request_len = snprintf(request, sizeof request, "GET %s HTTP/1.0\r\nHost: %s:%d\r\nUser-Agent: radioload\r\n\r\n",
                           path, host, port);
    conns = calloc((size_t)count, sizeof *conns);
    ep = epoll_create1(EPOLL_CLOEXEC);
    if (!conns || ep < 0) { perror("radioload: setup"); return 1; }

    struct sockaddr_in server = {0};
    server.sin_family = AF_INET;
    server.sin_port = htons((uint16_t)port);
    inet_pton(AF_INET, host, &server.sin_addr);

    uint64_t t0 = now_ns();
    struct epoll_event events[1024];
    for (int i = 0; i < count; i++) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) { failed_connect++; conns[i].state = 4; conns[i].fd = -1; continue; }
        int small = 64 * 1024;   // enough for a burst; keeps kernel memory per connection bounded
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
        struct sockaddr_in local = {0};
        local.sin_family = AF_INET;
        local.sin_addr.s_addr = htonl(0x7F000001u + (uint32_t)(i % sources));
        bind(fd, (struct sockaddr *)&local, sizeof local);
        conns[i].fd = fd;
        conns[i].started_ns = now_ns();
        int r = connect(fd, (struct sockaddr *)&server, sizeof server);
        if (r < 0 && errno != EINPROGRESS) { failed_connect++; close(fd); conns[i].state = 4; conns[i].fd = -1; continue; }
        struct epoll_event ev = {.events = EPOLLOUT | EPOLLIN, .data.u32 = (uint32_t)i};
        epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
        if (connect_batch > 0 && (i + 1) % connect_batch == 0) {
            int n = epoll_wait(ep, events, 1024, 0);
            for (int e = 0; e < n; e++) handle(events[e].data.u32);
        }
    }
    uint64_t connected_ns = now_ns();

    uint64_t mark_at = t0 + (uint64_t)(settle * 1e9);
    uint64_t end_at = mark_at + (uint64_t)(measure * 1e9);
    int marked = 0;
    while (1) {
        uint64_t now = now_ns();
        if (!marked && now >= mark_at) {
            for (int i = 0; i < count; i++) conns[i].mark_bytes = conns[i].body_bytes;
            marked = 1;
        }
        if (now >= end_at) break;
        int timeout = (int)(((marked ? end_at : mark_at) - now) / 1000000) + 1;
        if (timeout > 100) timeout = 100;
        int n = epoll_wait(ep, events, 1024, timeout);
        for (int e = 0; e < n; e++) handle(events[e].data.u32);
    }
    uint64_t t_end = now_ns();

    // Results.
    uint64_t *ttfb = calloc((size_t)count, sizeof *ttfb);
    uint64_t *ttfb_req = calloc((size_t)count, sizeof *ttfb_req);
    int with_req = 0;
    int with_audio = 0, at_rate = 0, ok_status = 0;
    double min_rate = 1e18, sum_rate = 0;
    double window = (double)(t_end - mark_at) / 1e9;
    for (int i = 0; i < count; i++) {
        struct conn *c = &conns[i];
        if (c->status_ok) ok_status++;
        if (c->first_byte_ns) ttfb[with_audio++] = c->first_byte_ns - c->started_ns;
        if (c->first_byte_ns && c->sent_ns) ttfb_req[with_req++] = c->first_byte_ns - c->sent_ns;
        double got = (double)(c->body_bytes - c->mark_bytes) / window;
        if (c->state != 4 && got >= 0.99 * rate) at_rate++;
        if (got < min_rate) min_rate = got;
        sum_rate += got;
    }
    qsort(ttfb, (size_t)with_audio, sizeof *ttfb, cmp_u64);
    qsort(ttfb_req, (size_t)with_req, sizeof *ttfb_req, cmp_u64);
    double req_p50 = with_req ? ttfb_req[with_req / 2] / 1e6 : -1;
    double req_p99 = with_req ? ttfb_req[(size_t)((with_req - 1) * 0.99)] / 1e6 : -1;
    double p50 = with_audio ? ttfb[with_audio / 2] / 1e6 : -1;
    double p99 = with_audio ? ttfb[(size_t)((with_audio - 1) * 0.99)] / 1e6 : -1;
    double max = with_audio ? ttfb[with_audio - 1] / 1e6 : -1;
    printf("{\"listeners\":%d,\"connect_failed\":%d,\"status_200\":%d,\"with_audio\":%d,\"closed_early\":%d,"
           "\"at_rate\":%d,\"share_at_rate\":%.4f,\"window_s\":%.1f,\"mean_rate\":%.0f,\"min_rate\":%.0f,"
           "\"ttfb_p50_ms\":%.1f,\"ttfb_p99_ms\":%.1f,\"ttfb_max_ms\":%.1f,\"request_to_audio_p50_ms\":%.1f,"
           "\"request_to_audio_p99_ms\":%.1f,\"connect_phase_ms\":%.0f}\n",
           count, failed_connect, ok_status, with_audio, closed_early, at_rate, (double)at_rate / count, window,
           sum_rate / count, min_rate, p50, p99, max, req_p50, req_p99, (double)(connected_ns - t0) / 1e6);
    return 0;
}
