/*
 * libhot.so: busy code in a shared library of our own, so that the cshared
 * fixtures have samples (leaf and callchain) in a DSO other than the main
 * executable. noinline keeps every function a real frame in the
 * frame-pointer callchains.
 */
#include "libhot.h"

#define NOINLINE __attribute__((noinline))

/* lib_mix is a leaf: most library samples land here. */
static NOINLINE uint64_t lib_mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

NOINLINE uint64_t lib_hash_block(uint64_t seed, int rounds)
{
	uint64_t h = seed;
	for (int i = 0; i < rounds; i++)
		h = lib_mix(h + (uint64_t)i);
	return h;
}

/*
 * lib_walk recurses depth times before hashing, so callchains through the
 * library are several frames deep (the large benchmark recording uses a deep
 * depth to make big callchains).
 */
NOINLINE uint64_t lib_walk(uint64_t seed, int depth)
{
	if (depth <= 0)
		return lib_hash_block(seed, 2000);
	uint64_t r = lib_walk(seed * 31 + (uint64_t)depth, depth - 1);
	__asm__ volatile("" : "+r"(r)); /* no tail call: keep the frame */
	return r ^ (uint64_t)depth;
}
