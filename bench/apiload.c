// apiload: an open-loop HTTP/1.1 load generator. Requests are due at fixed intervals (1/RATE
// apart, not Poisson) whatever the server does, spread round-robin over CONNECTIONS keep-alive
// connections on loopback; a request whose connection is still busy when it is due waits for it,
// and every latency is measured from the time the request was due, not from when it was sent
// (no coordinated omission: a server that stalls for a second is charged for every request due
// in that second, as the users sending them would see it, where a closed-loop tool like wrk
// sends only CONNECTIONS requests into the stall). Written for bench/library-api.sh.
//
//   apiload HOST PORT TARGETS_FILE RATE DURATION_S [CONNECTIONS [SEED [DRAIN_S [THREADS]]]]
//
// TARGETS_FILE: one request target a line ("/api/search?q=riv"); used round-robin (SEED 0, the
// default) or drawn at random per request from SEED. Requests are due from the start for
// DURATION_S seconds; after that no new one is due, and the ones still waiting or in flight get
// up to DRAIN_S (default 1) to finish. What is still unanswered then is counted as unfinished and
// enters the percentiles with the lower bound of its latency (its wait until the end). Each
// response is read whole (Content-Length, chunked, or until close); non-2xx answers count in
// the percentiles and in non_2xx, broken connections in errors (the connection is reopened).
// The generator's own lateness (a due request released after its time while its connection
// was idle) is reported apart as release_lag; it is included in the latencies. service_p50/p99
// are timed from each request's send instead, as a closed-loop tool times them (no wait for a
// busy connection, no lateness of the generator): for comparing with wrk.
// THREADS (default 2) share the connections (connection i to thread i mod THREADS), each with its
// own epoll: on a busy machine one thread's scheduling delays would stall all 64 connections
// (one thread held streamd to ~4,000 uncached pages/s where two kept 6,000/s). One JSON line on
// stdout. Bounded: fixed arrays (RATE x DURATION_S <= MAX_REQUESTS), a fixed
// response-head buffer per connection, one receive buffer per thread.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNECTIONS 1024
#define MAX_THREADS 8
#define MAX_REQUESTS 8000000     // latencies kept (4 bytes each): 32 MB at most
#define MAX_TARGETS 200000
#define TARGET_BYTES (8 * 1024 * 1024)
#define MAX_TARGET_LEN 1024
#define HEAD_MAX 8192
#define LAG_BUCKETS 100001       // release lag histogram: 1 µs buckets to 100 ms, then one overflow

enum { IDLE, SENDING, HEAD, BODY, DEAD };
enum { BODY_LENGTH, BODY_CHUNK_SIZE, BODY_CHUNK_DATA, BODY_CHUNK_CRLF, BODY_TRAILER, BODY_UNTIL_CLOSE };

struct worker;

struct conn {
    struct worker *w;         // the thread that owns it
    int fd;
    int state;
    uint32_t generation;      // bumped on reopen, so events of the old socket are dropped
    uint32_t events;          // what epoll watches now (a change costs a syscall)
    uint64_t next_k;          // the next request this connection sends (k, k + CONNECTIONS, ...)
    uint64_t k;               // the request in flight
    uint64_t sent_ns;         // when it was sent
    uint64_t idle_since;      // when its last answer ended (or it was opened)
    char request[MAX_TARGET_LEN + 256];
    int request_len, request_sent;
    char head[HEAD_MAX];
    int head_len;
    int status;
    int body_mode;
    int64_t remaining;        // body or chunk bytes still to come
    int chunk_digits, line_len, saw_size_end;
    int close_after;
};

// One thread's share: connections first, first + threads, ...; its own epoll, counters and a
// region of the latency arrays (merged after the run).
struct worker {
    int ep, first;
    uint64_t base, cap, samples, services;
    uint64_t completed_in_window, errors, non_2xx, reconnects, lag_count, lag_max;
    uint64_t lag_hist[LAG_BUCKETS];
    char buffer[256 * 1024];
};

static struct conn conns[MAX_CONNECTIONS];
static struct worker workers[MAX_THREADS];
static uint32_t latency_us[MAX_REQUESTS + MAX_CONNECTIONS];
static uint32_t service_us[MAX_REQUESTS + MAX_CONNECTIONS];   // from the send to the answer: what wrk times
static char targets[TARGET_BYTES];
static uint32_t target_at[MAX_TARGETS];
static int target_count;

// Set before the threads start, read-only after.
static int connections, threads;
static struct sockaddr_in server;
static char host_header[64];
static double rate;
static uint64_t t0, seed, total, window_end, stop_at;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

// When request k is due.
static uint64_t due(uint64_t k) { return t0 + (uint64_t)((double)k * 1e9 / rate); }

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

// splitmix64: the random target of request k depends only on SEED and k.
static uint64_t mix(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

static uint32_t micros(uint64_t ns) { return ns / 1000 > UINT32_MAX ? UINT32_MAX : (uint32_t)(ns / 1000); }

// A request's latency from its due time, in its thread's region (room for every request of its
// connections: each is recorded once, answered or unfinished).
static void record(struct conn *c, uint64_t latency_ns) {
    struct worker *w = c->w;
    if (w->samples < w->cap) latency_us[w->base + w->samples++] = micros(latency_ns);
}

static void watch(int i, uint32_t events) {
    if (conns[i].events == events) return;
    conns[i].events = events;
    struct epoll_event ev = {.events = events, .data.u64 = ((uint64_t)conns[i].generation << 32) | (uint32_t)i};
    epoll_ctl(conns[i].w->ep, EPOLL_CTL_MOD, conns[i].fd, &ev);
}

// Watches connection i's new socket, idle.
static void opened(int i) {
    struct conn *c = &conns[i];
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c->state = IDLE;
    c->idle_since = now_ns();
    c->events = EPOLLIN;
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = ((uint64_t)c->generation << 32) | (uint32_t)i};
    epoll_ctl(c->w->ep, EPOLL_CTL_ADD, c->fd, &ev);
}

// Reopens connection i after the server closed it: a blocking connect (loopback answers at
// once); every send and recv is MSG_DONTWAIT.
static int open_conn(int i) {
    struct conn *c = &conns[i];
    if (c->fd >= 0) close(c->fd);
    c->generation++;
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&server, sizeof server) < 0) {
        if (c->fd >= 0) close(c->fd);
        c->fd = -1;
        c->state = DEAD;
        return -1;
    }
    opened(i);
    return 0;
}

// Opens every connection at once (non-blocking connects, then waits up to 5 s for all), as wrk
// does. Opened one after the other, each connect finds the server idle: streamd's loops wait on
// the listening socket with EPOLLEXCLUSIVE, the same loop is woken every time and all 64
// connections end up on one of its two loops.
static int open_all(void) {
    static struct pollfd pending[MAX_CONNECTIONS];
    for (int i = 0; i < connections; i++) {
        struct conn *c = &conns[i];
        c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (c->fd < 0) return -1;
        if (connect(c->fd, (struct sockaddr *)&server, sizeof server) < 0 && errno != EINPROGRESS) return -1;
        pending[i] = (struct pollfd){.fd = c->fd, .events = POLLOUT};
    }
    uint64_t give_up = now_ns() + 5000000000ull;
    for (int left = connections; left > 0;) {
        if (now_ns() > give_up) { errno = ETIMEDOUT; return -1; }
        if (poll(pending, (nfds_t)connections, 100) < 0 && errno != EINTR) return -1;
        for (int i = 0; i < connections; i++) {
            if (pending[i].fd < 0 || !pending[i].revents) continue;
            int error = 0;
            socklen_t len = sizeof error;
            getsockopt(pending[i].fd, SOL_SOCKET, SO_ERROR, &error, &len);
            if (error) { errno = error; return -1; }
            pending[i].fd = -1;    // poll skips it from now on
            left--;
            opened(i);
        }
    }
    return 0;
}

static void try_send(int i);

// Starts request k on idle connection i.
static void start(int i, uint64_t k) {
    struct conn *c = &conns[i];
    uint64_t t = seed ? mix(seed ^ (k * 0x2545F4914F6CDD1Dull)) % (uint64_t)target_count : k % (uint64_t)target_count;
    c->k = k;
    c->next_k = k + (uint64_t)connections;
    c->request_len = snprintf(c->request, sizeof c->request,
                              "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: apiload\r\n\r\n", targets + target_at[t],
                              host_header);
    c->request_sent = 0;
    c->head_len = 0;
    c->state = SENDING;
    c->sent_ns = now_ns();
    try_send(i);
}

static void fail(int i) {
    conns[i].w->errors++;
    conns[i].w->reconnects++;
    open_conn(i);
}

static void try_send(int i) {
    struct conn *c = &conns[i];
    while (c->request_sent < c->request_len) {
        ssize_t w = send(c->fd, c->request + c->request_sent, (size_t)(c->request_len - c->request_sent),
                         MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && errno == EAGAIN) { watch(i, EPOLLIN | EPOLLOUT); return; }
        if (w <= 0) { fail(i); return; }
        c->request_sent += (int)w;
    }
    watch(i, EPOLLIN);
    c->state = HEAD;
}

// A whole answer: its latencies; the connection is idle (its next request goes out in the
// thread's loop, at once if it is already due).
static void finish(int i, uint64_t now) {
    struct conn *c = &conns[i];
    struct worker *w = c->w;
    record(c, now - due(c->k));
    if (w->services < w->cap) service_us[w->base + w->services++] = micros(now - c->sent_ns);
    if (now <= window_end) w->completed_in_window++;
    if (c->status < 200 || c->status > 299) w->non_2xx++;
    c->state = IDLE;
    c->idle_since = now;
    if (c->close_after) {
        w->reconnects++;
        open_conn(i);
    }
}

// Parses the response head in c->head (complete, ending in CRLFCRLF); 0 when well formed.
static int parse_head(struct conn *c) {
    c->head[c->head_len] = 0;
    if (c->head_len < 12 || memcmp(c->head, "HTTP/1.", 7) != 0) return -1;
    c->status = atoi(c->head + 9);
    c->close_after = c->head[7] == '0';
    int64_t length = -1;
    int chunked = 0;
    for (char *line = strstr(c->head, "\r\n"); line && line[2] != '\r'; line = strstr(line + 2, "\r\n")) {
        char *h = line + 2;
        if (strncasecmp(h, "content-length:", 15) == 0) length = strtoll(h + 15, NULL, 10);
        else if (strncasecmp(h, "transfer-encoding:", 18) == 0) {
            char *end = strstr(h, "\r\n");
            for (char *p = h + 18; p + 7 <= end; p++) if (strncasecmp(p, "chunked", 7) == 0) chunked = 1;
        } else if (strncasecmp(h, "connection:", 11) == 0) {
            char *end = strstr(h, "\r\n");
            for (char *p = h + 11; p + 5 <= end; p++) if (strncasecmp(p, "close", 5) == 0) c->close_after = 1;
        }
    }
    if (c->status < 200 || c->status == 204 || c->status == 304) { c->body_mode = BODY_LENGTH; c->remaining = 0; }
    else if (chunked) { c->body_mode = BODY_CHUNK_SIZE; c->remaining = 0; c->chunk_digits = 0; c->saw_size_end = 0; }
    else if (length >= 0) { c->body_mode = BODY_LENGTH; c->remaining = length; }
    else { c->body_mode = BODY_UNTIL_CLOSE; c->close_after = 1; }
    return c->status < 100 || c->status > 599 ? -1 : 0;
}

static int hex(char ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

// Consumes body bytes; returns how many were used, sets *done when the response ended, -1 on bad framing.
static ssize_t body(struct conn *c, const char *p, ssize_t n, int *done) {
    ssize_t used = 0;
    while (used < n || (c->body_mode == BODY_LENGTH && c->remaining == 0)) {
        switch (c->body_mode) {
        case BODY_LENGTH: {
            ssize_t take = n - used < c->remaining ? n - used : (ssize_t)c->remaining;
            used += take;
            c->remaining -= take;
            if (c->remaining == 0) { *done = 1; return used; }
            break;
        }
        case BODY_UNTIL_CLOSE:
            return n;
        case BODY_CHUNK_SIZE: {
            char ch = p[used++];
            if (ch == '\n') {
                if (c->chunk_digits == 0) return -1;
                c->body_mode = c->remaining ? BODY_CHUNK_DATA : BODY_TRAILER;
                c->line_len = 0;
            } else if (!c->saw_size_end && hex(ch) >= 0) {
                if (++c->chunk_digits > 15) return -1;
                c->remaining = c->remaining * 16 + hex(ch);
            } else {
                c->saw_size_end = 1;    // ";extension" or the CR: ignored up to the LF
            }
            break;
        }
        case BODY_CHUNK_DATA: {
            ssize_t take = n - used < c->remaining ? n - used : (ssize_t)c->remaining;
            used += take;
            c->remaining -= take;
            if (c->remaining == 0) c->body_mode = BODY_CHUNK_CRLF;
            break;
        }
        case BODY_CHUNK_CRLF:
            if (p[used++] == '\n') { c->body_mode = BODY_CHUNK_SIZE; c->chunk_digits = 0; c->saw_size_end = 0; }
            break;
        case BODY_TRAILER: {
            char ch = p[used++];
            if (ch == '\n') {
                if (c->line_len == 0) { *done = 1; return used; }
                c->line_len = 0;
            } else if (ch != '\r' && ++c->line_len > HEAD_MAX) {
                return -1;
            }
            break;
        }
        }
    }
    return used;
}

// Reads what connection i has: the head, then the body; a response may end mid-buffer.
static void readable(int i, uint64_t now) {
    struct conn *c = &conns[i];
    char *buffer = c->w->buffer;
    for (;;) {
        ssize_t r = recv(c->fd, buffer, sizeof c->w->buffer, MSG_DONTWAIT);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && errno == EAGAIN) return;
        if (r == 0 && c->state == BODY && c->body_mode == BODY_UNTIL_CLOSE) { finish(i, now); return; }
        if (r == 0 && c->state == IDLE) { c->w->reconnects++; open_conn(i); return; }   // an idle keep-alive closed
        if (r <= 0 || c->state == IDLE || c->state == SENDING) { fail(i); return; }
        ssize_t at = 0;
        while (at < r) {
            if (c->state == HEAD) {
                // Copy up to the end of the head (bounded); the rest of the buffer is body.
                int before = c->head_len;
                ssize_t room = HEAD_MAX - 1 - c->head_len;
                ssize_t take = r - at < room ? r - at : room;
                memcpy(c->head + c->head_len, buffer + at, (size_t)take);
                c->head_len += (int)take;
                c->head[c->head_len] = 0;
                char *end = strstr(c->head + (before > 3 ? before - 3 : 0), "\r\n\r\n");
                if (!end) {
                    if (c->head_len >= HEAD_MAX - 1) { fail(i); return; }
                    at += take;
                    continue;
                }
                int head_end = (int)(end - c->head) + 4;
                at += head_end - before;
                c->head_len = head_end;
                if (parse_head(c) < 0) { fail(i); return; }
                c->state = BODY;
            }
            int done = 0;
            ssize_t used = body(c, buffer + at, r - at, &done);
            if (used < 0) { fail(i); return; }
            at += used;
            if (done) {
                int close_after = c->close_after;
                finish(i, now);
                if (close_after) return;
                if (at < r) { fail(i); return; }    // bytes nobody asked for
            }
        }
        if (r < (ssize_t)sizeof c->w->buffer) return;
    }
}

static int load_targets(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t used = 0;
    char line[MAX_TARGET_LEN + 2];
    while (fgets(line, sizeof line, f)) {
        size_t n = strcspn(line, "\r\n");
        if (n == strlen(line) && !feof(f)) { fclose(f); return -2; }   // longer than MAX_TARGET_LEN
        line[n] = 0;
        if (n == 0) continue;
        if (target_count >= MAX_TARGETS || used + n + 1 > TARGET_BYTES) { fclose(f); return -3; }
        target_at[target_count++] = (uint32_t)used;
        memcpy(targets + used, line, n + 1);
        used += n + 1;
    }
    fclose(f);
    return target_count ? 0 : -4;
}

// One thread: sends each of its idle connections' next request once it is due, reads answers,
// sleeps until the next due time or an event. Stops at stop_at or when all its requests are done.
static void *run(void *arg) {
    struct worker *w = arg;
    struct epoll_event events[256];
    for (;;) {
        uint64_t now = now_ns(), wake = stop_at;
        int busy = 0;
        for (int i = w->first; i < connections; i += threads) {
            struct conn *c = &conns[i];
            if (c->state == IDLE && c->next_k < total) {
                uint64_t d = due(c->next_k);
                if (d <= now) {
                    if (c->idle_since <= d) {   // idle when it fell due: any wait was the generator's own
                        uint64_t lag = (now - d) / 1000;
                        if (lag > w->lag_max) w->lag_max = lag;
                        w->lag_hist[lag < LAG_BUCKETS - 1 ? lag : LAG_BUCKETS - 1]++;
                        w->lag_count++;
                    }
                    start(i, c->next_k);
                } else if (d < wake) {
                    wake = d;
                }
            }
            if (c->state == SENDING || c->state == HEAD || c->state == BODY || (c->state == IDLE && c->next_k < total))
                busy = 1;
        }
        if (now >= stop_at || !busy) break;
        struct timespec timeout = {0, 0};
        if (wake > now) {
            timeout.tv_sec = (time_t)((wake - now) / 1000000000ull);
            timeout.tv_nsec = (long)((wake - now) % 1000000000ull);
        }
        int n = epoll_pwait2(w->ep, events, 256, &timeout, NULL);
        now = now_ns();
        for (int e = 0; e < n; e++) {
            int i = (int)(uint32_t)events[e].data.u64;
            struct conn *c = &conns[i];
            if ((uint32_t)(events[e].data.u64 >> 32) != c->generation || c->state == DEAD) continue;
            if (c->state == SENDING && (events[e].events & EPOLLOUT)) try_send(i);
            if (events[e].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) readable(i, now);
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: apiload HOST PORT TARGETS_FILE RATE DURATION_S [CONNECTIONS [SEED [DRAIN_S [THREADS]]]]\n");
        return 2;
    }
    const char *host = argv[1];
    int port = atoi(argv[2]);
    rate = atof(argv[4]);
    double duration = atof(argv[5]);
    connections = argc > 6 ? atoi(argv[6]) : 64;
    seed = argc > 7 ? strtoull(argv[7], NULL, 10) : 0;
    double drain = argc > 8 ? atof(argv[8]) : 1;
    threads = argc > 9 ? atoi(argv[9]) : 2;
    if (port < 1 || port > 65535 || !(rate > 0) || rate > 1e6 || !(duration > 0) || duration > 3600 ||
        connections < 1 || connections > MAX_CONNECTIONS || !(drain >= 0) || drain > 60 ||
        rate * duration > MAX_REQUESTS || threads < 1 || threads > MAX_THREADS || threads > connections) {
        fprintf(stderr, "apiload: argument out of range (RATE x DURATION_S <= %d, CONNECTIONS <= %d, "
                "THREADS <= %d and <= CONNECTIONS)\n", MAX_REQUESTS, MAX_CONNECTIONS, MAX_THREADS);
        return 2;
    }
    int loaded = load_targets(argv[3]);
    if (loaded < 0) {
        fprintf(stderr, "apiload: %s: %s\n", argv[3],
                loaded == -1 ? strerror(errno) : loaded == -2 ? "a line longer than 1024 bytes"
                : loaded == -3 ? "more than 200,000 targets or 8 MB" : "no targets");
        return 2;
    }
    server.sin_family = AF_INET;
    server.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, host, &server.sin_addr) != 1) { fprintf(stderr, "apiload: HOST must be an IPv4 address\n"); return 2; }
    snprintf(host_header, sizeof host_header, "%s:%d", host, port);
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);   // wake at the due time, not up to 50 µs after it
    for (int t = 0; t < threads; t++) {
        workers[t].first = t;
        workers[t].ep = epoll_create1(EPOLL_CLOEXEC);
        if (workers[t].ep < 0) { perror("apiload: epoll"); return 1; }
    }
    for (int i = 0; i < connections; i++) {
        conns[i].w = &workers[i % threads];
        conns[i].next_k = (uint64_t)i;
    }
    if (open_all() < 0) { fprintf(stderr, "apiload: connect %s: %s\n", host_header, strerror(errno)); return 1; }

    t0 = now_ns() + 2000000;                  // the threads' start: 2 ms to get them running
    window_end = t0 + (uint64_t)(duration * 1e9);
    while (due(total) < window_end) total++;  // requests due within DURATION_S
    stop_at = window_end + (uint64_t)(drain * 1e9);
    uint64_t base = 0;
    for (int t = 0; t < threads; t++) {
        uint64_t mine = (uint64_t)((connections - t + threads - 1) / threads);
        workers[t].base = base;
        workers[t].cap = mine * (total / (uint64_t)connections + 1);
        base += workers[t].cap;
    }
    pthread_t ids[MAX_THREADS];
    for (int t = 1; t < threads; t++) {
        if (pthread_create(&ids[t], NULL, run, &workers[t]) != 0) { fprintf(stderr, "apiload: no thread\n"); return 1; }
    }
    run(&workers[0]);
    for (int t = 1; t < threads; t++) pthread_join(ids[t], NULL);
    uint64_t end = now_ns();

    // What was never answered: the request in flight on each connection and the ones still
    // waiting behind it, each with the lower bound of its latency.
    uint64_t unfinished = 0;
    for (int i = 0; i < connections; i++) {
        struct conn *c = &conns[i];
        uint64_t k = (c->state == SENDING || c->state == HEAD || c->state == BODY) ? c->k : c->next_k;
        for (; k < total; k += (uint64_t)connections) { record(c, end - due(k)); unfinished++; }
    }
    // Merge the threads' regions and counters.
    uint64_t samples = 0, services = 0, completed_in_window = 0, errors = 0, non_2xx = 0, reconnects = 0;
    uint64_t lag_count = 0, lag_max = 0;
    for (int t = 0; t < threads; t++) {
        struct worker *w = &workers[t];
        memmove(latency_us + samples, latency_us + w->base, (size_t)w->samples * sizeof *latency_us);
        memmove(service_us + services, service_us + w->base, (size_t)w->services * sizeof *service_us);
        samples += w->samples;
        services += w->services;
        completed_in_window += w->completed_in_window;
        errors += w->errors;
        non_2xx += w->non_2xx;
        reconnects += w->reconnects;
        lag_count += w->lag_count;
        if (w->lag_max > lag_max) lag_max = w->lag_max;
        if (t > 0) for (int b = 0; b < LAG_BUCKETS; b++) workers[0].lag_hist[b] += w->lag_hist[b];
    }
    uint64_t *lag_hist = workers[0].lag_hist;
    qsort(latency_us, (size_t)samples, sizeof *latency_us, cmp_u32);
    qsort(service_us, (size_t)services, sizeof *service_us, cmp_u32);
#define SERVICE(q) (services ? service_us[(size_t)((double)(services - 1) * (q))] / 1000.0 : -1.0)
#define PCT(q) (samples ? latency_us[(size_t)((double)(samples - 1) * (q))] / 1000.0 : -1.0)
    uint64_t seen = 0, lag_p50 = 0, lag_p99 = 0;
    for (int b = 0, got50 = 0; b < LAG_BUCKETS; b++) {
        seen += lag_hist[b];
        if (lag_count && !got50 && seen * 2 >= lag_count) { lag_p50 = (uint64_t)b; got50 = 1; }
        if (lag_count && seen * 100 >= lag_count * 99) { lag_p99 = (uint64_t)b; break; }
    }
    double sum = 0;
    for (uint64_t s = 0; s < samples; s++) sum += latency_us[s];
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    printf("{\"connections\":%d,\"threads\":%d,\"rate\":%.0f,\"duration_s\":%.1f,\"requests\":%llu,\"achieved_rate\":%.1f,"
           "\"p50_ms\":%.3f,\"p90_ms\":%.3f,\"p99_ms\":%.3f,\"p999_ms\":%.3f,\"max_ms\":%.3f,\"mean_ms\":%.3f,"
           "\"errors\":%llu,\"non_2xx\":%llu,\"unfinished\":%llu,\"reconnects\":%llu,\"service_p50_ms\":%.3f,\"service_p99_ms\":%.3f,\"release_lag_p50_ms\":%.3f,\"release_lag_p99_ms\":%.3f,\"release_lag_max_ms\":%.3f,"
           "\"cpu_s\":%.2f,\"elapsed_s\":%.2f}\n",
           connections, threads, rate, duration, (unsigned long long)total, (double)completed_in_window / duration,
           PCT(0.5), PCT(0.9), PCT(0.99), PCT(0.999), samples ? latency_us[samples - 1] / 1000.0 : -1.0,
           samples ? sum / (double)samples / 1000.0 : -1.0, (unsigned long long)errors, (unsigned long long)non_2xx,
           (unsigned long long)unfinished, (unsigned long long)reconnects, SERVICE(0.5), SERVICE(0.99), lag_p50 / 1000.0, lag_p99 / 1000.0, lag_max / 1000.0,
           usage.ru_utime.tv_sec + usage.ru_stime.tv_sec + (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6,
           (double)(end - t0) / 1e9);
    return 0;
}
