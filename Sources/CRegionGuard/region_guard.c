// The SIGBUS guard of shared regions (region_guard.h).

#include "region_guard.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#define SLOTS 64

static _Atomic(uintptr_t) bases[SLOTS];
// Every guarded mapping is this long (one page of PATH.shm).
static _Atomic(size_t) length;
static struct sigaction previous;
static pthread_once_t once = PTHREAD_ONCE_INIT;

// Runs in the signal handler: only atomic loads and mmap (which Linux and Darwin both treat as
// a plain system call here).
static void on_bus_error(int signal, siginfo_t *info, void *context) {
    uintptr_t address = (uintptr_t)info->si_addr;
    for (int i = 0; i < SLOTS; i++) {
        uintptr_t base = atomic_load(&bases[i]);
        size_t size = atomic_load(&length);
        if (base != 0 && address >= base && address < base + size) {
            // The file under the mapping was cut short: a private page of zeros takes its place,
            // and the faulting load or store runs again on it.
            void *page = mmap((void *)base, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
            if (page != MAP_FAILED) return;
        }
    }
    if (previous.sa_flags & SA_SIGINFO) {
        if (previous.sa_sigaction != NULL) {
            previous.sa_sigaction(signal, info, context);
            return;
        }
    } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
        previous.sa_handler(signal);
        return;
    }
    // The default action: restored, and the fault happens again on return.
    struct sigaction fallback;
    memset(&fallback, 0, sizeof fallback);
    fallback.sa_handler = SIG_DFL;
    sigemptyset(&fallback.sa_mask);
    sigaction(SIGBUS, &fallback, NULL);
}

static void install(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = on_bus_error;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    sigaction(SIGBUS, &action, &previous);
}

int rules_guard_region(void *base, size_t size) {
    pthread_once(&once, install);
    atomic_store(&length, size);
    for (int i = 0; i < SLOTS; i++) {
        uintptr_t expected = 0;
        if (atomic_compare_exchange_strong(&bases[i], &expected, (uintptr_t)base)) return 0;
    }
    return -1;
}

void rules_unguard_region(void *base) {
    for (int i = 0; i < SLOTS; i++) {
        uintptr_t expected = (uintptr_t)base;
        if (atomic_compare_exchange_strong(&bases[i], &expected, 0)) return;
    }
}
