/*
 * Preloaded before jemalloc in the service's processes (src/retention/freed-memory-fill.ts).
 *
 * jemalloc run with MALLOC_CONF=junk:free fills every block given to free(),
 * but not the block realloc() leaves when it moves an allocation elsewhere
 * (jemalloc 5.3 fills at the entry of free() only). Rust grows its vectors
 * and strings with realloc, so the earlier, shorter copies of a PDF, of its
 * metadata, of strings built from a request would stay readable in freed
 * memory. This realloc() moves a block itself, through malloc() and free(),
 * so that the block left behind is filled like any other. No kept library
 * does this, hence these lines.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

void *realloc(void *block, size_t size) {
  if (block == NULL || size == 0) {
    static void *(*next_realloc)(void *, size_t);
    if (next_realloc == NULL) next_realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
    return next_realloc(block, size);
  }
  size_t usable = malloc_usable_size(block);
  /* Shrinking, or growing within the block: it stays where it is, nothing is freed. */
  if (size <= usable) return block;
  void *moved = malloc(size);
  if (moved == NULL) return NULL;
  memcpy(moved, block, usable);
  free(block);
  return moved;
}
