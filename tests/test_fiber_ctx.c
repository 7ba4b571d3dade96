/* SPDX-License-Identifier: MIT */
/*
 * test_fiber_ctx.c - the fiber context switch and stack pool: ping-pong
 * switches in exact order and count, callee-saved registers and the
 * floating-point control state kept across switches, every stack size
 * class usable to its top and reused from the pool, the overflow report
 * of a fiber that runs past its guard page (in a child process), and the
 * pool on a shard thread.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "tests/common.h"

#include <numaif.h>

#include "core/fiber_ctx.h"
#include "core/fiber_stack.h"
#include "core/task_int.h"
#include "shard/shard_int.h"

/* ---- ping-pong ----------------------------------------------------------- */

struct pingpong {
	struct pw__fctx main, fib;
	int rounds;
	int log[64]; /* first events: +i from the fiber, -i from main */
	int nlog;
	int count;
};

static void pp_log(struct pingpong *p, int ev)
{
	if (p->nlog < (int)(sizeof(p->log) / sizeof(p->log[0])))
		p->log[p->nlog++] = ev;
}

static struct pw__fctx *pp_fiber(void *arg)
{
	struct pingpong *p = arg;

	for (int i = 1; i <= p->rounds; i++) {
		pp_log(p, i);
		p->count++;
		pw__fctx_switch(&p->fib, &p->main);
	}
	pp_log(p, 1000);
	return &p->main;
}

Test(fiber_ctx, ping_pong_exact_order_and_count)
{
	struct pingpong p = { .rounds = 100000 };
	struct pw__fstack st;

	cr_assert_eq(pw__fstack_get(0, &st), 0);
	cr_assert_eq(st.size, PW_FIBER_STACK_DEFAULT);
	pw__fctx_thread(&p.main);
	pw__fctx_make(&p.fib, &st, pp_fiber, &p);
	for (int i = 1; i <= p.rounds; i++) {
		pw__fctx_switch(&p.main, &p.fib);
		cr_assert_eq(p.count, i);
		pp_log(&p, -i);
	}
	pw__fctx_switch(&p.main, &p.fib); /* the fiber ends */
	cr_assert_eq(p.count, p.rounds);
	pw__fctx_destroy(&p.fib);
	for (int i = 0; i < 62; i++)
		cr_assert_eq(p.log[i], i % 2 ? -(i / 2 + 1) : i / 2 + 1,
			     "event %d: %d", i, p.log[i]);
	cr_assert_eq(p.nlog, 64);
	pw__fstack_put(&st);
	pw__fstack_pool_free();
}

/* Two fibers switching to each other directly, main only at the ends. */
struct trio {
	struct pw__fctx main, a, b;
	int n, seq[16], nseq;
};

static struct pw__fctx *trio_a(void *arg)
{
	struct trio *t = arg;

	for (int i = 0; i < t->n; i++) {
		t->seq[t->nseq++] = 'a';
		pw__fctx_switch(&t->a, &t->b);
	}
	return &t->main;
}

static struct pw__fctx *trio_b(void *arg)
{
	struct trio *t = arg;

	for (;;) {
		t->seq[t->nseq++] = 'b';
		pw__fctx_switch(&t->b, &t->a);
	}
	return NULL; /* never ends: dropped switched out */
}

Test(fiber_ctx, fiber_to_fiber_switches)
{
	struct trio t = { .n = 5 };
	struct pw__fstack sa, sb;

	cr_assert_eq(pw__fstack_get(0, &sa), 0);
	cr_assert_eq(pw__fstack_get(0, &sb), 0);
	cr_assert_neq(sa.lo, sb.lo);
	pw__fctx_thread(&t.main);
	pw__fctx_make(&t.a, &sa, trio_a, &t);
	pw__fctx_make(&t.b, &sb, trio_b, &t);
	pw__fctx_switch(&t.main, &t.a);
	cr_assert_eq(t.nseq, 10);
	for (int i = 0; i < 10; i++)
		cr_assert_eq(t.seq[i], i % 2 ? 'b' : 'a');
	pw__fctx_destroy(&t.a);
	pw__fctx_destroy(&t.b); /* b never finished: dropped switched out */
	pw__fstack_put(&sa);
	pw__fstack_put(&sb);
	pw__fstack_pool_free();
}

/* The entry gets its argument; a fiber made twice on one stack runs
 * twice. */
static struct pw__fctx *arg_fiber(void *arg)
{
	void **slot = arg;
	struct pw__fctx *back = slot[1];

	slot[0] = arg;
	return back;
}

Test(fiber_ctx, entry_gets_its_argument)
{
	struct pw__fctx main, fib;
	struct pw__fstack st;
	void *slot[3] = { NULL, &main, &fib };

	cr_assert_eq(pw__fstack_get(4096, &st), 0);
	pw__fctx_thread(&main);
	for (int i = 0; i < 2; i++) {
		slot[0] = NULL;
		pw__fctx_make(&fib, &st, arg_fiber, slot);
		pw__fctx_switch(&main, &fib);
		cr_assert_eq(slot[0], (void *)slot);
		pw__fctx_destroy(&fib);
	}
	pw__fstack_put(&st);
	pw__fstack_pool_free();
}

/* ---- registers ----------------------------------------------------------- */

#if defined(__x86_64__)
/*
 * regs_probe(save, to, out): load known values into rbx, rbp, r12-r15,
 * switch away with pw__fctx_jump(save, to) and, once switched back,
 * store what those registers hold in out[0..5]. The caller's own values
 * are saved and restored around it, as the ABI asks.
 */
void regs_probe(void **save, void *to, uint64_t *out);
__asm__(".text\n"
	".p2align 4\n"
	".type regs_probe, @function\n"
	"regs_probe:\n"
	"	pushq %rbp\n"
	"	pushq %rbx\n"
	"	pushq %r12\n"
	"	pushq %r13\n"
	"	pushq %r14\n"
	"	pushq %r15\n"
	"	pushq %rdx\n"
	"	movabsq $0x1111111111111111, %rbx\n"
	"	movabsq $0x2222222222222222, %rbp\n"
	"	movabsq $0x3333333333333333, %r12\n"
	"	movabsq $0x4444444444444444, %r13\n"
	"	movabsq $0x5555555555555555, %r14\n"
	"	movabsq $0x6666666666666666, %r15\n"
	"	call pw__fctx_jump\n"
	"	popq %rdx\n"
	"	movq %rbx, 0(%rdx)\n"
	"	movq %rbp, 8(%rdx)\n"
	"	movq %r12, 16(%rdx)\n"
	"	movq %r13, 24(%rdx)\n"
	"	movq %r14, 32(%rdx)\n"
	"	movq %r15, 40(%rdx)\n"
	"	popq %r15\n"
	"	popq %r14\n"
	"	popq %r13\n"
	"	popq %r12\n"
	"	popq %rbx\n"
	"	popq %rbp\n"
	"	ret\n"
	".size regs_probe, .-regs_probe\n");

/* Overwrite every callee-saved register the compiler lets us name. */
static void clobber_regs(void)
{
	__asm__ volatile("movq $-1, %%rbx\n\t"
			 "movq $-2, %%r12\n\t"
			 "movq $-3, %%r13\n\t"
			 "movq $-4, %%r14\n\t"
			 "movq $-5, %%r15\n\t" ::
				 : "rbx", "r12", "r13", "r14", "r15");
}
#endif

/* The rounding mode of SSE (MXCSR bits 13-14) and x87 (control word bits
 * 10-11): 0 nearest, 1 down, 2 up, 3 toward zero; libm's fesetround()
 * sets both, but the tests do not link libm. */
static void set_round(unsigned mode)
{
#if defined(__x86_64__)
	uint32_t mx;
	uint16_t cw;

	__asm__ volatile("stmxcsr %0" : "=m"(mx));
	mx = (mx & ~(3u << 13)) | mode << 13;
	__asm__ volatile("ldmxcsr %0" ::"m"(mx));
	__asm__ volatile("fnstcw %0" : "=m"(cw));
	cw = (uint16_t)((cw & ~(3u << 10)) | mode << 10);
	__asm__ volatile("fldcw %0" ::"m"(cw));
#else
	(void)mode;
#endif
}

/* The rounding mode, or -1 when SSE and x87 disagree. */
static int get_round(void)
{
#if defined(__x86_64__)
	uint32_t mx;
	uint16_t cw;

	__asm__ volatile("stmxcsr %0" : "=m"(mx));
	__asm__ volatile("fnstcw %0" : "=m"(cw));
	if ((mx >> 13 & 3) != (unsigned)(cw >> 10 & 3))
		return -1;
	return (int)(mx >> 13 & 3);
#else
	return 0;
#endif
}

struct regs {
	struct pw__fctx main, fib;
	int rounds;
	int last; /* the round that ends the fiber by returning */
};

static struct pw__fctx *regs_fiber(void *arg)
{
	struct regs *r = arg;

	for (;;) {
#if defined(__x86_64__)
		clobber_regs();
#endif
		/* Another rounding mode (MXCSR and x87) in the fiber. */
		set_round(2);
		r->rounds++;
		if (r->rounds == r->last)
			return &r->main; /* the trampoline's way back */
		pw__fctx_switch(&r->fib, &r->main);
		cr_assert_eq(get_round(), 2);
	}
}

Test(fiber_ctx, callee_saved_registers_kept)
{
#if defined(PW__FCTX_ASAN) || defined(PW__FCTX_TSAN)
	cr_skip_test("the probe jumps without the sanitizer's fiber calls; "
		     "the build without sanitizers runs it");
#elif defined(__x86_64__)
	struct regs r = { .rounds = 0, .last = 3 };
	struct pw__fstack st;
	static const uint64_t want[6] = {
		0x1111111111111111, 0x2222222222222222, 0x3333333333333333,
		0x4444444444444444, 0x5555555555555555, 0x6666666666666666,
	};

	cr_assert_eq(pw__fstack_get(0, &st), 0);
	pw__fctx_thread(&r.main);
	pw__fctx_make(&r.fib, &st, regs_fiber, &r);
	for (int i = 0; i < 3; i++) {
		uint64_t out[6] = { 0 };

		regs_probe(&r.main.sp, r.fib.sp, out);
		cr_assert_eq(r.rounds, i + 1);
		for (int k = 0; k < 6; k++)
			cr_assert_eq(out[k], want[k], "round %d reg %d: %llx",
				     i, k, (unsigned long long)out[k]);
	}
	pw__fctx_destroy(&r.fib);
	pw__fstack_put(&st);
	pw__fstack_pool_free();
#else
	cr_skip_test("the register probe is x86-64 only (tests/aarch64)");
#endif
}

/* Values the compiler keeps in callee-saved registers across the switch
 * (many live values, a floating-point rounding mode per side). */
Test(fiber_ctx, live_values_and_rounding_mode_kept)
{
	struct regs r = { .rounds = 0, .last = 100 };
	struct pw__fstack st;
	volatile uint64_t seed = 0x9e3779b97f4a7c15ull;
	volatile double third = 1.0;

	cr_assert_eq(pw__fstack_get(0, &st), 0);
	pw__fctx_thread(&r.main);
	pw__fctx_make(&r.fib, &st, regs_fiber, &r);
	set_round(1);
	for (int i = 0; i < 100; i++) {
		uint64_t a = seed * 3, b = seed * 5, c = seed * 7,
			 d = seed * 11, e = seed * 13, f = seed * 17,
			 g = seed * 19;
		double x = third * i;

		pw__fctx_switch(&r.main, &r.fib);
		cr_assert_eq(get_round(), 1);
		cr_assert_eq(a + b + c + d + e + f + g, seed * 75);
		cr_assert_eq(x, third * i);
		seed = seed * 6364136223846793005ull + 1;
	}
	set_round(0);
	cr_assert_eq(r.rounds, 100);
	/* Division rounds by the MXCSR: a fiber's mode stays its own. */
	volatile double one = 1.0, three = 3.0;
	cr_assert_eq(one / three, 1.0 / 3.0);
	pw__fctx_destroy(&r.fib);
	pw__fstack_put(&st);
	pw__fstack_pool_free();
}

/* ---- stacks -------------------------------------------------------------- */

struct deep {
	struct pw__fctx main, fib;
	const struct pw__fstack *st;
	uintptr_t lowest; /* deepest frame reached */
};

/* Recurse in 1 KiB frames until fewer than 4 KiB are left below. */
static __attribute__((noinline)) uintptr_t dig(struct deep *d)
{
	volatile char frame[1024];
	uintptr_t here = (uintptr_t)frame;

	frame[0] = 1;
	frame[sizeof(frame) - 1] = 1;
	if (here - (uintptr_t)d->st->lo > 4096)
		here = dig(d);
	__asm__ volatile("" ::: "memory");
	return here + frame[0] - 1;
}

static struct pw__fctx *deep_fiber(void *arg)
{
	struct deep *d = arg;

	d->lowest = dig(d);
	return &d->main;
}

Test(fiber_ctx, every_size_class_usable_to_its_top_and_reused)
{
	static const size_t sizes[] = { 1,	  4096,	   8192,    12288,
					65536,	  100000,  1 << 20, 4 << 20,
					16 << 20, 64 << 20 };
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct pw__fstack st, again;
		struct deep d = { .st = &st };
		size_t want = page;

		while (want < sizes[i])
			want *= 2;
		cr_assert_eq(pw__fstack_get(sizes[i], &st), 0);
		cr_assert_eq(st.size, want, "size %zu: %zu", sizes[i], st.size);
		cr_assert_eq((char *)st.lo, (char *)st.map + page);
		cr_assert_eq(st.map_len, st.size + page);
		/* Every usable byte, top included, is writable. */
		memset(st.lo, 0xa5, st.size);
		cr_assert_eq(((volatile char *)st.lo)[st.size - 1], (char)0xa5);
		if (st.size >= 16384 && st.size <= (1 << 20)) {
			pw__fctx_thread(&d.main);
			pw__fctx_make(&d.fib, &st, deep_fiber, &d);
			pw__fctx_switch(&d.main, &d.fib);
			pw__fctx_destroy(&d.fib);
			cr_assert_lt(d.lowest - (uintptr_t)st.lo, 8192);
		}
		pw__fstack_put(&st);
		cr_assert_eq(pw__fstack_get(sizes[i], &again), 0);
		cr_assert_eq(again.lo, st.lo, "size %zu not reused", sizes[i]);
		cr_assert_eq(again.size, st.size);
		pw__fstack_put(&again);
	}
	pw__fstack_pool_free();
}

Test(fiber_ctx, sizes_beyond_the_cap_refused)
{
	struct pw__fstack st;

	cr_assert_eq(pw__fstack_get(PW__FSTACK_MAX + 1, &st), -EINVAL);
	cr_assert_eq(pw__fstack_get(SIZE_MAX, &st), -EINVAL);
	cr_assert_eq(pw__fstack_get(PW__FSTACK_MAX, &st), 0);
	pw__fstack_put(&st);
	pw__fstack_pool_free();
}

/* LIFO reuse, and a bound: of many stacks handed back at once, the pool
 * keeps the first ones (up to its bound) and unmaps the rest; they come
 * back newest first. */
Test(fiber_ctx, pool_is_lifo_and_bounded)
{
	enum { N = 600 };
	static struct pw__fstack st[N], back[N];
	int kept = -1;

	for (int i = 0; i < N; i++)
		cr_assert_eq(pw__fstack_get(0, &st[i]), 0);
	for (int i = 0; i < N; i++)
		pw__fstack_put(&st[i]);
	for (int i = 0; i < N; i++)
		cr_assert_eq(pw__fstack_get(0, &back[i]), 0);
	for (int i = 0; i < N && kept < 0; i++)
		if (back[0].lo == st[i].lo)
			kept = i + 1;
	cr_assert_geq(kept, 2, "the newest stack was not reused");
	cr_assert_lt(kept, N, "the pool kept all %d stacks", N);
	for (int i = 0; i < kept; i++)
		cr_assert_eq(back[i].lo, st[kept - 1 - i].lo, "get %d", i);
	for (int i = 0; i < N; i++)
		pw__fstack_put(&back[i]);
	pw__fstack_pool_free();
}

/* ---- overflow ------------------------------------------------------------ */

static volatile int runaway_depth = 1 << 30; /* never reached */

static __attribute__((noinline)) int runaway(int n)
{
	volatile char frame[256];

	frame[0] = (char)n;
	if (n < runaway_depth)
		return runaway(n + 1) + frame[0];
	return frame[0];
}

static struct pw__fctx *runaway_fiber(void *arg)
{
	(void)arg;
	runaway(0);
	return NULL; /* not reached: the overflow ends the process */
}

/*
 * Run a fiber that recurses without end on a @size stack, in a child
 * whose stderr is a pipe; return what the child wrote and its wait
 * status in *@status.
 */
static char *overflow_child(size_t size, int *status)
{
	static char out[1024];
	int fd[2];
	size_t n = 0;
	ssize_t r;

	cr_assert_eq(pipe(fd), 0);
	pid_t pid = pw_test_fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct pw__fctx main, fib;
		struct pw__fstack st;

		dup2(fd[1], STDERR_FILENO);
		close(fd[0]);
		if (pw__fstack_get(size, &st))
			_exit(3);
		pw__fctx_thread(&main);
		pw__fctx_make(&fib, &st, runaway_fiber, NULL);
		pw__fstack_running(&st, "runaway_fiber");
		pw__fctx_switch(&main, &fib);
		_exit(4); /* not reached */
	}
	close(fd[1]);
	while (n < sizeof(out) - 1 &&
	       (r = read(fd[0], out + n, sizeof(out) - 1 - n)) > 0)
		n += (size_t)r;
	out[n] = 0;
	close(fd[0]);
	cr_assert_eq(waitpid(pid, status, 0), pid);
	return out;
}

/* The report is the first line on stderr; under a sanitizer, the
 * sanitizer may add its own lines after it. */
static void assert_report(const char *err, const char *want)
{
#if defined(PW__FCTX_ASAN) || defined(PW__FCTX_TSAN)
	cr_assert_eq(strncmp(err, want, strlen(want)), 0, "stderr: %s", err);
#else
	cr_assert_str_eq(err, want);
#endif
}

Test(fiber_ctx, overflow_names_the_fiber_and_kills)
{
	int status;
	char *err = overflow_child(16384, &status);

	cr_assert(WIFSIGNALED(status), "child status %#x, stderr: %s", status,
		  err);
	cr_assert_eq(WTERMSIG(status), SIGSEGV);
	assert_report(err, "pinwheel: fiber stack overflow in "
			   "'runaway_fiber' (stack 16 KiB)\n");
	err = overflow_child(0, &status);
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV,
		  "child status %#x, stderr: %s", status, err);
	assert_report(err, "pinwheel: fiber stack overflow in "
			   "'runaway_fiber' (stack 64 KiB)\n");
}

static int *volatile bad_ptr = (int *)16;

/* A fault elsewhere is not blamed on the fiber: it reaches the handler
 * that was there before (here the default action). */
Test(fiber_ctx, other_faults_go_to_the_previous_handler)
{
	int fd[2];
	char out[256];
	ssize_t n;
	int status;

	cr_assert_eq(pipe(fd), 0);
	pid_t pid = pw_test_fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct pw__fstack st;

		dup2(fd[1], STDERR_FILENO);
		close(fd[0]);
		signal(SIGSEGV, SIG_DFL);
		if (pw__fstack_get(0, &st))
			_exit(3);
		pw__fstack_running(&st, "bystander");
		*bad_ptr = 1;
		_exit(4);
	}
	close(fd[1]);
	n = read(fd[0], out, sizeof(out) - 1);
	close(fd[0]);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV,
		  "status %#x", status);
	out[n > 0 ? n : 0] = 0;
	cr_assert_null(strstr(out, "fiber stack overflow"), "%s", out);
}

/* ---- on a shard ---------------------------------------------------------- */

struct on_shard {
	struct pw__fctx main, fib;
	struct pw__fstack st;
	void *first, *second;
	int ran;
	int bound;   /* the shard's memory is bound (numa/mem.c) */
	int mode;    /* the stack's memory policy, when bound */
	int on_node; /* the policy names the shard's node */
};

/* Where a new stack's memory goes: on a bound shard, to its node, as
 * the slab's chunks. */
static void stack_policy(struct on_shard *o)
{
	unsigned long mask[1024 / (8 * sizeof(unsigned long))];
	struct pw__shard *s = pw__cur_shard;
	int mode = -1;

	o->bound = s && s->mem.bound;
	if (!o->bound)
		return;
	memset(mask, 0, sizeof(mask));
	if (get_mempolicy(&mode, mask, 1024, o->st.lo, MPOL_F_ADDR) == 0) {
		int n = s->mem.node;

		o->mode = mode;
		o->on_node = n >= 0 && n < 1024 &&
			     (mask[n / (8 * sizeof(long))] >>
			      (n % (8 * sizeof(long)))) &
				     1;
	}
}

static struct pw__fctx *shard_fiber(void *arg)
{
	struct on_shard *o = arg;

	o->ran++;
	return &o->main;
}

static enum pw_poll pool_poll(struct pw_cx *cx, void *state)
{
	struct on_shard *o = state;

	if (pw__fstack_get(0, &o->st))
		return pw_ready(cx, -ENOMEM);
	o->first = o->st.lo;
	stack_policy(o);
	pw__fctx_thread(&o->main);
	pw__fctx_make(&o->fib, &o->st, shard_fiber, o);
	pw__fstack_running(&o->st, "shard_fiber");
	pw__fctx_switch(&o->main, &o->fib);
	pw__fstack_running(NULL, NULL);
	pw__fctx_destroy(&o->fib);
	pw__fstack_put(&o->st);
	if (pw__fstack_get(0, &o->st))
		return pw_ready(cx, -ENOMEM);
	o->second = o->st.lo;
	pw__fstack_put(&o->st);
	return pw_ready(cx, 7);
}

Test(fiber_ctx, pool_on_a_shard_thread)
{
	struct pw_runtime *rt;
	struct pw_config cfg;
	struct on_shard o = { .ran = 0 };
	int64_t res = 0;

	pw_test_config_init(&cfg);
	cfg.shards = 1;
	cr_assert_eq(pw_runtime_create(&rt, &cfg), 0);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(pw_block_on(rt, pool_poll, &o, &res), 0);
		cr_assert_eq(res, 7);
		cr_assert_eq(o.ran, i + 1);
		cr_assert_eq(o.first, o.second, "the shard's pool reuses");
		if (o.bound) {
			cr_assert_eq(o.mode, MPOL_PREFERRED);
			cr_assert(o.on_node,
				  "the stack prefers the shard's node");
		}
	}
	pw_runtime_destroy(rt);
}

/* ---- mappings ------------------------------------------------------------ */

static int count_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	int n = 0, c;

	cr_assert_not_null(f);
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

/* Whether this kernel has guard regions (madvise MADV_GUARD_INSTALL). */
static __attribute__((unused)) bool have_guard_regions(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	void *p = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	bool ok;

	cr_assert_neq(p, MAP_FAILED);
	ok = madvise(p, page, 102 /* MADV_GUARD_INSTALL */) == 0;
	munmap(p, 2 * page);
	return ok;
}

/*
 * 40,000 stacks at once, more than vm.max_map_count (65530) allows with
 * two mappings per stack: with guard regions the stacks merge into few
 * mappings. On an older kernel, 1,000 stacks take at most two mappings
 * each.
 */
Test(fiber_ctx, many_stacks_few_mappings)
{
#if defined(PW__FCTX_TSAN)
	/* TSan maps shadow memory of its own for each mapping, too much
	 * for 40,000 and more than the counts below allow. */
	bool guards = false, count = false;
#else
	bool guards = have_guard_regions(), count = true;
#endif
	int n = guards ? 40000 : 1000;
	struct pw__fstack *st = calloc((size_t)n, sizeof(*st));
	int before, after;

	cr_assert_not_null(st);
	pw_test_time_limit(120);
	before = count_maps();
	for (int i = 0; i < n; i++)
		cr_assert_eq(pw__fstack_get(0, &st[i]), 0, "stack %d", i);
	after = count_maps();
	if (!count)
		cr_log_info("mappings not counted under TSan");
	else if (guards)
		cr_assert_lt(after - before, n / 100,
			     "%d mappings for %d stacks", after - before, n);
	else
		cr_assert_leq(after - before, 2 * n + 8);
	for (int i = 0; i < n; i++)
		pw__fstack_put(&st[i]);
	pw__fstack_pool_free();
	free(st);
}
