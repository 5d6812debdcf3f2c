/**
 * The operator's signing identity, read once at start from a PKCS#12 file
 * (SIGNING_P12_FILE) and its password (SIGNING_PASSWORD_FILE): the private
 * key as a Node KeyObject (signatures then cost one native key operation)
 * and the certificates, the signer's first, then the rest of the chain the
 * file holds. The file is read by pkijs (PBES2 with AES, as OpenSSL 3 and
 * current tools write it; its MAC is checked). Any problem is a
 * SigningIdentityError whose message says what to fix, and never shows the
 * password or the key.
 *
 * The key lives only in the server: workers are separate processes that are
 * never given it (nor the settings that name its files).
 */
import { readFileSync } from 'node:fs';
import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import * as pkijs from 'pkijs';
import { wipe } from '../retention/wipe.js';

export interface SigningIdentity {
  key: KeyObject;
  /** DER, the signer's certificate first. */
  certificates: Buffer[];
}

export class SigningIdentityError extends Error {
  override name = 'SigningIdentityError';
}

const OID = {
  keyBag: '1.2.840.113549.1.12.10.1.1',
  shroudedKeyBag: '1.2.840.113549.1.12.10.1.2',
  certBag: '1.2.840.113549.1.12.10.1.3',
  x509Certificate: '1.2.840.113549.1.9.22.1',
};

function readSetting(path: string, name: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    throw new SigningIdentityError(`${name} cannot be read: ${(error as NodeJS.ErrnoException).code ?? 'error'} (${path})`);
  }
}

/** An ArrayBuffer of its own (pkijs takes them), so the caller's copy can be wiped apart from it. */
const arrayBufferOf = (bytes: Uint8Array) => new Uint8Array(bytes).buffer;

/** The password file's bytes without one trailing line end (a file written by `echo` has one). */
function passwordOf(file: Buffer): Buffer {
  let end = file.length;
  if (file[end - 1] === 0x0a) end--;
  if (file[end - 1] === 0x0d) end--;
  return file.subarray(0, end);
}

export async function loadSigningIdentity(p12File: string, passwordFile: string): Promise<SigningIdentity> {
  const p12 = readSetting(p12File, 'SIGNING_P12_FILE');
  const passwordBytes = readSetting(passwordFile, 'SIGNING_PASSWORD_FILE');
  const password = arrayBufferOf(passwordOf(passwordBytes));
  wipe(passwordBytes);
  let pfx: pkijs.PFX;
  try {
    pfx = pkijs.PFX.fromBER(arrayBufferOf(p12));
  } catch {
    throw new SigningIdentityError(`SIGNING_P12_FILE is not a PKCS#12 (.p12, .pfx) file (${p12File})`);
  } finally {
    wipe(p12);
  }
  try {
    await pfx.parseInternalValues({ password, checkIntegrity: true });
  } catch (error) {
    if (/integrity/i.test(String((error as Error).message ?? error))) {
      throw new SigningIdentityError(
        `SIGNING_P12_FILE cannot be opened with the password in SIGNING_PASSWORD_FILE: the password is wrong or the file is damaged (${p12File})`,
      );
    }
    throw unreadable(p12File, error);
  }
  const keys: Uint8Array[] = [];
  const certificates: Buffer[] = [];
  try {
    const safe = pfx.parsedValue?.authenticatedSafe;
    if (!safe) throw new Error('no authenticated safe');
    await safe.parseInternalValues({ safeContents: safe.safeContents.map(() => ({ password })) });
    for (const contents of safe.parsedValue.safeContents) {
      for (const bag of contents.value.safeBags) {
        if (bag.bagId === OID.shroudedKeyBag) {
          const shrouded = bag.bagValue as pkijs.PKCS8ShroudedKeyBag;
          // Public in pkijs's JavaScript, marked protected in its typings: its own PKCS#12 examples call it.
          await (shrouded as unknown as { parseInternalValues(p: { password: ArrayBuffer }): Promise<void> }).parseInternalValues({
            password,
          });
          keys.push(new Uint8Array(shrouded.parsedValue!.toSchema().toBER(false)));
        } else if (bag.bagId === OID.keyBag) {
          keys.push(new Uint8Array((bag.bagValue as pkijs.PrivateKeyInfo).toSchema().toBER(false)));
        } else if (bag.bagId === OID.certBag) {
          const cert = bag.bagValue as pkijs.CertBag;
          if (cert.certId === OID.x509Certificate)
            certificates.push(Buffer.from((cert.parsedValue as pkijs.Certificate).toSchema().toBER(false)));
        }
      }
    }
  } catch (error) {
    throw unreadable(p12File, error);
  } finally {
    wipe(new Uint8Array(password));
  }
  if (keys.length !== 1) {
    for (const key of keys) wipe(key);
    throw new SigningIdentityError(`SIGNING_P12_FILE must hold exactly one private key, it holds ${keys.length} (${p12File})`);
  }
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: Buffer.from(keys[0]!.buffer, keys[0]!.byteOffset, keys[0]!.length), format: 'der', type: 'pkcs8' });
  } finally {
    wipe(keys[0]!);
  }
  if (key.asymmetricKeyType !== 'rsa' && key.asymmetricKeyType !== 'ec') {
    throw new SigningIdentityError(`SIGNING_P12_FILE's key must be RSA or EC, it is ${key.asymmetricKeyType} (${p12File})`);
  }
  return { key, certificates: signerFirst(key, certificates, p12File) };
}

/** The certificates with the one of `key`'s public key first; an error if none is. */
function signerFirst(key: KeyObject, certificates: Buffer[], p12File: string): Buffer[] {
  const publicKey = createPublicKey(key).export({ type: 'spki', format: 'der' });
  const index = certificates.findIndex((der) => {
    const cert = pkijs.Certificate.fromBER(new Uint8Array(der));
    return publicKey.equals(Buffer.from(cert.subjectPublicKeyInfo.toSchema().toBER(false)));
  });
  if (index < 0) throw new SigningIdentityError(`SIGNING_P12_FILE holds no certificate for its private key (${p12File})`);
  return [certificates[index]!, ...certificates.filter((_, i) => i !== index)];
}

function unreadable(p12File: string, error: unknown): SigningIdentityError {
  const detail = String((error as Error).message ?? error);
  return new SigningIdentityError(
    `SIGNING_P12_FILE cannot be read (${detail}); a file made by OpenSSL 3's \`openssl pkcs12 -export\` (AES-256, its default) can (${p12File})`,
  );
}
