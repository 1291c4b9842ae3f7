// File system calls Swift's system modules leave out (file_calls.h).

#if defined(__linux__)
#define _GNU_SOURCE
#endif

#include "file_calls.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#if defined(__linux__)
#include <sys/syscall.h>
#endif

int rules_exchange_paths(const char *a, const char *b) {
#if defined(__linux__) && defined(SYS_renameat2)
    // Through syscall(2): glibc before 2.28 and other C libraries have no renameat2 wrapper.
    // RENAME_EXCHANGE is (1 << 1) in linux/fs.h, which not every C library's headers include.
    return (int)syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, 1u << 1);
#elif defined(__APPLE__)
    return renamex_np(a, b, RENAME_SWAP);
#else
    (void)a;
    (void)b;
    errno = ENOSYS;
    return -1;
#endif
}
