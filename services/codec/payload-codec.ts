import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import type { DataConverter, Payload, PayloadCodec } from '@temporalio/common';
import proto from '@temporalio/proto';
import { loadEnvironment, type Environment } from '../../schemas/environment.js';

/**
 * Optional encryption of every Temporal payload (workflow inputs and results, activity inputs
 * and results, signals, queries, heartbeats, memos) with AES-256-GCM, so the Temporal server and
 * its database hold ciphertext only. On when `MOCKWORLD_PAYLOAD_KEY` is set; the codec server
 * (codec-server.ts) lets the Temporal UI show the decoded payloads to those who hold the key.
 *
 * An encrypted payload is the whole original payload (metadata and data, protobuf-encoded),
 * encrypted: `data` = 12-byte IV ‖ ciphertext ‖ 16-byte GCM tag, with metadata naming the
 * encoding, the cipher and the key id. The key id and cipher are authenticated too (GCM AAD).
 * Failure messages and stack traces stay plaintext (Temporal's default failure converter).
 */

/** `encoding` metadata of an encrypted payload. */
export const ENCRYPTED_ENCODING = 'binary/encrypted';
/** Metadata key naming the key a payload was encrypted with. */
export const KEY_ID_METADATA = 'encryption-key-id';
/** Metadata key naming the cipher. */
export const CIPHER_METADATA = 'encryption-cipher';
const CIPHER = 'AES-256-GCM';
// A CommonJS module: its namespace is the default export under Node's ESM loader.
const { Payload: PayloadMessage } = proto.temporal.api.common.v1;
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** A payload that cannot be decrypted: unknown key, or altered data (GCM authentication failed). */
export class PayloadDecryptionError extends Error {
  override readonly name = 'PayloadDecryptionError';
}

/** A payload key that is not 32 bytes (of base64, as the environment holds it): the configuration must change. */
export class PayloadKeyError extends Error {
  override readonly name = 'PayloadKeyError';
}

/**
 * The id of a key: a fingerprint (sha256 of a domain tag and the key, 16 hex digits). It is public
 * and says which key to decrypt with, so keys can rotate without configuring ids by hand.
 */
export function keyIdOf(key: Buffer): string {
  return `mw-${createHash('sha256').update('mockworld-payload-key\n').update(key).digest('hex').slice(0, 16)}`;
}

/** Standard base64 of exactly 32 bytes (what `openssl rand -base64 32` prints). */
const KEY_PATTERN = /^[A-Za-z0-9+/]{43}=$/;

/** Whether `text` is a payload key as the environment holds it. */
export function isPayloadKey(text: string): boolean {
  return KEY_PATTERN.test(text.trim());
}

/** Decodes a base64 key; throws naming `variable` when it is not 32 bytes of base64. */
export function parsePayloadKey(text: string, variable = 'MOCKWORLD_PAYLOAD_KEY'): Buffer {
  if (!isPayloadKey(text)) {
    throw new PayloadKeyError(`${variable} must be 32 random bytes in base64 (openssl rand -base64 32)`);
  }
  return Buffer.from(text.trim(), 'base64');
}

const u8 = (text: string) => new Uint8Array(Buffer.from(text, 'utf8'));
const text = (bytes: Uint8Array | null | undefined) => (bytes ? Buffer.from(bytes).toString('utf8') : '');

/** AES-256-GCM payload codec: encrypts with the current key, decrypts with it or an older one. */
export class AesGcmPayloadCodec implements PayloadCodec {
  private readonly current: { id: string; key: Buffer };
  private readonly keys = new Map<string, Buffer>();

  /** `current` encrypts; `previous` keys only decrypt (payloads written before a rotation). */
  constructor(current: Buffer, previous: readonly Buffer[] = []) {
    for (const key of [current, ...previous]) {
      if (key.length !== 32) throw new PayloadKeyError(`a payload key must be 32 bytes, got ${key.length}`);
      this.keys.set(keyIdOf(key), key);
    }
    this.current = { id: keyIdOf(current), key: current };
  }

  /** Id of the key new payloads are encrypted with. */
  get keyId(): string {
    return this.current.id;
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => this.encrypt(payload));
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => this.decrypt(payload));
  }

  private encrypt(payload: Payload): Payload {
    const { id, key } = this.current;
    const plain = PayloadMessage.encode(payload).finish();
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(additionalData(id));
    const sealed = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
    return {
      metadata: {
        encoding: u8(ENCRYPTED_ENCODING),
        [CIPHER_METADATA]: u8(CIPHER),
        [KEY_ID_METADATA]: u8(id),
      },
      data: new Uint8Array(sealed),
    };
  }

  /** Payloads that are not encrypted (written before encryption was on) pass through. */
  private decrypt(payload: Payload): Payload {
    if (text(payload.metadata?.encoding) !== ENCRYPTED_ENCODING) return payload;
    const id = text(payload.metadata?.[KEY_ID_METADATA]);
    const cipherName = text(payload.metadata?.[CIPHER_METADATA]);
    if (cipherName !== CIPHER) {
      throw new PayloadDecryptionError(
        `encrypted payload uses cipher "${cipherName}"; only ${CIPHER} is known`,
      );
    }
    const key = this.keys.get(id);
    if (!key) {
      throw new PayloadDecryptionError(
        `payload was encrypted with key ${id || '(none)'}, which this process does not hold ` +
          `(it holds ${[...this.keys.keys()].join(', ')}); set MOCKWORLD_PAYLOAD_KEY to that key ` +
          'or list it in MOCKWORLD_PAYLOAD_OLD_KEYS',
      );
    }
    const data = Buffer.from(payload.data ?? new Uint8Array());
    if (data.length < IV_BYTES + TAG_BYTES) {
      throw new PayloadDecryptionError(`encrypted payload of key ${id} is too short (${data.length} bytes)`);
    }
    const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, IV_BYTES));
    decipher.setAAD(additionalData(id));
    decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
    let plain: Buffer;
    try {
      plain = Buffer.concat([
        decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)),
        decipher.final(),
      ]);
    } catch {
      throw new PayloadDecryptionError(
        `encrypted payload failed authentication with key ${id}: it was altered after encryption`,
      );
    }
    return PayloadMessage.decode(plain);
  }
}

function additionalData(keyId: string): Buffer {
  return Buffer.from(`${CIPHER}\n${keyId}`, 'utf8');
}

/** The codec configured by the environment, or undefined when `MOCKWORLD_PAYLOAD_KEY` is unset. */
export function payloadCodecFromEnvironment(
  env: Environment = loadEnvironment(),
): AesGcmPayloadCodec | undefined {
  if (!env.MOCKWORLD_PAYLOAD_KEY) return undefined;
  const previous = (env.MOCKWORLD_PAYLOAD_OLD_KEYS ?? '')
    .split(',')
    .map((k) => k.trim())
    .filter(Boolean)
    .map((k) => parsePayloadKey(k, 'MOCKWORLD_PAYLOAD_OLD_KEYS'));
  return new AesGcmPayloadCodec(parsePayloadKey(env.MOCKWORLD_PAYLOAD_KEY), previous);
}

/**
 * `existing` with `codec` added as the last payload codec (encryption comes after any
 * compression), or `existing` unchanged without a codec.
 */
export function withPayloadCodec(
  existing: DataConverter | undefined,
  codec: PayloadCodec | undefined,
): DataConverter | undefined {
  if (!codec) return existing;
  return { ...existing, payloadCodecs: [...(existing?.payloadCodecs ?? []), codec] };
}
