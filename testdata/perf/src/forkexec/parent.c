/*
 * forkparent: forks; the child execs forkchild (a second program of ours,
 * found next to this one), while the parent stays busy in its own code, then
 * waits for the child. Covers FORK, COMM with exec, and EXIT records, and a
 * pid whose address space starts over at exec.
 *
 * usage: forkparent [MILLISECONDS]
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static volatile uint64_t sink;

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static NOINLINE uint64_t parent_spin(uint64_t x)
{
	for (int i = 0; i < 50000; i++)
		x = (x ^ (x >> 7)) * 0x9e3779b97f4a7c15ULL + (uint64_t)i;
	return x;
}

static NOINLINE void parent_busy(long ms)
{
	uint64_t x = 42;
	double end = now_ms() + (double)ms;
	while (now_ms() < end)
		x = parent_spin(x);
	sink = x;
}

int main(int argc, char **argv)
{
	const char *ms = argc > 1 ? argv[1] : "300";
	char self[PATH_MAX], child[PATH_MAX + 16];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n < 0) {
		perror("readlink");
		return 1;
	}
	self[n] = 0;
	char *slash = strrchr(self, '/');
	if (slash)
		slash[1] = 0;
	snprintf(child, sizeof child, "%sforkchild", self);

	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0) {
		execl(child, "forkchild", ms, (char *)NULL);
		perror("execl");
		_exit(127);
	}
	parent_busy(atol(ms));
	int status;
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "forkparent: child failed\n");
		return 1;
	}
	return 0;
}
