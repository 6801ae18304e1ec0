/* shallow: two processes, each spinning in a few functions two to four
 * frames deep, for the shallow-stack, high-rate recording of
 * bench/record-suite.sh: many small samples, few distinct stacks.
 *
 *   shallow MS    runs for MS milliseconds (perf's --max-size usually stops it first)
 */
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

__attribute__((noinline)) static unsigned long mix(unsigned long x) {
	for (int i = 0; i < 200; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	return x;
}

__attribute__((noinline)) static unsigned long step_a(unsigned long x) { return mix(x ^ 0xa); }
__attribute__((noinline)) static unsigned long step_b(unsigned long x) { return mix(x + 3) ^ step_a(x); }

static double now_ms(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void spin(double ms) {
	double end = now_ms() + ms;
	unsigned long x = (unsigned long)getpid();
	while (now_ms() < end)
		for (int i = 0; i < 1000; i++)
			x = (i & 1) ? step_a(x) : step_b(x);
	sink = x;
}

int main(int argc, char **argv) {
	double ms = argc > 1 ? atof(argv[1]) : 10000;
	pid_t child = fork();
	if (child < 0)
		return 1;
	spin(ms);
	if (child > 0)
		waitpid(child, NULL, 0);
	return 0;
}
