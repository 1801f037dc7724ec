/* The system calls a G's descriptor I/O makes, as raw system calls.
 *
 * glibc's read, write, recv, send, sendmsg and writev are cancellation
 * points: in a process with more than one thread each wraps its system
 * call in two atomic updates of the calling thread's cancel state. An M
 * is never cancelled, so that is pure cost on every read and write (Go's
 * runtime calls the kernel directly too). Under a sanitizer the libc
 * calls stay: their interceptors check the buffers (ASan) and order what
 * passes through a descriptor (TSan). Each returns what the libc call
 * would, -1 with errno set on failure. */
#ifndef PTIMER_SCHED_SYSIO_H
#define PTIMER_SCHED_SYSIO_H

#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/sanitized.h"

#ifdef PT__SANITIZED
#define PT__SYS(raw, libc) libc
#else
#define PT__SYS(raw, libc) raw
#endif

static inline ssize_t pt__sys_read(int fd, void *buf, size_t n)
{
    return PT__SYS(syscall(SYS_read, fd, buf, n), read(fd, buf, n));
}

static inline ssize_t pt__sys_write(int fd, const void *buf, size_t n)
{
    return PT__SYS(syscall(SYS_write, fd, buf, n), write(fd, buf, n));
}

static inline ssize_t pt__sys_writev(int fd, const struct iovec *iov, int k)
{
    return PT__SYS(syscall(SYS_writev, fd, iov, k), writev(fd, iov, k));
}

static inline ssize_t pt__sys_recv(int fd, void *buf, size_t n)
{
    return PT__SYS(syscall(SYS_recvfrom, fd, buf, n, 0, NULL, NULL), recv(fd, buf, n, 0));
}

static inline ssize_t pt__sys_send(int fd, const void *buf, size_t n, int flags)
{
    return PT__SYS(syscall(SYS_sendto, fd, buf, n, flags, NULL, 0), send(fd, buf, n, flags));
}

static inline ssize_t pt__sys_sendmsg(int fd, const struct msghdr *msg, int flags)
{
    return PT__SYS(syscall(SYS_sendmsg, fd, msg, flags), sendmsg(fd, msg, flags));
}

#endif
