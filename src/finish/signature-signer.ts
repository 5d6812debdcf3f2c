/**
 * Signs a finished PDF by the operator's identity: appends the signature's
 * incremental update (signature-update.ts), hashes the file but the
 * /Contents placeholder with SHA-256, makes the CMS (signature-cms.ts) and
 * writes it, in hex, into the placeholder.
 *
 * This runs in the server, on the PDF a worker answered with, not in a
 * worker: the key must never be where a template runs (a template cannot
 * read it, a worker's crash cannot dump it), and the PDF is whole here,
 * after every other finishing the worker did. The cost is a copy of the
 * PDF, one SHA-256 pass over it (off the event loop for a large one) and
 * one key operation.
 *
 * Every buffer made here that holds the PDF, its digest or the CMS is
 * zero-filled once used; the signed PDF is the caller's to wipe.
 */
import { hash, webcrypto } from 'node:crypto';
import type { BodyLayout } from '../bytes/layout.js';
import { SIGNATURE_FIELDS } from '../api-values.js';
import { CmsSigner } from './signature-cms.js';
import type { SigningIdentity } from './signature-identity.js';
import { appendSignatureUpdate, type SignatureTexts } from './signature-update.js';
import { pdfTextString } from './signature-text.js';
import { wipe } from '../retention/wipe.js';

const HEX = Buffer.from('0123456789abcdef');

export class PdfSigner {
  private readonly cms: CmsSigner;

  constructor(identity: SigningIdentity) {
    this.cms = new CmsSigner(identity);
  }

  /**
   * `pdf` signed, as a new buffer (the caller wipes it and `pdf`), with the
   * texts the request gave (`signature`: ranges of `body`), at `time`.
   * Throws a PdfSyntaxError if `pdf` cannot be read.
   */
  async sign(pdf: Buffer, body: Uint8Array, signature: NonNullable<BodyLayout['signature']>, time = new Date()): Promise<Buffer> {
    const texts: SignatureTexts = {};
    for (const field of SIGNATURE_FIELDS) {
      const range = signature[field];
      if (range) texts[field] = pdfTextString(body, range);
    }
    let update: ReturnType<typeof appendSignatureUpdate>;
    try {
      update = appendSignatureUpdate(pdf, texts, this.cms.maxBytes, time);
    } finally {
      for (const text of Object.values(texts)) wipe(text);
    }
    const signed = update.pdf;
    try {
      const { at, hexDigits } = update.contents;
      // The range covers everything but the placeholder, its < and > included.
      const afterContents = at + hexDigits + 2;
      const ranges = [0, at, afterContents, signed.length - afterContents];
      signed.write(ranges.join(' ').padEnd(update.byteRange.end - update.byteRange.start, ' '), update.byteRange.start, 'latin1');
      const digest = await rangesDigest(signed, at, afterContents);
      const cms = this.cms.sign(digest);
      wipe(digest);
      let o = at + 1;
      for (const byte of cms) {
        signed[o++] = HEX[byte >> 4]!;
        signed[o++] = HEX[byte & 0xf]!;
      }
      wipe(cms);
    } catch (error) {
      wipe(signed);
      throw error;
    }
    return signed;
  }
}

/**
 * From this size on, the PDF is hashed on Node's thread pool (WebCrypto)
 * rather than on the event loop: about 3 ms of SHA-256 here, where the hop
 * to the pool costs a small document more than its hashing.
 */
const HASH_OFF_THREAD_BYTES = 1024 * 1024;

/**
 * SHA-256 of `signed` but its bytes [at, afterContents): the signature's
 * /ByteRange. Both ways of hashing take one contiguous view, so the part
 * after the placeholder (the update's short tail) is copied into the
 * placeholder, right after the part before it, and the placeholder is made
 * whole again once the digest is made. Both are one-shot: a `Hash` object
 * would keep its digest in native memory until it is collected, long after
 * the answer.
 */
async function rangesDigest(signed: Buffer, at: number, afterContents: number): Promise<Buffer> {
  const tail = signed.length - afterContents;
  // The placeholder holds thousands of hex digits, the tail a few hundred bytes; the closing `>` is not touched.
  if (tail >= afterContents - at - 1) throw new Error('the tail of the update is longer than the /Contents placeholder');
  signed.copy(signed, at, afterContents);
  const covered = signed.subarray(0, at + tail);
  try {
    return covered.length < HASH_OFF_THREAD_BYTES
      ? hash('sha256', covered, 'buffer')
      : Buffer.from(await webcrypto.subtle.digest('SHA-256', covered));
  } finally {
    signed[at] = 0x3c;
    signed.fill(0x30, at + 1, afterContents - 1);
  }
}
