#ifndef RULES_REGION_GUARD_H
#define RULES_REGION_GUARD_H

#include <stddef.h>

/// Guards a shared mapping of a file that something else may cut short (PATH.shm): a load or
/// store there that would raise SIGBUS finds a private page of zeros instead, so the process
/// lives on and sees the region's magic gone. Installs the SIGBUS handler the first time; a
/// fault anywhere else goes to the handler installed before it (or the default action).
/// Every guarded mapping has the same `size`. Returns 0, or -1 when all 64 guard slots are
/// taken (the mapping is then unguarded).
int rules_guard_region(void *base, size_t size);

/// Stops guarding the mapping at `base` (before it is unmapped).
void rules_unguard_region(void *base);

#endif
