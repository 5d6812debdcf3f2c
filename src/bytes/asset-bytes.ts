/**
 * An asset's name and content as bytes of their own, whatever the body's
 * form: in JSON, the name's escapes decoded and the value's base64 (or
 * data: URL); in a multipart form, both as sent. The engine maps assets
 * with them, and the e-invoice step finds its XML with them. Each buffer
 * is the caller's to wipe.
 */
import { decodeAssetValue } from './base64.js';
import { unescapeJsonString } from './json-string.js';
import type { AssetEntry, BodyLayout } from './layout.js';
import { ownedBuffer } from '../retention/owned-buffer.js';

/** A copy of `body[range]` in a buffer of its own. */
export function copyOf(body: Buffer, range: { start: number; end: number }): Buffer {
  const copy = ownedBuffer(range.end - range.start);
  body.copy(copy, 0, range.start, range.end);
  return copy;
}

/** The asset's name, as UTF-8 bytes. */
export function assetName(body: Buffer, layout: BodyLayout, asset: AssetEntry): Buffer {
  return layout.form ? copyOf(body, asset.name) : unescapeJsonString(body, asset.name);
}

/** The asset's content. */
export function assetContent(body: Buffer, layout: BodyLayout, asset: AssetEntry): Buffer {
  return layout.form ? copyOf(body, asset.value) : decodeAssetValue(body, asset.value);
}
