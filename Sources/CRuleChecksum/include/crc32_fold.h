#ifndef RULES_CRC32_FOLD_H
#define RULES_CRC32_FOLD_H

#include <stddef.h>
#include <stdint.h>

/// The folding constants: reflect32(x^e mod P) << 1 for e = 160, 96 and 64; x^64 div P and P,
/// reflected to 33 bits (P is CRC-32's polynomial, 0x104C11DB7).
#define RULES_CRC32_K160 0x1751997d0ULL
#define RULES_CRC32_K96 0x0ccaa009eULL
#define RULES_CRC32_K64 0x163cd6124ULL
#define RULES_CRC32_MU 0x1f7011641ULL
#define RULES_CRC32_P 0x1db710641ULL

/// Whether `rules_crc32_fold` runs on this CPU: 1 on x86-64 with carry-less multiplication
/// (PCLMULQDQ) and SSE4.1, 0 elsewhere (the caller then uses its tables). Called once, before
/// the first `rules_crc32_fold`.
int rules_crc32_fold_available(void);

/// Continues zlib's CRC-32 `crc` over the `count` bytes at `bytes` and returns it: whole 16-byte
/// blocks folded, the rest a byte at a time. Only where `rules_crc32_fold_available()` said 1.
uint32_t rules_crc32_fold(uint32_t crc, const void *bytes, size_t count);

#endif
