// CRC-32 of the state file's records (zlib's: the reflected polynomial 0xEDB88320) by folding
// 16 bytes at a step with carry-less multiplication, then a Barrett reduction to 32 bits.
//
// In the reflected domain a 16-byte block read little-endian is a polynomial whose bit i is
// the coefficient of x^(127 - i). Moving the running remainder 128 bits along is a product
// with x^128: its low 64 bits (the higher degrees) by x^(128 + 32) mod P and its high 64 bits
// by x^(128 - 32) mod P, each constant stored reflected and shifted left once (33 bits) so
// that the 64 x 33-bit products land aligned with the next block. The same steps take 128 bits
// to 64 (x^96) and 64 to 32 (x^64); Barrett's reduction ends with mu = x^64 div P and P
// itself, both reflected to 33 bits. The constants are computed, not copied: ChecksumTests
// derives them from the polynomial and compares them with the header's.

#include "crc32_fold.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#include <string.h>

// The CRC of each byte value (`byte_table[0]`), and of it followed by k zero bytes
// (`byte_table[k]`), for the bytes after the last whole block and for short buffers: eight
// bytes at a time from eight independent lookups, where a byte at a time waits for each
// lookup before the next (a record's 8-byte header and its last 0-15 bytes: about 30 ns of
// a file trigger's 1 us here). Filled by `rules_crc32_fold_available`, which callers run
// before the first fold.
static uint32_t byte_table[8][256];

int rules_crc32_fold_available(void) {
    for (uint32_t byte = 0; byte < 256; byte++) {
        uint32_t crc = byte;
        for (int k = 0; k < 8; k++) crc = crc & 1 ? (crc >> 1) ^ 0xEDB88320u : crc >> 1;
        byte_table[0][byte] = crc;
    }
    for (int k = 1; k < 8; k++) {
        for (uint32_t byte = 0; byte < 256; byte++) {
            uint32_t before = byte_table[k - 1][byte];
            byte_table[k][byte] = (before >> 8) ^ byte_table[0][before & 0xFF];
        }
    }
    unsigned int a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    // ECX bit 1: PCLMULQDQ; bit 19: SSE4.1 (for the last extract).
    return (c & (1u << 1)) && (c & (1u << 19)) ? 1 : 0;
}

// The bytes after the blocks (at most 15, or a short buffer): eight at a time, then one at a
// time. x86-64 is little-endian: the first byte is the word's lowest.
static uint32_t crc32_bytes(uint32_t crc, const unsigned char *p, size_t count) {
    uint32_t state = ~crc;
    for (; count >= 8; p += 8, count -= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        word ^= state;
        state = byte_table[7][word & 0xFF] ^ byte_table[6][(word >> 8) & 0xFF] ^ byte_table[5][(word >> 16) & 0xFF]
                ^ byte_table[4][(word >> 24) & 0xFF] ^ byte_table[3][(word >> 32) & 0xFF]
                ^ byte_table[2][(word >> 40) & 0xFF] ^ byte_table[1][(word >> 48) & 0xFF] ^ byte_table[0][word >> 56];
    }
    for (size_t k = 0; k < count; k++) state = byte_table[0][(state ^ p[k]) & 0xFF] ^ (state >> 8);
    return ~state;
}

__attribute__((target("pclmul,sse4.1")))
uint32_t rules_crc32_fold(uint32_t crc, const void *bytes, size_t count) {
    const unsigned char *p = (const unsigned char *)bytes;
    size_t blocks = count >> 4;
    if (blocks == 0) return crc32_bytes(crc, p, count);
    const __m128i fold128 = _mm_set_epi64x((long long)RULES_CRC32_K96, (long long)RULES_CRC32_K160);
    const __m128i fold32 = _mm_set_epi64x(0, (long long)RULES_CRC32_K64);
    const __m128i barrett = _mm_set_epi64x((long long)RULES_CRC32_MU, (long long)RULES_CRC32_P);
    const __m128i low32 = _mm_set_epi32(0, 0, 0, -1);
    __m128i x = _mm_xor_si128(_mm_loadu_si128((const __m128i *)p), _mm_cvtsi32_si128((int)~crc));
    for (size_t k = 1; k < blocks; k++) {
        __m128i low = _mm_clmulepi64_si128(x, fold128, 0x00);   // x.lo * x^160
        __m128i high = _mm_clmulepi64_si128(x, fold128, 0x11);  // x.hi * x^96
        x = _mm_xor_si128(_mm_xor_si128(low, high), _mm_loadu_si128((const __m128i *)(p + 16 * k)));
    }
    // 128 bits to 64: x.lo * x^96, plus x.hi.
    x = _mm_xor_si128(_mm_srli_si128(x, 8), _mm_clmulepi64_si128(x, fold128, 0x10));
    // 64 to 32: the low 32 bits * x^64, plus the rest.
    x = _mm_xor_si128(_mm_srli_si128(x, 4), _mm_clmulepi64_si128(_mm_and_si128(x, low32), fold32, 0x00));
    // Barrett: t = (x.low32 * mu).low32 * P; the remainder is bits 32-63 of x + t.
    __m128i t = _mm_clmulepi64_si128(_mm_and_si128(x, low32), barrett, 0x10);
    t = _mm_clmulepi64_si128(_mm_and_si128(t, low32), barrett, 0x00);
    x = _mm_xor_si128(x, t);
    uint32_t folded = ~(uint32_t)_mm_extract_epi32(x, 1);
    return crc32_bytes(folded, p + 16 * blocks, count & 15);
}

#else

// Elsewhere (arm64 included, whose CRC-32 instructions no machine here can test) the caller's
// tables do the work.
int rules_crc32_fold_available(void) { return 0; }

uint32_t rules_crc32_fold(uint32_t crc, const void *bytes, size_t count) {
    (void)bytes;
    (void)count;
    return crc;
}

#endif
