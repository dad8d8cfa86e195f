"""Serialized values and checkpoints as RatchetSaver stores them: zlib-compressed when that saves bytes.

A message serialized by LangGraph's JSON-plus-msgpack serializer carries its
class path, field names and empty fields beside its text (about 480 bytes for
300 characters), and a checkpoint's body repeats its channels' names in
three maps. zlib, primed with a dictionary of those (``_DICTIONARY_1``: a
serialized checkpoint body and one message of each kind, with empty
fields), takes more than half off both (a message: 480 to about 215 bytes;
a checkpoint body: 210 to about 70). A message is stored once and read back
once per read of the thread, so the CPU it costs is small beside the bytes
it saves at every step. A body is stored compressed only when that is
shorter, under the serializer's type tag with ``zlib1+`` before it, so a row
says how to read it and rows stored uncompressed read the same.

The dictionary is part of the stored format: ``zlib1`` rows are read with
exactly these bytes, forever. A better dictionary is ``_DICTIONARY_2`` under
a ``zlib2+`` tag, the first kept to read old rows.

Since the fifth pass the bytes are raw deflate with the same dictionary, without
zlib's 2-byte header and 4-byte checksum, and the tag is short, as it is in every
value row and checkpoint row: ``z`` for the serializer's ``msgpack`` (nearly every
value), ``z+`` before any other tag. Rows tagged ``zlib1+`` still read.
"""

from __future__ import annotations

import zlib
from datetime import UTC, datetime, timedelta
from typing import Any

__all__ = ["pack", "read_ts", "stored_ts", "unpack"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)

_PREFIX = "z+"  # raw deflate, _DICTIONARY_1
_MSGPACK = "z"  # the same, of the serializer's "msgpack"
_ZLIB_1 = "zlib1+"  # zlib (header and checksum), _DICTIONARY_1: rows stored before the fifth pass
_RAW = -15  # zlib's wbits for raw deflate with a 32 KB window
_SMALLEST = 64  # below this, zlib's header and the tag cost about what it could save

_DICTIONARY_1 = (
    b"\x85\xa1v\x04\xa2ts\xd9 2026-01-01T00:00:00.000000+00:0"
    b"0\xb0channel_versions\x83\xa9__start__\x01\xa8messages\x01"
    b"\xaabranch:to:\x01\xadversions_seen\x82\xa9__input__\x80\xa9_"
    b"_start__\x81\xa9__start__\x01\xb0updated_channels\x92\xa8m"
    b"essages\xaabranch:to:\x95\xc7\x89\x05\x94\xbelangchain_core.m"
    b"essages.system\xadSystemMessage\x86\xa7content\xa0\xb1a"
    b"dditional_kwargs\x80\xb1response_metadata\x80\xa4typ"
    b"e\xa6system\xa4name\xc0\xa2id\xa1x\xb3model_validate_json\xc7"
    b"\xab\x05\x94\xbclangchain_core.messages.tool\xabToolMes"
    b"sage\x89\xa7content\xa0\xb1additional_kwargs\x80\xb1respon"
    b"se_metadata\x80\xa4type\xa4tool\xa4name\xc0\xa2id\xa1x\xactool_c"
    b"all_id\xa1x\xa8artifact\xc0\xa6status\xa7success\xb3model_"
    b"validate_json\xc7\x86\x05\x94\xbdlangchain_core.message"
    b"s.human\xacHumanMessage\x86\xa7content\xa0\xb1additiona"
    b"l_kwargs\x80\xb1response_metadata\x80\xa4type\xa5human\xa4"
    b"name\xc0\xa2id\xa1x\xb3model_validate_json\xc7\xcf\x05\x94\xbalangc"
    b"hain_core.messages.ai\xa9AIMessage\x89\xa7content"
    b"\xa0\xb1additional_kwargs\x80\xb1response_metadata\x80\xa4"
    b"type\xa2ai\xa4name\xc0\xa2id\xa1x\xaatool_calls\x91\x84\xa4name\xa1x\xa4a"
    b"rgs\x80\xa2id\xa1x\xa4type\xa9tool_call\xb2invalid_tool_ca"
    b"lls\x90\xaeusage_metadata\xc0\xb3model_validate_json"
    b"\xc7\xad\x05\x94\xbalangchain_core.messages.ai\xa9AIMessag"
    b"e\x89\xa7content\xa0\xb1additional_kwargs\x80\xb1response_"
    b"metadata\x80\xa4type\xa2ai\xa4name\xc0\xa2id\xa1x\xaatool_calls\x90"
    b"\xb2invalid_tool_calls\x90\xaeusage_metadata\xc0\xb3mod"
    b"el_validate_json"
)


def pack(dumped: tuple[str, bytes]) -> tuple[str, bytes]:
    """The type tag and bytes to store for the serializer's type tag and bytes."""
    type_, body = dumped
    if len(body) < _SMALLEST:
        return dumped
    compressor = zlib.compressobj(6, zlib.DEFLATED, _RAW, zdict=_DICTIONARY_1)
    packed = compressor.compress(body) + compressor.flush()
    if len(packed) + len(_PREFIX) >= len(body):
        return dumped
    return _MSGPACK if type_ == "msgpack" else _PREFIX + type_, packed


def unpack(type_: str, body: bytes) -> tuple[str, bytes]:
    """The serializer's type tag and bytes of a stored type tag and bytes."""
    if type_ == _MSGPACK:
        return "msgpack", _inflate(body, _RAW)
    if type_.startswith(_PREFIX):
        return type_[len(_PREFIX) :], _inflate(body, _RAW)
    if type_.startswith(_ZLIB_1):
        return type_[len(_ZLIB_1) :], _inflate(body, zlib.MAX_WBITS)
    return type_, body


def _inflate(body: bytes, wbits: int) -> bytes:
    decompressor = zlib.decompressobj(wbits, zdict=_DICTIONARY_1)
    return decompressor.decompress(body) + decompressor.flush()


def stored_ts(ts: Any) -> Any:
    """A checkpoint's ``ts`` as stored: microseconds since 1970 when they read back as the same text."""
    if not isinstance(ts, str):
        return ts
    try:
        when = datetime.fromisoformat(ts)
    except ValueError:
        return ts
    if when.tzinfo is None:
        return ts
    micros = (when - _EPOCH) // _MICROSECOND
    return micros if read_ts(micros) == ts else ts


def read_ts(stored: Any) -> Any:
    """A checkpoint's ``ts`` as LangGraph made it, from what `stored_ts` stored."""
    if isinstance(stored, int):
        return (_EPOCH + stored * _MICROSECOND).isoformat()
    return stored
