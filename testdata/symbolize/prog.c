/* A small C program for the symbolize differential tests: static and
 * global functions, inlining at -O2, a cold path, a recursive function,
 * callbacks and PLT calls, so that addr2line and llvm-symbolizer have
 * inlined frames, clones and stubs to disagree about. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct point { int x, y; };

static inline int square(int v) { return v * v; }

static inline int dist2(struct point a, struct point b)
{
	return square(a.x - b.x) + square(a.y - b.y);
}

static int cmp_points(const void *pa, const void *pb)
{
	const struct point *a = pa, *b = pb;
	return dist2(*a, (struct point){0, 0}) - dist2(*b, (struct point){0, 0});
}

__attribute__((cold, noinline)) static void fail(const char *why)
{
	fprintf(stderr, "fail: %s\n", why);
	exit(3);
}

static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

__attribute__((noinline)) static int scale(int v, int k)
{
	if (k == 0)
		fail("zero scale");
	return v * k;
}

int checksum(const char *s)
{
	int h = 0;
	size_t n = strlen(s);
	for (size_t i = 0; i < n; i++)
		h = h * 31 + s[i];
	return h;
}

static void fill(struct point *p, int n, int seed)
{
	for (int i = 0; i < n; i++) {
		p[i].x = (seed * (i + 1)) % 97 - 48;
		p[i].y = scale(i, seed % 7 + 1) % 89 - 44;
	}
}

int work(int n)
{
	struct point *p = malloc(sizeof *p * (size_t)n);
	if (!p)
		fail("malloc");
	fill(p, n, n + 11);
	qsort(p, (size_t)n, sizeof *p, cmp_points);
	int total = 0;
	for (int i = 1; i < n; i++)
		total += dist2(p[i - 1], p[i]);
	free(p);
	return total + fib(n % 20);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 100;
	printf("%d %d\n", work(n), checksum(argv[0]));
	return 0;
}
