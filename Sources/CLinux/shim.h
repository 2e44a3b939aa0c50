#ifndef CLINUX_SHIM_H
#define CLINUX_SHIM_H
// Linux-only headers Glibc's Swift module does not cover (epoll, eventfd, sendfile, TCP options).
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <sys/ioctl.h>
#include <linux/sockios.h>
#include <spawn.h>
#include <pthread.h>
#include <sys/inotify.h>
#include <malloc.h>
#include <stdlib.h>
#include <unistd.h>
#include <fcntl.h>
#include <errno.h>
#include <sys/syscall.h>
#include <linux/openat2.h>

// accept4 is declared only under _GNU_SOURCE; declare it here so the module does not need it.
extern int accept4(int sockfd, struct sockaddr *addr, socklen_t *addrlen, int flags);

// Bytes written to a TCP socket that its peer has not acknowledged yet (SIOCOUTQ), or -1.
// A C wrapper because ioctl is variadic.
static inline int clinux_unacknowledged_bytes(int fd) {
    int count = 0;
    return ioctl(fd, SIOCOUTQ, &count) == 0 ? count : -1;
}

// glibc 2.34+, declared only under _GNU_SOURCE: closes every descriptor from `from` up in the child
// (ChildProcess uses it so no socket or file of the server leaks into a worker).
extern int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *actions, int from);
// pipe2 (close-on-exec pipes) is declared only under _GNU_SOURCE too.
extern int pipe2(int pipefd[2], int flags);
// pthread_setname_np (thread names shown by top -H and debuggers), _GNU_SOURCE only as well.
extern int pthread_setname_np(pthread_t thread, const char *name);

// At most `count` malloc arenas unless MALLOC_ARENA_MAX says otherwise. glibc gives threads that
// allocate at once arenas of their own (up to 8 per core) and seldom returns their freed pages;
// streamd's event loops and scanner threads would otherwise each keep their high-water mark.
static inline void clinux_limit_malloc_arenas(int count) {
    if (getenv("MALLOC_ARENA_MAX") == NULL) mallopt(M_ARENA_MAX, count);
}

// openat2(2) with O_RDONLY | O_CLOEXEC and `resolve` (RESOLVE_* flags), or -1 with errno; glibc has
// no wrapper and syscall(2) is variadic. ENOSYS on kernels before 5.6 (the caller falls back).
static inline int clinux_open_beneath(int dirfd, const char *path, unsigned long long resolve) {
#ifdef SYS_openat2
    struct open_how how = { .flags = O_RDONLY | O_CLOEXEC, .mode = 0, .resolve = resolve };
    return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof how);
#else
    errno = ENOSYS;
    return -1;
#endif
}
#endif
