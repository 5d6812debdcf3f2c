/**
 * A buffer for request or PDF bytes: memory of its own, outside the V8
 * heap and outside Node's shared pool, so that zero-filling it wipes the
 * only copy.
 *
 * Why not `Buffer.alloc`/`allocUnsafeSlow`: V8 keeps typed arrays of up to
 * 64 bytes inside its own heap, and the first time their ArrayBuffer is
 * needed (`subarray`, `.buffer`, a write to a socket) it moves them out,
 * leaving the old bytes behind in the heap, where nothing can wipe them.
 * An ArrayBuffer made directly always lives outside the heap.
 */
export function ownedBuffer(size: number): Buffer {
  return Buffer.from(new ArrayBuffer(size));
}
