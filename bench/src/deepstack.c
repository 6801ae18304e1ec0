/*
 * deepstack: the workload of the large benchmark recording. Each thread
 * keeps calling down a chain of mutually recursive functions, 40 to 120
 * frames deep, then spins at the bottom either in its own leaf_spin or in
 * lib_hash_block of testdata/perf's libhot.so. Every sample therefore carries
 * a long frame-pointer callchain through two DSOs, and the recording has a
 * bounded number of distinct stacks (1024 call patterns), as a real program
 * has: the check's memory must follow the distinct stacks, not the samples.
 *
 * usage: deepstack [MILLISECONDS [THREADS]]
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "libhot.h"

#define NOINLINE __attribute__((noinline))
#define PATTERNS 1024u

static long duration_ms = 10000;
static volatile uint64_t sink;

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static NOINLINE uint64_t leaf_spin(uint64_t x)
{
	for (int i = 0; i < 3000; i++)
		x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL + (uint64_t)i;
	return x;
}

static uint64_t rec_a(uint64_t x, unsigned pat, int d);
static uint64_t rec_b(uint64_t x, unsigned pat, int d);
static uint64_t rec_c(uint64_t x, unsigned pat, int d);
static uint64_t rec_d(uint64_t x, unsigned pat, int d);

/* next picks the callee at depth d from two bits of the pattern. */
static inline uint64_t next(uint64_t x, unsigned pat, int d)
{
	if (d <= 0)
		return (pat & 1) ? lib_hash_block(x, 3000) : leaf_spin(x);
	uint64_t r;
	switch ((pat >> ((unsigned)(d * 2) % 10)) & 3) {
	case 0: r = rec_a(x + 1, pat, d - 1); break;
	case 1: r = rec_b(x + 2, pat, d - 1); break;
	case 2: r = rec_c(x + 3, pat, d - 1); break;
	default: r = rec_d(x + 4, pat, d - 1); break;
	}
	__asm__ volatile("" : "+r"(r)); /* no tail call: keep every frame */
	return r;
}

static NOINLINE uint64_t rec_a(uint64_t x, unsigned pat, int d) { return next(x, pat, d) ^ 1; }
static NOINLINE uint64_t rec_b(uint64_t x, unsigned pat, int d) { return next(x, pat, d) ^ 2; }
static NOINLINE uint64_t rec_c(uint64_t x, unsigned pat, int d) { return next(x, pat, d) ^ 3; }
static NOINLINE uint64_t rec_d(uint64_t x, unsigned pat, int d) { return next(x, pat, d) ^ 4; }

static void *worker(void *arg)
{
	uint64_t x = (uint64_t)(uintptr_t)arg;
	unsigned pat = (unsigned)x;
	double end = now_ms() + (double)duration_ms;
	while (now_ms() < end) {
		for (int i = 0; i < 16; i++) {
			pat = (pat * 1103515245u + 12345u) % PATTERNS;
			x = rec_a(x, pat, 40 + (int)(pat % 81));
		}
	}
	sink = x;
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = 2;
	if (argc > 1)
		duration_ms = atol(argv[1]);
	if (argc > 2)
		threads = atoi(argv[2]);
	if (threads < 1)
		threads = 1;
	pthread_t *tids = calloc((size_t)threads, sizeof *tids);
	if (tids == NULL)
		return 1;
	for (int i = 1; i < threads; i++)
		if (pthread_create(&tids[i], NULL, worker, (void *)(uintptr_t)(i * 7919)) != 0) {
			perror("pthread_create");
			return 1;
		}
	worker((void *)(uintptr_t)1);
	for (int i = 1; i < threads; i++)
		pthread_join(tids[i], NULL);
	free(tids);
	return 0;
}
