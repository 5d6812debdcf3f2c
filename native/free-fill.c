/*
 * Preloaded before jemalloc in the service's processes (src/retention/freed-memory-fill.ts):
 * every block handed back to the allocator is filled with FILL first, so
 * nothing a request put in it (a PDF, its text, a template) stays readable.
 *
 * jemalloc can fill on its own (MALLOC_CONF=junk:free), but that option
 * sends every malloc() and free() of the process down jemalloc's slow path,
 * which cost more than the filling itself (a 50-page compile: 20 % over
 * glibc's malloc, against 13 % with this file and jemalloc's fast path), and
 * it leaves unfilled the block a realloc() moves away from. So this file
 * fills, at every way a block is given back: free(), jemalloc's own
 * dallocx() and sdallocx(), the C++ operator delete in all its forms
 * (jemalloc defines them, so C++ code reaches jemalloc without free()),
 * and the realloc() and rallocx() that move a block, which move it
 * through an allocation and a filled free. No kept library does this,
 * hence these lines.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <stddef.h>
#include <string.h>

/* jemalloc's own junk byte: any byte but zero (zero would pass for memory never used); 0x5A is easy to spot in a dump. */
#define FILL 0x5a

static void fill(void *block) {
  if (block != NULL) memset(block, FILL, malloc_usable_size(block));
}

/* jemalloc's functions, found once the libraries are loaded. */
static void (*next_free)(void *);
static void *(*next_realloc)(void *, size_t);
static void *(*next_mallocx)(size_t, int);
static size_t (*next_xallocx)(void *, size_t, size_t, int);
static void (*next_dallocx)(void *, int);
static void (*next_sdallocx)(void *, size_t, int);
/* operator delete and delete[]: plain, sized, aligned, nothrow, and sized aligned (their C++ names). */
static void (*next_delete)(void *), (*next_delete_array)(void *);
static void (*next_delete_sized)(void *, size_t), (*next_delete_array_sized)(void *, size_t);
static void (*next_delete_aligned)(void *, size_t), (*next_delete_array_aligned)(void *, size_t);
static void (*next_delete_nothrow)(void *, const void *), (*next_delete_array_nothrow)(void *, const void *);
static void (*next_delete_aligned_nothrow)(void *, size_t, const void *);
static void (*next_delete_array_aligned_nothrow)(void *, size_t, const void *);
static void (*next_delete_sized_aligned)(void *, size_t, size_t), (*next_delete_array_sized_aligned)(void *, size_t, size_t);

#define FIND(variable, symbol) *(void **)&variable = dlsym(RTLD_NEXT, symbol)

__attribute__((constructor)) static void find_jemalloc(void) {
  FIND(next_free, "free");
  FIND(next_realloc, "realloc");
  FIND(next_mallocx, "mallocx");
  FIND(next_xallocx, "xallocx");
  FIND(next_dallocx, "dallocx");
  FIND(next_sdallocx, "sdallocx");
  FIND(next_delete, "_ZdlPv");
  FIND(next_delete_array, "_ZdaPv");
  FIND(next_delete_sized, "_ZdlPvm");
  FIND(next_delete_array_sized, "_ZdaPvm");
  FIND(next_delete_aligned, "_ZdlPvSt11align_val_t");
  FIND(next_delete_array_aligned, "_ZdaPvSt11align_val_t");
  FIND(next_delete_nothrow, "_ZdlPvRKSt9nothrow_t");
  FIND(next_delete_array_nothrow, "_ZdaPvRKSt9nothrow_t");
  FIND(next_delete_aligned_nothrow, "_ZdlPvSt11align_val_tRKSt9nothrow_t");
  FIND(next_delete_array_aligned_nothrow, "_ZdaPvSt11align_val_tRKSt9nothrow_t");
  FIND(next_delete_sized_aligned, "_ZdlPvmSt11align_val_t");
  FIND(next_delete_array_sized_aligned, "_ZdaPvmSt11align_val_t");
}

/* A free() before the libraries are all loaded (the loader's own) keeps its block: there is no allocator to give it to yet. */
void free(void *block) {
  fill(block);
  if (next_free != NULL) next_free(block);
}
void dallocx(void *block, int flags) {
  fill(block);
  next_dallocx(block, flags);
}
void sdallocx(void *block, size_t size, int flags) {
  fill(block);
  next_sdallocx(block, size, flags);
}

void _ZdlPv(void *block) {
  fill(block);
  next_delete(block);
}
void _ZdaPv(void *block) {
  fill(block);
  next_delete_array(block);
}
void _ZdlPvm(void *block, size_t size) {
  fill(block);
  next_delete_sized(block, size);
}
void _ZdaPvm(void *block, size_t size) {
  fill(block);
  next_delete_array_sized(block, size);
}
void _ZdlPvSt11align_val_t(void *block, size_t align) {
  fill(block);
  next_delete_aligned(block, align);
}
void _ZdaPvSt11align_val_t(void *block, size_t align) {
  fill(block);
  next_delete_array_aligned(block, align);
}
void _ZdlPvRKSt9nothrow_t(void *block, const void *tag) {
  fill(block);
  next_delete_nothrow(block, tag);
}
void _ZdaPvRKSt9nothrow_t(void *block, const void *tag) {
  fill(block);
  next_delete_array_nothrow(block, tag);
}
void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *block, size_t align, const void *tag) {
  fill(block);
  next_delete_aligned_nothrow(block, align, tag);
}
void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *block, size_t align, const void *tag) {
  fill(block);
  next_delete_array_aligned_nothrow(block, align, tag);
}
void _ZdlPvmSt11align_val_t(void *block, size_t size, size_t align) {
  fill(block);
  next_delete_sized_aligned(block, size, align);
}
void _ZdaPvmSt11align_val_t(void *block, size_t size, size_t align) {
  fill(block);
  next_delete_array_sized_aligned(block, size, align);
}

/*
 * A block that has to grow stays where it is if jemalloc can extend it
 * (xallocx); otherwise it moves through an allocation and a filled free.
 * Shrinking keeps the block as it is (nothing is given back).
 */
void *realloc(void *block, size_t size) {
  if (block == NULL) return next_realloc(block, size);
  if (size == 0) {
    /* jemalloc frees the block and returns a minimal one. */
    fill(block);
    return next_realloc(block, size);
  }
  size_t usable = malloc_usable_size(block);
  if (size <= usable || next_xallocx(block, size, 0, 0) >= size) return block;
  void *moved = malloc(size);
  if (moved == NULL) return NULL;
  memcpy(moved, block, usable);
  free(block);
  return moved;
}

void *rallocx(void *block, size_t size, int flags) {
  size_t usable = malloc_usable_size(block);
  if (size <= usable || next_xallocx(block, size, 0, flags) >= size) return block;
  void *moved = next_mallocx(size, flags);
  if (moved == NULL) return NULL;
  memcpy(moved, block, usable);
  dallocx(block, flags);
  return moved;
}
