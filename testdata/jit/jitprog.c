/*
 * jitprog: a minimal JIT for perf's jitdump path (x86-64 Linux only).
 *
 *   jitprog DIR [SECONDS]
 *
 * It copies the machine code of two functions into anonymous executable
 * memory, describes them in DIR/jit-PID.dump as the jitdump specification
 * says (tools/perf/Documentation/jitdump-specification.txt: a file header,
 * then one JIT_CODE_LOAD record per function with its address, name and
 * code bytes, timestamps from CLOCK_MONOTONIC), maps that file executable
 * once so that `perf record` sees an MMAP of jit-PID.dump (the marker perf
 * inject's jit_detect looks for; perf's own JVMTI agent does the same),
 * and runs the two functions for SECONDS (default 0.3): two thirds of the
 * time in jit_alpha_loop, one third in jit_beta_loop.
 *
 * `perf record -k mono` (the records' clock must be the samples' clock),
 * then `perf inject --jit`, turns each JIT_CODE_LOAD into a
 * DIR/jitted-PID-N.so ELF file holding that code and one symbol, and an
 * MMAP2 record that maps it over the anonymous memory. See
 * check/jitdump_test.go, which builds and runs this, and record.sh here.
 *
 * Written from the specification, not from perf's jvmti agent.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define JITDUMP_MAGIC 0x4A695444u /* "JiTD" */
#define JIT_CODE_LOAD 0

struct jd_header {
	uint32_t magic, version, total_size, elf_mach, pad1, pid;
	uint64_t timestamp, flags;
};

struct jd_prefix {
	uint32_t id, total_size;
	uint64_t timestamp;
};

struct jd_load {
	struct jd_prefix p;
	uint32_t pid, tid;
	uint64_t vma, code_addr, code_size, code_index;
	/* then the NUL-terminated name, then the code */
};

/*
 * uint64_t f(uint64_t n): loop n times, then return. rdi = n (System V).
 */
static const unsigned char alpha_code[] = {
	0x31, 0xc0,             /* 0: xor  %eax,%eax   */
	0x48, 0x01, 0xf8,       /* 2: add  %rdi,%rax   */
	0x48, 0xff, 0xcf,       /* 5: dec  %rdi        */
	0x75, 0xf8,             /* 8: jne  2           */
	0xc3,                   /* a: ret              */
};
static const unsigned char beta_code[] = {
	0x31, 0xc0,             /* 0: xor  %eax,%eax   */
	0x48, 0x31, 0xf8,       /* 2: xor  %rdi,%rax   */
	0x48, 0xd1, 0xc0,       /* 5: rol  %rax        */
	0x48, 0xff, 0xcf,       /* 8: dec  %rdi        */
	0x75, 0xf5,             /* b: jne  2           */
	0xc3,                   /* d: ret              */
};

typedef uint64_t (*loop_fn)(uint64_t);

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w <= 0) {
			perror("jitprog: write");
			exit(1);
		}
		p += w;
		n -= (size_t)w;
	}
}

static void emit_load(int fd, const char *name, void *addr, size_t size, uint64_t index)
{
	struct jd_load r;
	size_t nlen = strlen(name) + 1;

	memset(&r, 0, sizeof(r));
	r.p.id = JIT_CODE_LOAD;
	r.p.total_size = (uint32_t)(sizeof(r) + nlen + size);
	r.p.timestamp = now_ns();
	r.pid = (uint32_t)getpid();
	r.tid = (uint32_t)syscall(SYS_gettid);
	r.vma = r.code_addr = (uint64_t)(uintptr_t)addr;
	r.code_size = size;
	r.code_index = index;
	write_all(fd, &r, sizeof(r));
	write_all(fd, name, nlen);
	write_all(fd, addr, size);
}

static void spin(loop_fn f, double seconds)
{
	uint64_t end = now_ns() + (uint64_t)(seconds * 1e9);
	volatile uint64_t sink = 0;
	while (now_ns() < end)
		sink += f(1u << 16);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: jitprog DIR [SECONDS]\n");
		return 2;
	}
	double seconds = argc > 2 ? atof(argv[2]) : 0.3;
	long page = sysconf(_SC_PAGESIZE);

	char path[4096];
	snprintf(path, sizeof(path), "%s/jit-%d.dump", argv[1], (int)getpid());
	int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0644);
	if (fd < 0) {
		perror(path);
		return 1;
	}
	struct jd_header h = {
		.magic = JITDUMP_MAGIC,
		.version = 1,
		.total_size = sizeof(h),
		.elf_mach = EM_X86_64,
		.pid = (uint32_t)getpid(),
		.timestamp = now_ns(),
	};
	write_all(fd, &h, sizeof(h));

	/* The marker: perf record keeps only executable mappings by default. */
	void *marker = mmap(NULL, (size_t)page, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	if (marker == MAP_FAILED) {
		perror("jitprog: mmap marker");
		return 1;
	}

	unsigned char *code = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE | PROT_EXEC,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (code == MAP_FAILED) {
		perror("jitprog: mmap code");
		return 1;
	}
	/* Two functions 256 bytes apart, as a code cache would place them. */
	unsigned char *alpha = code + 64, *beta = code + 320;
	memcpy(alpha, alpha_code, sizeof(alpha_code));
	memcpy(beta, beta_code, sizeof(beta_code));
	emit_load(fd, "jit_alpha_loop", alpha, sizeof(alpha_code), 0);
	emit_load(fd, "jit_beta_loop", beta, sizeof(beta_code), 1);

	spin((loop_fn)(void *)alpha, seconds * 2 / 3);
	spin((loop_fn)(void *)beta, seconds / 3);

	munmap(marker, (size_t)page);
	close(fd);
	return 0;
}
