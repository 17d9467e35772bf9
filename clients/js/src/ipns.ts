/**
 * Verifying a signed IPNS record against its name, as the IPNS spec's "Record Verification"
 * says (https://specs.ipfs.tech/ipns/ipns-record/#record-verification), so that resolving a
 * name trusts no server: the key is the one the name inlines, the V2 signature covers the
 * record's CBOR data, and the record is still valid. Ed25519 names (`k51...`, what Cairn makes)
 * only: other key types do not inline their key in the name.
 *
 * @module
 */

import { CairnError } from "./errors.js";

/** A name's record, verified. */
export interface ResolvedName {
  /** The IPNS name (`k51...`). */
  name: string;
  /** What it points at: `/ipfs/{cid}`, perhaps with a path. */
  value: string;
  /** The CID of an `/ipfs/` value; `null` for another kind of value. */
  cid: string | null;
  /** The record's sequence: one more at each `publish`. */
  sequence: number;
  /** Until when the record is valid (RFC 3339, as the record says it). */
  validUntil: string;
  /** How long resolvers may cache it. */
  ttlSeconds: number;
}

/** The largest record the spec lets a resolver accept. */
const MAX_RECORD_BYTES = 10 * 1024;
/** What a V2 signature signs, before the record's data. */
const SIGNATURE_V2_PREFIX = new TextEncoder().encode("ipns-signature:");
/** The only validity type: valid until an end of life. */
const EOL = 0n;
/** Multiformats codes of a name's CID: version 1, `libp2p-key`, the `identity` multihash. */
const CID_V1 = 1n;
const LIBP2P_KEY = 0x72n;
const IDENTITY = 0n;
/** libp2p's key type for Ed25519, and its public keys' length. */
const ED25519 = 1n;
const ED25519_KEY_BYTES = 32;

const BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz";

/** Whether `text` is written as an IPNS name rather than a label. */
export function isIpnsName(text: string): boolean {
  return /^k51[0-9a-z]+$/.test(text);
}

/**
 * `bytes` as the record of `name` at `now`, checked step by step; a {@link CairnError}
 * `invalid_record` otherwise.
 */
export async function verifyRecord(
  name: string,
  bytes: Uint8Array<ArrayBuffer>,
  now: Date,
): Promise<ResolvedName> {
  const refused = (why: string) => new CairnError("invalid_record", `refusing the record of ${name}: ${why}`);
  if (bytes.length > MAX_RECORD_BYTES) {
    throw refused(`it is ${bytes.length} bytes, over the ${MAX_RECORD_BYTES} a record may have`);
  }
  const { publicKey, encodedKey } = inlinedKey(name);
  const entry = decodeEntry(bytes);
  if (entry.signatureV2 === undefined || entry.data === undefined || entry.data.length === 0) {
    throw refused("it has no V2 signature");
  }
  if (entry.pubKey !== undefined && !equal(entry.pubKey, encodedKey)) {
    throw refused("it carries another key than the name's");
  }
  const key = await crypto.subtle.importKey("raw", publicKey, "Ed25519", false, ["verify"]);
  const signed = new Uint8Array([...SIGNATURE_V2_PREFIX, ...entry.data]);
  if (!(await crypto.subtle.verify("Ed25519", key, entry.signatureV2, signed))) {
    throw refused("its signature does not verify with the name's key");
  }
  const data = decodeSignedData(entry.data);
  // A record with V1 fields must say in them what its signed data says.
  if (entry.signatureV1 !== undefined || entry.value !== undefined) {
    const disagreeing = [
      entry.value !== undefined && !equal(entry.value, data.value) && "value",
      entry.validity !== undefined && !equal(entry.validity, data.validity) && "validity",
      entry.validityType !== undefined && entry.validityType !== data.validityType && "validity type",
      entry.sequence !== undefined && entry.sequence !== data.sequence && "sequence",
      entry.ttl !== undefined && entry.ttl !== data.ttl && "TTL",
    ].find((field) => field !== false);
    if (disagreeing !== undefined) {
      throw refused(`its ${disagreeing} differs from its signed data's`);
    }
  }
  if (data.validityType !== EOL) {
    throw refused(`its validity type ${data.validityType} is not one the spec defines`);
  }
  const validUntil = new TextDecoder().decode(data.validity);
  const end = Date.parse(validUntil);
  if (Number.isNaN(end)) {
    throw refused(`its validity ${JSON.stringify(validUntil)} is not an RFC 3339 time`);
  }
  if (end <= now.getTime()) {
    throw refused(`it expired at ${validUntil}`);
  }
  const value = new TextDecoder("utf-8", { fatal: true }).decode(data.value);
  const cid = value.startsWith("/ipfs/") ? (value.slice("/ipfs/".length).split("/")[0] ?? null) : null;
  return {
    name,
    value,
    cid,
    sequence: Number(data.sequence),
    validUntil,
    ttlSeconds: Number(data.ttl / 1_000_000_000n),
  };
}

/** The Ed25519 key `name` inlines, raw and as libp2p encodes it (what a record's `pubKey` holds). */
function inlinedKey(name: string): {
  publicKey: Uint8Array<ArrayBuffer>;
  encodedKey: Uint8Array<ArrayBuffer>;
} {
  const notEd25519 = () => new CairnError("invalid_name", `${name} is not an Ed25519 IPNS name (k51...)`);
  if (!isIpnsName(name)) {
    throw notEd25519();
  }
  const cid = new Reader(base36(name.slice(1)));
  if (cid.varint() !== CID_V1 || cid.varint() !== LIBP2P_KEY || cid.varint() !== IDENTITY) {
    throw notEd25519();
  }
  const encodedKey = cid.take(Number(cid.varint()));
  const key = decodeFields(encodedKey);
  const publicKey = key.get(2);
  const isEd25519 = key.get(1) === ED25519 && publicKey instanceof Uint8Array;
  if (!isEd25519 || publicKey.length !== ED25519_KEY_BYTES) {
    throw notEd25519();
  }
  return { publicKey, encodedKey };
}

/** The fields of an `IpnsEntry` protobuf. */
interface Entry {
  value?: Uint8Array<ArrayBuffer>;
  signatureV1?: Uint8Array<ArrayBuffer>;
  validityType?: bigint;
  validity?: Uint8Array<ArrayBuffer>;
  sequence?: bigint;
  ttl?: bigint;
  pubKey?: Uint8Array<ArrayBuffer>;
  signatureV2?: Uint8Array<ArrayBuffer>;
  data?: Uint8Array<ArrayBuffer>;
}

function decodeEntry(bytes: Uint8Array<ArrayBuffer>): Entry {
  const fields = decodeFields(bytes);
  const bytesAt = (number: number): Uint8Array<ArrayBuffer> | undefined => {
    const value = fields.get(number);
    if (typeof value === "bigint") {
      throw malformed(`its field ${number} is not bytes`);
    }
    return value;
  };
  const integerAt = (number: number): bigint | undefined => {
    const value = fields.get(number);
    if (value instanceof Uint8Array) {
      throw malformed(`its field ${number} is not an integer`);
    }
    return value;
  };
  return {
    value: bytesAt(1),
    signatureV1: bytesAt(2),
    validityType: integerAt(3),
    validity: bytesAt(4),
    sequence: integerAt(5),
    ttl: integerAt(6),
    pubKey: bytesAt(7),
    signatureV2: bytesAt(8),
    data: bytesAt(9),
  };
}

/** A protobuf message's fields by number (the last of a repeated one): varints and bytes. */
function decodeFields(bytes: Uint8Array<ArrayBuffer>): Map<number, bigint | Uint8Array<ArrayBuffer>> {
  const reader = new Reader(bytes);
  const fields = new Map<number, bigint | Uint8Array<ArrayBuffer>>();
  while (!reader.done) {
    const key = reader.varint();
    const number = Number(key >> 3n);
    switch (key & 7n) {
      case 0n:
        fields.set(number, reader.varint());
        break;
      case 2n:
        fields.set(number, reader.take(Number(reader.varint())));
        break;
      // Fixed-size fields: none that matters here, skipped.
      case 1n:
        reader.take(8);
        break;
      case 5n:
        reader.take(4);
        break;
      default:
        throw malformed("a protobuf field has an unknown wire type");
    }
  }
  return fields;
}

/** The record's signed data: a DAG-CBOR map. */
interface SignedData {
  value: Uint8Array<ArrayBuffer>;
  validity: Uint8Array<ArrayBuffer>;
  validityType: bigint;
  sequence: bigint;
  ttl: bigint;
}

function decodeSignedData(bytes: Uint8Array<ArrayBuffer>): SignedData {
  const reader = new Reader(bytes);
  const map = cbor(reader);
  if (!reader.done || !(map instanceof Map)) {
    throw malformed("its data is not one CBOR map");
  }
  const bytesOf = (key: string): Uint8Array<ArrayBuffer> => {
    const value = map.get(key);
    if (!(value instanceof Uint8Array)) {
      throw malformed(`its data has no ${key} bytes`);
    }
    return value;
  };
  const integerOf = (key: string): bigint => {
    const value = map.get(key);
    if (typeof value !== "bigint") {
      throw malformed(`its data has no ${key} integer`);
    }
    return value;
  };
  return {
    value: bytesOf("Value"),
    validity: bytesOf("Validity"),
    validityType: integerOf("ValidityType"),
    sequence: integerOf("Sequence"),
    ttl: integerOf("TTL"),
  };
}

type Cbor = bigint | Uint8Array<ArrayBuffer> | string | Map<string, Cbor>;

/** One CBOR item of the kinds a record's data holds: unsigned integers, bytes, text and maps. */
function cbor(reader: Reader): Cbor {
  const initial = reader.take(1)[0] as number;
  const major = initial >> 5;
  const info = initial & 0x1f;
  let argument: bigint;
  if (info < 24) {
    argument = BigInt(info);
  } else if (info <= 27) {
    // 24..27: the argument follows in 1, 2, 4 or 8 bytes, big-endian.
    argument = reader.take(1 << (info - 24)).reduce((n, byte) => (n << 8n) | BigInt(byte), 0n);
  } else {
    throw malformed("its data uses a CBOR encoding DAG-CBOR forbids");
  }
  switch (major) {
    case 0:
      return argument;
    case 2:
      return reader.take(Number(argument));
    case 3:
      return new TextDecoder("utf-8", { fatal: true }).decode(reader.take(Number(argument)));
    case 5: {
      const map = new Map<string, Cbor>();
      for (let i = 0n; i < argument; i++) {
        const key = cbor(reader);
        if (typeof key !== "string") {
          throw malformed("its data has a map key that is not text");
        }
        map.set(key, cbor(reader));
      }
      return map;
    }
    default:
      throw malformed(`its data holds a CBOR item of major type ${major}, which a record has none of`);
  }
}

/** Reads bytes front to back; running past the end is a malformed record. */
class Reader {
  readonly #bytes: Uint8Array<ArrayBuffer>;
  #at = 0;

  constructor(bytes: Uint8Array<ArrayBuffer>) {
    this.#bytes = bytes;
  }

  get done(): boolean {
    return this.#at === this.#bytes.length;
  }

  take(length: number): Uint8Array<ArrayBuffer> {
    if (this.#at + length > this.#bytes.length) {
      throw malformed("it ends early");
    }
    this.#at += length;
    return this.#bytes.subarray(this.#at - length, this.#at);
  }

  /** An unsigned LEB128 varint of up to 64 bits. */
  varint(): bigint {
    let value = 0n;
    for (let shift = 0n; shift < 64n; shift += 7n) {
      const byte = this.take(1)[0] as number;
      value |= BigInt(byte & 0x7f) << shift;
      if (byte < 0x80) {
        return value;
      }
    }
    throw malformed("a varint is longer than 64 bits");
  }
}

function malformed(why: string): CairnError {
  return new CairnError("invalid_record", `the record is malformed: ${why}`);
}

/** Base36 text (lowercase, as base-x writes it: each leading `0` a zero byte) as bytes. */
function base36(text: string): Uint8Array<ArrayBuffer> {
  let number = 0n;
  for (const digit of text) {
    number = number * 36n + BigInt(BASE36.indexOf(digit));
  }
  const bytes: number[] = [];
  for (; number > 0n; number >>= 8n) {
    bytes.unshift(Number(number & 0xffn));
  }
  const zeros = text.length - text.replace(/^0+/, "").length;
  return new Uint8Array([...new Array<number>(zeros).fill(0), ...bytes]);
}

function equal(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}
