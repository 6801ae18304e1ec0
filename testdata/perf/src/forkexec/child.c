/*
 * forkchild: the program forkparent's child execs; busy in its own
 * functions for the given time.
 *
 * usage: forkchild [MILLISECONDS]
 */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

static volatile uint64_t sink;

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static NOINLINE uint64_t child_leaf(uint64_t x)
{
	for (int i = 0; i < 50000; i++)
		x = (x << 13 | x >> 51) + 0x632be59bd9b4e019ULL;
	return x;
}

static NOINLINE uint64_t child_middle(uint64_t x)
{
	return child_leaf(x) ^ child_leaf(~x);
}

int main(int argc, char **argv)
{
	long ms = argc > 1 ? atol(argv[1]) : 300;
	uint64_t x = 7;
	double end = now_ms() + (double)ms;
	while (now_ms() < end)
		x = child_middle(x);
	sink = x;
	return 0;
}
