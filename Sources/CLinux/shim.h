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
#endif
