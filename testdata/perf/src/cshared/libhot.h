/* libhot: the shared library of the cshared fixture. */
#ifndef LIBHOT_H
#define LIBHOT_H
#include <stdint.h>

uint64_t lib_hash_block(uint64_t seed, int rounds);
uint64_t lib_walk(uint64_t seed, int depth);
#endif
