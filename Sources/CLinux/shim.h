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

// accept4 is declared only under _GNU_SOURCE; declare it here so the module does not need it.
extern int accept4(int sockfd, struct sockaddr *addr, socklen_t *addrlen, int flags);
#endif
