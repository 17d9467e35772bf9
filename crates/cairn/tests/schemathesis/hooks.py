"""What `openapi.yaml` says that JSON Schema cannot, taught to schemathesis.

Loaded by `crates/cairn/tests/openapi.rs` (as `SCHEMATHESIS_HOOKS`) for its run against a real
`cairn serve`. Most hooks here are a rule of the server that the document states in words (its
descriptions, or a `format` JSON Schema leaves to the reader) but a generator cannot read: each
keeps a request schemathesis calls valid one the server takes (dropping it, or making it so).
Two are not: one drops a request schemathesis calls invalid whose fault cannot survive being
sent as a form, and one keeps the run from revoking the key it runs with.
"""

import base64
import datetime
import hashlib
import io
import json
import os
import zipfile

import schemathesis
from hypothesis import strategies as st
from schemathesis.core.jsonschema import make_validator
from schemathesis.core.parameters import ParameterLocation


def _cid_v1(codec: int, digest: bytes) -> str:
    """A CIDv1 with a sha2-256 multihash, in base32 (multibase `b`), as Cairn writes them."""
    raw = bytes([0x01, codec, 0x12, 0x20]) + digest
    return "b" + base64.b32encode(raw).decode().lower().rstrip("=")


_BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def _cid_v0(digest: bytes) -> str:
    """A CIDv0: a bare sha2-256 multihash in base58btc (`Qm...`)."""
    number = int.from_bytes(bytes([0x12, 0x20]) + digest, "big")
    text = ""
    while number:
        number, rest = divmod(number, 58)
        text = _BASE58[rest] + text
    return text


_digests = st.binary(min_size=1, max_size=64).map(lambda b: hashlib.sha256(b).digest())

# `format: cid`: a CID (`cid` in the names' requests, the `cid` filter of the uploads).
# raw, dag-pb and dag-cbor, CIDv1 and CIDv0: the codecs uploads and CARs produce.
schemathesis.openapi.format(
    "cid",
    st.one_of(
        st.builds(_cid_v1, st.sampled_from([0x55, 0x70, 0x71]), _digests),
        _digests.map(_cid_v0),
    ),
)


def _positive(case) -> bool:
    meta = case.meta
    return meta is not None and meta.generation.mode.is_positive


def _utf8_len(text) -> int:
    return len(text.encode("utf-8", "surrogatepass")) if isinstance(text, str) else 0


def _keyvalues_fit(keyvalues) -> bool:
    """`KeyValues`: keys of 1 to 64 bytes and values of at most 256, in UTF-8 (JSON Schema's
    `maxLength` counts characters, and cannot bound a property's name at all)."""
    if not isinstance(keyvalues, dict):
        return True
    return all(
        1 <= _utf8_len(key) <= 64 and _utf8_len(value) <= 256
        for key, value in keyvalues.items()
    )


def _name_fits(name) -> bool:
    """An upload's name: at most 1024 bytes in UTF-8."""
    return _utf8_len(name) <= 1024


def _decode_base(text: str, alphabet: str):
    number = 0
    for char in text:
        index = alphabet.find(char)
        if index < 0:
            return None
        number = number * len(alphabet) + index
    size = (number.bit_length() + 7) // 8
    return b"\0" * (len(text) - len(text.lstrip(alphabet[0]))) + number.to_bytes(size, "big")


def _is_peer_id(raw: bytes) -> bool:
    """A multihash a peer ID is: an inlined key (identity) or a key's sha2-256."""
    return (len(raw) >= 2 and raw[0] == 0x00 and raw[1] == len(raw) - 2 <= 42) or (
        len(raw) == 34 and raw[:2] == b"\x12\x20"
    )


_MULTIBASES = {
    "k": "0123456789abcdefghijklmnopqrstuvwxyz",
    "K": "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ",
    "z": _BASE58,
    "f": "0123456789abcdef",
    "F": "0123456789ABCDEF",
}


def _is_ipns_name(text: str) -> bool:
    """Whether `text` reads as an IPNS name, as the server reads one (`cairn_p2p::ipns::Name`):
    a peer ID, or a CIDv1 with the `libp2p-key` codec holding one, in base36, base58btc,
    base32 or base16 (the bases a label's characters can spell)."""
    peer = _decode_base(text, _BASE58)
    if peer is not None and _is_peer_id(peer):
        return True
    raw = _multibase(text)
    return raw is not None and raw[:2] == b"\x01\x72" and _is_peer_id(raw[2:])


def _varint(raw: bytes, at: int):
    value, shift = 0, 0
    while at < len(raw):
        byte = raw[at]
        value |= (byte & 0x7F) << shift
        at += 1
        if not byte & 0x80:
            return value, at
        shift += 7
    return None, at


def _multibase(text: str):
    """The bytes of `text` in the bases a CID is written in here (base32, base36, base58btc,
    base16), or None."""
    if text[:1] in _MULTIBASES:
        return _decode_base(text[1:], _MULTIBASES[text[0]])
    if text[:1] in ("b", "B"):
        body = text[1:].upper()
        try:
            return base64.b32decode(body + "=" * (-len(body) % 8))
        except ValueError:
            return None
    return None


def _is_cid(text) -> bool:
    """Whether `text` reads as a CID: a CIDv0 (`Qm...`), or a CIDv1 (version, codec, then a
    multihash whose length is what is left) in one of the bases above."""
    if not isinstance(text, str) or not text:
        return False
    if len(text) == 46 and text.startswith("Qm"):
        raw = _decode_base(text, _BASE58)
        return raw is not None and len(raw) == 34 and raw[:2] == b"\x12\x20"
    raw = _multibase(text)
    if not raw or raw[0] != 0x01:
        return False
    codec, at = _varint(raw, 1)
    code, at = _varint(raw, at)
    length, at = _varint(raw, at)
    return None not in (codec, code, length) and length == len(raw) - at <= 64


@schemathesis.hook("before_call").apply_to(
    operation_id=["createName", "pointName", "listUploads"]
)
def a_cid_is_a_cid(context, case, kwargs) -> None:
    """`format: cid`: the generator draws CIDs (above), but the stateful phase then puts in
    what its links take from other requests, and one it infers from `POST /api/names` to
    `PUT /api/names/{name}` takes the new name's label (`name` in the request) for the CID
    too. A valid request's `cid` that is no CID becomes one."""
    if not _positive(case):
        return
    if isinstance(case.body, dict) and "cid" in case.body and not _is_cid(case.body["cid"]):
        case.body["cid"] = _cid_v1(0x55, hashlib.sha256(str(case.body["cid"]).encode()).digest())
    query = case.query if isinstance(case.query, dict) else None
    if query is not None and "cid" in query and not _is_cid(query["cid"]):
        query["cid"] = _cid_v1(0x55, hashlib.sha256(str(query["cid"]).encode()).digest())


@schemathesis.hook("filter_case").apply_to(operation_id="createName")
def a_label_is_not_an_ipns_name(context, case) -> bool:
    """A name's `label` (or `name`) is never an IPNS name itself (the document says so in words;
    schemathesis offers the `name` of a `NameRecord` it was answered, which is one)."""
    if not _positive(case) or not isinstance(case.body, dict):
        return True
    return not any(
        isinstance(case.body.get(field), str) and _is_ipns_name(case.body[field])
        for field in ("label", "name")
    )


@schemathesis.hook("filter_case").apply_to(
    operation_id=["upload", "uploadThroughLink", "createUploadLink", "changeUpload"]
)
def names_and_key_values_fit_in_bytes(context, case) -> bool:
    """Names and key-values are limited in UTF-8 bytes (the document's descriptions and
    `KeyValues` say so); `maxLength` can only bound characters."""
    if not _positive(case):
        return True
    names = [case.query.get("name") if isinstance(case.query, dict) else None]
    keyvalues = None
    if isinstance(case.body, dict):
        names.append(case.body.get("name"))
        keyvalues = case.body.get("keyvalues")
        if isinstance(keyvalues, dict):
            keyvalues = {k: v for k, v in keyvalues.items() if v is not None}
    return all(_name_fits(name) for name in names) and _keyvalues_fit(keyvalues)


def _small_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("hello.txt", "hello")
    return buffer.getvalue()


@schemathesis.hook("map_case").apply_to(operation_id=["upload", "uploadThroughLink"])
def extraction_is_asked_of_an_archive(context, case):
    """`archive_mode=extract` sent outright promises an archive (docs/contract.md, "What counts
    as an archive": else 400): a valid request asking for it sends one. Generated bytes never
    make a complete zip or tar, so the file becomes a small zip."""
    query = case.query if isinstance(case.query, dict) else {}
    if (
        _positive(case)
        and query.get("archive_mode") in ("extract", "convert")
        and isinstance(case.body, dict)
        and "file" in case.body
    ):
        case.body["file"] = _small_zip()
    return case


def _metadata_keys(value: str) -> list:
    """The keys of an `Upload-Metadata` value, as the server splits it."""
    if not value.strip(" \t"):
        return []
    return [pair.strip(" \t").split(" ", 1)[0] for pair in value.split(",")]


@schemathesis.hook("filter_case").apply_to(operation_id=["tusCreate", "tusCreateThroughLink"])
def a_creation_has_its_length_one_way(context, case) -> bool:
    """TUS 1.0.0, "Creation": "The request MUST include one of the following headers: a)
    `Upload-Length` [...] b) `Upload-Defer-Length: 1`", and "If the length of an upload is not
    deferred, this header MUST be omitted"; a final upload of "Concatenation" has neither ("The
    Client MUST NOT include the `Upload-Length` header in the final upload creation"). And
    "Upload-Metadata": "All keys MUST be unique." OpenAPI parameters cannot say how headers
    depend on each other; Cairn answers a creation that breaks them 400 (docs/tus-rules.md T7,
    T8), as tusd does."""
    if not _positive(case):
        return True
    headers = {name.lower(): value for name, value in (case.headers or {}).items()}
    final = str(headers.get("upload-concat", "")).startswith("final;")
    given = [name in headers for name in ("upload-length", "upload-defer-length")]
    length_ok = not any(given) if final else sum(given) == 1
    keys = _metadata_keys(str(headers.get("upload-metadata", "")))
    return length_ok and len(keys) == len(set(keys))


@schemathesis.hook("map_case").apply_to(operation_id="createKey")
def a_key_expires_in_the_future(context, case):
    """A key's `expiresAt` is in the future and at most 100 years away (the document says so
    in words; `format: date-time` is any time): one drawn outside that becomes tomorrow."""
    body = case.body
    if _positive(case) and isinstance(body, dict) and isinstance(body.get("expiresAt"), str):
        now = datetime.datetime.now(datetime.timezone.utc)
        try:
            at = datetime.datetime.fromisoformat(body["expiresAt"])
            soon, far = datetime.timedelta(minutes=1), datetime.timedelta(days=99 * 365)
            fine = now + soon < at < now + far
        except ValueError:
            fine = False
        if not fine:
            tomorrow = now + datetime.timedelta(days=1)
            body["expiresAt"] = tomorrow.strftime("%Y-%m-%dT%H:%M:%SZ")
    return case


# Control characters other than HTAB, which no header (a multipart part's included) can carry.
_CONTROLS = frozenset(chr(c) for c in [*range(0x00, 0x09), *range(0x0A, 0x20), 0x7F])


@schemathesis.hook("filter_case").apply_to(operation_id=["upload", "uploadThroughLink"])
def parts_are_named_in_header_characters(context, case) -> bool:
    """Parts other than `file`, `name` and `keyvalues` are ignored (docs/contract.md, "Small
    upload"), but a part is still named in its `Content-Disposition` header (RFC 7578 section
    4.2), where a control character is not a field value's (RFC 9110 section 5.5): such a body
    is malformed (400) whatever the document allows its parts to be called."""
    if not _positive(case) or not isinstance(case.body, dict):
        return True
    return not any(_CONTROLS.intersection(str(name)) for name in case.body)


def _as_text(value) -> str:
    """A form field's value as schemathesis writes it into its part: JSON's spelling for
    booleans, null, objects and arrays, Python's `str` for numbers."""
    if isinstance(value, (bool, dict, list)) or value is None:
        return json.dumps(value)
    return str(value)


@schemathesis.hook("filter_case").apply_to(operation_id=["upload", "uploadThroughLink"])
def a_name_part_is_text_whatever_it_was_drawn_as(context, case) -> bool:
    """A multipart part is text (RFC 7578): a `name` drawn as a number, a boolean, null or an
    object reaches the server as its text, a name like any other, so a case whose only fault is
    that `name`'s type is not one the server could see. (schemathesis reads such values back
    as sent for the query and the path, not for a form's parts.) A `name` drawn as a list is
    sent as that many `name` parts, which the server refuses, and is kept."""
    meta = case.meta
    if meta is None or _positive(case) or not isinstance(case.body, dict):
        return True
    if "name" not in case.body or isinstance(case.body["name"], (str, list)):
        return True
    validator_cls = case.operation.schema.adapter.jsonschema_validator_cls
    for location, component in meta.components.items():
        if location == ParameterLocation.BODY or not component.mode.is_negative:
            continue
        if location != ParameterLocation.QUERY:
            return True
        # A query parameter the document does not name is ignored (schemathesis, too, lets
        # such extras pass): the query is at fault only if what it names is.
        parameters = case.operation.get_parameter_set(location)
        named = {k: v for k, v in (case.query or {}).items() if k in parameters}
        if not make_validator(parameters.schema, validator_cls).is_valid(named):
            return True
    body = case.operation.get_body_for_media_type(case.media_type)
    if body is None:
        return True
    validator = make_validator(body.optimized_schema, validator_cls)
    # Raw bytes are no JSON value: the file, whatever it holds, is a string to JSON Schema.
    as_sent = {
        key: ("" if key == "file" else _as_text(value) if key == "name" else value)
        for key, value in case.body.items()
    }
    return not validator.is_valid(as_sent)


@schemathesis.hook("before_call").apply_to(operation_id="revokeKey")
def the_run_keeps_its_own_key(context, case, kwargs) -> None:
    """Not the schema's rule but the run's: the key it runs with (`CAIRN_OWN_KEY_ID`) stays.
    Its stateful phase revokes keys `GET /api/keys` lists, that key among them, and every
    request after that would be answered 401 and try nothing; the DELETE goes to a key id
    that is none (404) instead."""
    own = os.environ.get("CAIRN_OWN_KEY_ID")
    if own is not None and isinstance(case.path_parameters, dict):
        if str(case.path_parameters.get("id")) == own:
            case.path_parameters["id"] = "0"
