/*
 * cshared: a C program linked to libhot.so (found next to it through
 * rpath $ORIGIN), busy for a given time in its own functions and in the
 * library's.
 *
 * usage: cshared [MILLISECONDS [THREADS [DEPTH]]]
 *   MILLISECONDS  how long to stay busy (default 300)
 *   THREADS       worker threads (default 1: the main thread only)
 *   DEPTH         recursion depth inside libhot (default 3)
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h> /* perror */
#include <stdlib.h>
#include <time.h>

#include "libhot.h"

#define NOINLINE __attribute__((noinline))

static long duration_ms = 300;
static int lib_depth = 3;
static volatile uint64_t sink;

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* main_spin is busy in the executable itself. */
static NOINLINE uint64_t main_spin(uint64_t x, int n)
{
	for (int i = 0; i < n; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	return x;
}

/* main_sort_step does some memory work in the executable. */
static NOINLINE uint64_t main_sort_step(uint64_t seed)
{
	uint32_t a[256];
	for (int i = 0; i < 256; i++) {
		seed = seed * 6364136223846793005ULL + 1;
		a[i] = (uint32_t)(seed >> 32);
	}
	for (int i = 1; i < 256; i++) { /* insertion sort */
		uint32_t v = a[i];
		int j = i - 1;
		while (j >= 0 && a[j] > v) {
			a[j + 1] = a[j];
			j--;
		}
		a[j + 1] = v;
	}
	return seed ^ a[128];
}

/* do_work alternates between the executable and the library. */
static NOINLINE uint64_t do_work(uint64_t seed)
{
	seed = main_spin(seed, 20000);
	seed ^= main_sort_step(seed);
	seed ^= lib_walk(seed, lib_depth);
	seed ^= lib_hash_block(seed, 10000);
	return seed;
}

static void *worker(void *arg)
{
	uint64_t seed = (uint64_t)(uintptr_t)arg;
	double end = now_ms() + (double)duration_ms;
	while (now_ms() < end)
		seed = do_work(seed);
	sink = seed;
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = 1;
	if (argc > 1)
		duration_ms = atol(argv[1]);
	if (argc > 2)
		threads = atoi(argv[2]);
	if (argc > 3)
		lib_depth = atoi(argv[3]);
	if (threads < 1)
		threads = 1;

	pthread_t *tids = calloc((size_t)threads, sizeof *tids);
	if (tids == NULL)
		return 1;
	for (int i = 1; i < threads; i++)
		if (pthread_create(&tids[i], NULL, worker, (void *)(uintptr_t)(i + 1)) != 0) {
			perror("pthread_create");
			return 1;
		}
	worker((void *)(uintptr_t)1);
	for (int i = 1; i < threads; i++)
		pthread_join(tids[i], NULL);
	free(tids);
	/* Print nothing: in pipe mode (perf record -o -) the workload's
	 * stdout is the recording. */
	return 0;
}
