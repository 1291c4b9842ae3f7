#ifndef RULES_FILE_CALLS_H
#define RULES_FILE_CALLS_H

/// Swaps the files at paths `a` and `b` in one step: each name then holds the other's file
/// (Linux `renameat2` with `RENAME_EXCHANGE`, Darwin `renamex_np` with `RENAME_SWAP`). Both
/// must exist. Returns 0, or -1 with `errno` set: `ENOSYS` where the system has no such call,
/// `EINVAL` or `ENOTSUP` where the file system cannot, and nothing has moved.
int rules_exchange_paths(const char *a, const char *b);

#endif
