/*
 * Preloaded in the service's processes (src/retention/freed-memory-fill.ts):
 * every block handed back to glibc's malloc is filled with FILL first, so
 * nothing a request put in it (a PDF, its text, a template) stays readable.
 *
 * glibc can fill on its own (`glibc.malloc.perturb`), but it fills each
 * block as it is allocated too, and skips the blocks its per-thread cache
 * keeps, which must then be off: 10% to 150% of a compile. jemalloc with
 * this file before it cost Typst 0.11 10% to 13% (its returning and
 * refaulting of pages, not the fill); this file over glibc's malloc, with
 * its cache on, 2% to 4% on either engine (measured in one process, floor
 * processes side by side). No kept library does this, hence these lines.
 *
 * Blocks come back through free() (C++'s operator delete calls it) and a
 * realloc() that moves them: the service's code and the libraries it loads
 * call no other function that frees (malloc, calloc, realloc,
 * posix_memalign, aligned_alloc, free: their `nm -D`). A block glibc mapped
 * on its own is unmapped as it is freed, so its pages leave the process
 * and are not filled.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Any byte but zero (zero would pass for memory never used); 0x5A is easy to spot in a dump. */
#define FILL 0x5a

/* glibc's own entry points, which the names below stand in front of. */
extern void *__libc_malloc(size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

/* glibc keeps a block's size in the word before it; bit 1 marks a block mapped on its own (glibc's IS_MMAPPED). */
static int mapped_alone(void *block) {
  return (((size_t *)block)[-1] & 2) != 0;
}

/*
 * This file hands blocks to glibc's free(): another allocator preloaded
 * after it would be given glibc's calls for its own blocks. A process where
 * the free() after this file's is not glibc's stops at once, saying why.
 */
__attribute__((constructor)) static void check_allocator(void) {
  /* The next free() after this file's (not &free: an executable that takes its address answers with a stand-in of its own). */
  if (dlsym(RTLD_NEXT, "free") == (void *)&__libc_free) return;
  static const char message[] = "free-fill.so fills glibc's malloc only, and another malloc is preloaded after it (LD_PRELOAD)\n";
  (void)!write(2, message, sizeof message - 1);
  _exit(1);
}

void free(void *block) {
  if (block == NULL) return;
  if (!mapped_alone(block)) memset(block, FILL, malloc_usable_size(block));
  __libc_free(block);
}

/*
 * A block that has to grow moves through an allocation and a filled free:
 * glibc's realloc() would free the old block itself, unfilled, where it
 * cannot grow it in place. Shrinking keeps the block as it is (nothing is
 * given back). A block mapped alone is glibc's to move: it remaps its pages,
 * or copies it and unmaps them, so nothing of it stays behind.
 */
void *realloc(void *block, size_t size) {
  if (block == NULL) return __libc_malloc(size);
  if (mapped_alone(block)) return __libc_realloc(block, size);
  if (size == 0) {
    free(block);
    return NULL;
  }
  size_t usable = malloc_usable_size(block);
  if (size <= usable) return block;
  void *moved = __libc_malloc(size);
  if (moved == NULL) return NULL;
  memcpy(moved, block, usable);
  free(block);
  return moved;
}
