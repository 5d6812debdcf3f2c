/**
 * The CMS of a PAdES baseline B-B signature (ETSI EN 319 142-1, 5.1 and
 * 6.3; RFC 5652): SignedData, detached (no content), SHA-256, signed by
 * the identity's key, with the certificate chain, and the signed
 * attributes content-type, message-digest and signing-certificate-v2
 * (RFC 5035). No signing-time attribute: PAdES puts the claimed time in the
 * signature dictionary's /M instead.
 *
 * Every structure is made by pkijs and asn1js. They build it once per
 * signature length (one for an RSA key, a few for an EC one), with a dummy
 * digest and signature; each document's CMS is that template with its
 * digest and signature copied over the dummies. Both have a fixed length,
 * so no length in the DER changes. This keeps a signature to one key
 * operation (Node's crypto, with the KeyObject made at start) and a few
 * copies, and leaves no copy of the digest or of the signature in objects
 * that cannot be wiped.
 */
import { createHash, randomBytes, sign } from 'node:crypto';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import type { SigningIdentity } from './signature-identity.js';
import { wipe } from '../retention/wipe.js';

const OID = {
  data: '1.2.840.113549.1.7.1',
  signedData: '1.2.840.113549.1.7.2',
  contentType: '1.2.840.113549.1.9.3',
  messageDigest: '1.2.840.113549.1.9.4',
  signingCertificateV2: '1.2.840.113549.1.9.16.2.47',
  sha256: '2.16.840.1.101.3.4.2.1',
  sha256WithRsa: '1.2.840.113549.1.1.11',
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
};

const DIGEST_BYTES = 32;

/** A CMS made for one signature length, and where its variable parts go. */
interface Template {
  /** The DER of the signed attributes as they are signed (a SET, RFC 5652 5.4), with the dummy digest. */
  signedAttributes: Buffer;
  /** Where the digest goes in `signedAttributes`. */
  attributesDigestAt: number;
  /** The DER of the whole ContentInfo, with the dummy digest and signature. */
  cms: Buffer;
  cmsDigestAt: number;
  cmsSignatureAt: number;
}

export class CmsSigner {
  private readonly templates = new Map<number, Template>();
  private readonly certificates: pkijs.Certificate[];
  private readonly signingCertificateV2: asn1js.Sequence;
  private readonly signatureAlgorithm: string;
  /** The longest CMS this signer makes: the size of the PDF's /Contents placeholder. */
  readonly maxBytes: number;

  constructor(private readonly identity: SigningIdentity) {
    this.certificates = identity.certificates.map((der) => pkijs.Certificate.fromBER(new Uint8Array(der)));
    const signer = this.certificates[0]!;
    // SigningCertificateV2 ::= SEQUENCE { certs SEQUENCE OF ESSCertIDv2 }; ESSCertIDv2 ::= SEQUENCE {
    // hashAlgorithm DEFAULT sha256 (left out), certHash OCTET STRING, issuerSerial IssuerSerial }.
    const issuerSerial = new pkijs.IssuerSerial({
      issuer: new pkijs.GeneralNames({ names: [new pkijs.GeneralName({ type: 4, value: signer.issuer })] }),
      serialNumber: signer.serialNumber,
    });
    const certHash = createHash('sha256').update(identity.certificates[0]!).digest();
    this.signingCertificateV2 = new asn1js.Sequence({
      value: [
        new asn1js.Sequence({
          value: [new asn1js.Sequence({ value: [new asn1js.OctetString({ valueHex: certHash }), issuerSerial.toSchema()] })],
        }),
      ],
    });
    this.signatureAlgorithm = identity.key.asymmetricKeyType === 'ec' ? OID.ecdsaWithSha256 : OID.sha256WithRsa;
    this.maxBytes = this.template(maxSignatureBytes(identity)).cms.length;
  }

  /**
   * The CMS of a document whose SHA-256 over its /ByteRange is `digest`:
   * an owned buffer, which the caller wipes.
   */
  sign(digest: Buffer): Buffer {
    if (digest.length !== DIGEST_BYTES) throw new Error('a SHA-256 digest has 32 bytes');
    // Any template's signed attributes serve: they are the same for every signature length.
    const first = this.templates.values().next().value!;
    const attributes = Buffer.from(first.signedAttributes);
    digest.copy(attributes, first.attributesDigestAt);
    const signature = sign('sha256', attributes, this.identity.key);
    wipe(attributes);
    const template = this.template(signature.length);
    const cms = Buffer.from(template.cms);
    digest.copy(cms, template.cmsDigestAt);
    signature.copy(cms, template.cmsSignatureAt);
    wipe(signature);
    return cms;
  }

  private template(signatureBytes: number): Template {
    const known = this.templates.get(signatureBytes);
    if (known) return known;
    const digest = randomBytes(DIGEST_BYTES);
    const signature = randomBytes(signatureBytes);
    const signer = this.certificates[0]!;
    const signedAttrs = new pkijs.SignedAndUnsignedAttributes({
      type: 0,
      attributes: [
        new pkijs.Attribute({ type: OID.contentType, values: [new asn1js.ObjectIdentifier({ value: OID.data })] }),
        new pkijs.Attribute({ type: OID.messageDigest, values: [new asn1js.OctetString({ valueHex: digest })] }),
        new pkijs.Attribute({ type: OID.signingCertificateV2, values: [this.signingCertificateV2] }),
      ],
    });
    const signerInfo = new pkijs.SignerInfo({
      version: 1,
      sid: new pkijs.IssuerAndSerialNumber({ issuer: signer.issuer, serialNumber: signer.serialNumber }),
      digestAlgorithm: new pkijs.AlgorithmIdentifier({ algorithmId: OID.sha256 }),
      signedAttrs,
      signatureAlgorithm: new pkijs.AlgorithmIdentifier({ algorithmId: this.signatureAlgorithm }),
      signature: new asn1js.OctetString({ valueHex: signature }),
    });
    const signedData = new pkijs.SignedData({
      version: 1,
      digestAlgorithms: [new pkijs.AlgorithmIdentifier({ algorithmId: OID.sha256 })],
      encapContentInfo: new pkijs.EncapsulatedContentInfo({ eContentType: OID.data }),
      certificates: this.certificates,
      signerInfos: [signerInfo],
    });
    const contentInfo = new pkijs.ContentInfo({ contentType: OID.signedData, content: signedData.toSchema(true) });
    const cms = Buffer.from(contentInfo.toSchema().toBER(false));
    // What is signed is the attributes' DER with the SET tag, not the [0] IMPLICIT tag they carry in
    // the SignerInfo (RFC 5652, 5.4); pkijs's own SignedData.sign() re-tags them the same way.
    const signedAttributes = Buffer.from(signedAttrs.toSchema().toBER(false));
    signedAttributes[0] = 0x31;
    const template = {
      signedAttributes,
      attributesDigestAt: uniqueIndex(signedAttributes, digest),
      cms,
      cmsDigestAt: uniqueIndex(cms, digest),
      cmsSignatureAt: uniqueIndex(cms, signature),
    };
    this.templates.set(signatureBytes, template);
    return template;
  }
}

/** Where `part` is in `whole`: exactly once, or the template cannot be used. */
function uniqueIndex(whole: Buffer, part: Buffer): number {
  const at = whole.indexOf(part);
  if (at < 0 || whole.indexOf(part, at + 1) >= 0) throw new Error('a CMS template part is not found exactly once');
  return at;
}

/** The longest signature the key makes: an RSA modulus, or an ECDSA-Sig-Value DER of two full integers. */
function maxSignatureBytes(identity: SigningIdentity): number {
  const details = identity.key.asymmetricKeyDetails ?? {};
  if (identity.key.asymmetricKeyType === 'rsa') return Math.ceil((details.modulusLength ?? 0) / 8);
  const curveBytes: Record<string, number> = { prime256v1: 32, secp384r1: 48, secp521r1: 66 };
  const n = curveBytes[details.namedCurve ?? ''] ?? 66;
  // SEQUENCE { INTEGER r, INTEGER s }: each at most n + 1 bytes (a leading zero) with a 2-byte head.
  return 2 * (n + 1 + 2) + (2 * (n + 3) > 127 ? 3 : 2);
}
