"""Records of a bibliographic dump, read as if an adversary wrote the dump.

Three framings, each bounded by a record cap (`MAX_RECORD_BYTES`, or `DumpLog.max_record_bytes`):

* `json_lines`: one JSON object per line, read with a bounded `readline`; the rest of an over-long
  line is read in small chunks and dropped, never held.
* `json_documents`: one JSON work, a list of works, or Crossref's envelopes (`{"message": ...}`,
  `{"items": [...]}`), streamed element by element with `JSONDecoder.raw_decode` over a buffer
  that never holds more than about twice the cap.
* `xml_records`: the record elements of an XML dump (DBLP, ACL Anthology), cut out of the byte
  stream before lxml sees them, each parsed on its own with no DTD, no entity definitions, no
  file or network access (`resolve_entities=False`, `load_dtd=False`, `no_network=True`,
  `huge_tree=False`). Named character entities come from a fixed table, never from the dump:
  ISO Latin-1's names (`html.entities`), which are all that DBLP's own `dblp.dtd` defines. The
  dump's DOCTYPE and internal subset are never parsed, so a SYSTEM entity, a DTD named by path
  or URL, or billion laughs is one record with an unknown entity: skipped and named. Why not
  `iterparse` over the whole file: libxml2 halts the whole document on a text node over its
  limit, recover mode or not, so one hostile record would end a 7-million-record DBLP file.

A bad record (over the cap, not JSON, not an object, invalid UTF-8, an XML error, an unknown
entity) is skipped and reported to `DumpLog` with its file and line (and byte offset where it
has one), and reading goes on. A cut or corrupt gzip stream ends that file (nothing after the
cut can be read), named the same way; the next file of the dump is still read.
"""

from __future__ import annotations

import codecs
import gzip
import io
import json
import logging
import re
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from html.entities import name2codepoint
from pathlib import Path
from typing import IO, Any

logger = logging.getLogger(__name__)

MAX_RECORD_BYTES = 16 * 1024 * 1024
"""The largest record read: one JSON line, one JSON array element, one XML record element. The
largest real Crossref works (thousands of authors and references) are a few MB; `build_index.py
--max-record-bytes` changes it."""

CHUNK = 1 << 16
STREAM_ERRORS = (EOFError, OSError, zlib.error)  # a cut gzip (EOFError), a corrupt one (BadGzipFile, zlib.error)
RECORD_ERRORS = (TypeError, ValueError, AttributeError, KeyError, IndexError, RecursionError)
"""What a record of the wrong shape raises in a row builder (a string where a list was expected, ...)."""

CHARACTER_ENTITIES = {name: cp for name, cp in name2codepoint.items() if cp < 256}
"""Named entities an XML dump may use: ISO Latin-1's (DBLP's dblp.dtd defines these and no others)."""
XML_ENTITIES = frozenset({"amp", "lt", "gt", "quot", "apos"})


@dataclass(frozen=True)
class SkippedRecord:
    """A record a reader could not use, and where it is."""

    file: str
    line: int | None
    offset: int | None
    """Byte offset of the record in the (decompressed) file, where the reader knows it."""
    reason: str

    def __str__(self) -> str:
        where = f":{self.line}" if self.line is not None else f" at byte {self.offset}" if self.offset is not None else ""
        return f"{self.file}{where}: {self.reason}"


@dataclass
class DumpLog:
    """The record cap of one read and what it skipped: each skipped record goes to `on_skip`
    (default: a warning in the log) and is counted."""

    max_record_bytes: int = MAX_RECORD_BYTES
    on_skip: Callable[[SkippedRecord], None] | None = None
    skipped: int = 0

    def skip(self, file: str | Path, reason: str, line: int | None = None, offset: int | None = None) -> None:
        record = SkippedRecord(str(file), line, offset, reason)
        self.skipped += 1
        if self.on_skip is not None:
            self.on_skip(record)
        else:
            logger.warning("skipped %s", record)


def printable(text: str, limit: int = 120) -> str:
    """Adversary-written text fit for a message: control characters escaped, cut at `limit`."""
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text[: limit + 1])
    return text if len(text) <= limit else text[:limit] + "..."


def open_dump(path: Path) -> IO[bytes]:
    """The file's bytes, decompressed when it is gzip (by its magic number, not its name)."""
    with open(path, "rb") as raw:
        gz = raw.read(2) == b"\x1f\x8b"
    return gzip.open(path, "rb") if gz else open(path, "rb")  # noqa: SIM115


def _cut_stream(exc: BaseException, what: str) -> str:
    kind = "gzip stream cut or corrupt" if isinstance(exc, (EOFError, zlib.error, gzip.BadGzipFile)) else "read error"
    return f"{kind} {what} ({type(exc).__name__}: {printable(str(exc))}); the rest of the file is lost"


# -- JSON lines -----------------------------------------------------------------------------------


def json_lines(path: Path, log: DumpLog) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of a JSON-lines file, gzip-compressed or not, one bounded line at a time."""
    cap = log.max_record_bytes
    number = offset = 0
    with open_dump(path) as binary:
        try:
            while line := binary.readline(cap + 1):
                number, start = number + 1, offset
                offset += len(line)
                if len(line) > cap and not line.endswith(b"\n"):
                    while line and not line.endswith(b"\n"):  # drop the rest unread, a chunk at a time
                        line = binary.readline(CHUNK)
                        offset += len(line)
                    log.skip(path, f"line of {offset - start} bytes exceeds the {cap}-byte record limit", number, start)
                    continue
                value, reason = _json_object(line, first=number == 1)
                if reason:
                    log.skip(path, reason, number, start)
                elif value is not None:
                    yield number, value
        except STREAM_ERRORS as exc:
            log.skip(path, _cut_stream(exc, f"after line {number}"), number + 1, offset)


def _json_object(line: bytes, first: bool = False) -> tuple[dict[str, Any] | None, str | None]:
    """(object, None), (None, None) for a blank line, or (None, why the line is unusable)."""
    if first and line.startswith(codecs.BOM_UTF8):
        line = line[len(codecs.BOM_UTF8):]
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 (byte {exc.start + 1} of the line)"
    if not text.strip():
        return None, None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"not JSON ({exc.msg} at column {exc.colno})"
    except (ValueError, RecursionError) as exc:  # a 5000-digit number, nesting deeper than the parser goes
        return None, f"not JSON ({printable(str(exc)) or type(exc).__name__})"
    if not isinstance(value, dict):
        return None, f"a JSON {type(value).__name__}, not a JSON object"
    return value, None


# -- JSON documents (a work, a list of works, an API envelope) ------------------------------------


class _Unreadable(Exception):
    """The document's structure is broken here: nothing after it can be framed."""


class _JsonWindow:
    """A bounded window over a JSON text read in chunks; positions are reported as lines."""

    _decoder = json.JSONDecoder()
    _WS = re.compile(r"[ \t\r\n]*")
    _OUTSIDE = re.compile(r'[{}\[\]",]')
    _INSIDE = re.compile(r'["\\]')

    def __init__(self, text: IO[str], cap: int) -> None:
        self.text, self.cap = text, cap
        self.buf, self.pos, self.eof = "", 0, False
        self.dropped_chars = self.dropped_lines = 0  # before buf[0]

    def _read(self, size: int) -> bool:
        chunk = self.text.read(size)
        if not chunk:
            self.eof = True
            return False
        if self.pos > CHUNK:  # drop what was consumed, so the window stays bounded
            self.dropped_lines += self.buf.count("\n", 0, self.pos)
            self.dropped_chars += self.pos
            self.buf, self.pos = self.buf[self.pos:], 0
        self.buf += chunk
        return True

    def line(self) -> int:
        return self.dropped_lines + self.buf.count("\n", 0, self.pos) + 1

    def peek(self) -> str:
        """The next non-blank character ("" at the end), not consumed."""
        while True:
            self.pos = self._WS.match(self.buf, self.pos).end()
            if self.pos < len(self.buf) or not self._read(CHUNK):
                return self.buf[self.pos:self.pos + 1]

    def take(self, char: str) -> None:
        if self.peek() != char:
            found = printable(self.buf[self.pos:self.pos + 20]) or "the end of the file"
            raise _Unreadable(f"expected {char!r} at line {self.line()}, found {found!r}")
        self.pos += 1

    def value(self) -> tuple[Any, str | None]:
        """(the next JSON value, None), or (None, why it was skipped) with the window after it."""
        self.peek()
        start_chars = self.dropped_chars + self.pos
        while True:
            try:
                value, end = self._decoder.raw_decode(self.buf, self.pos)
            except (ValueError, RecursionError) as exc:
                error = exc
            else:
                # a number at the window's edge may go on in the next chunk
                if end < len(self.buf) or self.eof or self.buf[self.pos] in '{["':
                    size, self.pos = end - self.pos, end
                    if size > self.cap:
                        return None, f"record of {size} characters exceeds the {self.cap}-byte record limit"
                    return value, None
                error = None
            have = len(self.buf) - self.pos
            if self.eof or have > self.cap:
                break
            # double the window (linear in the value's size), but never past the cap
            self._read(max(CHUNK, min(have, self.cap + 1 - have)))
        size = self._skip_value(start_chars)
        if size > self.cap:
            return None, f"record of {size} characters exceeds the {self.cap}-byte record limit"
        message = error.msg if isinstance(error, json.JSONDecodeError) else printable(str(error))
        return None, f"not JSON ({message})"

    def _skip_value(self, start_chars: int) -> int:
        """Move past the value at the window's position without keeping it; its size in characters."""
        depth, in_string = 0, False
        while True:
            if self.pos >= len(self.buf) and not self._read(CHUNK):
                break
            if in_string:
                m = self._INSIDE.search(self.buf, self.pos)
                if m is None:
                    self.pos = len(self.buf)
                elif m.group() == "\\" and m.end() >= len(self.buf):  # at the window's edge: read on, look again
                    self.pos = m.start()
                    if not self._read(CHUNK):
                        self.pos = len(self.buf)
                        break
                elif m.group() == "\\":
                    self.pos = m.end() + 1
                else:
                    self.pos, in_string = m.end(), False
                    if depth == 0:
                        break
                continue
            m = self._OUTSIDE.search(self.buf, self.pos)
            if m is None:
                self.pos = len(self.buf)
                continue
            char = m.group()
            if char == '"':
                self.pos, in_string = m.end(), True
            elif char in "{[":
                self.pos, depth = m.end(), depth + 1
            elif depth == 0:  # "," "]" "}" of the enclosing container: a bare scalar ended
                self.pos = m.start()
                break
            else:
                self.pos = m.end()
                if char != ",":
                    depth -= 1
                    if depth == 0:
                        break
        return self.dropped_chars + self.pos - start_chars


def json_documents(path: Path, log: DumpLog) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line, work) of a JSON document holding one work, a list of works, `{"items": [...]}` or an
    API envelope `{"message": work or {"items": [...]}}`, streamed one work at a time."""
    with open_dump(path) as binary, io.TextIOWrapper(binary, encoding="utf-8-sig") as text:
        window = _JsonWindow(text, log.max_record_bytes)
        try:
            yield from _works_in(window, 0, path, log)
        except _Unreadable as exc:
            log.skip(path, f"{exc}; the rest of the file is lost", window.line())
        except UnicodeDecodeError as exc:
            log.skip(path, f"not UTF-8 ({exc.reason}); the rest of the file is lost", window.line())
        except STREAM_ERRORS as exc:
            log.skip(path, _cut_stream(exc, f"at line {window.line()}"), window.line())


def _works_in(window: _JsonWindow, level: int, path: Path, log: DumpLog) -> Iterator[tuple[int, dict[str, Any]]]:
    first = window.peek()
    if first == "[":
        yield from _array_items(window, path, log)
    elif first == "{":
        yield from _object(window, level, path, log)
    else:
        line = window.line()
        _, reason = window.value()
        log.skip(path, reason or "not a JSON object or array of works", line)


def _array_items(window: _JsonWindow, path: Path, log: DumpLog) -> Iterator[tuple[int, dict[str, Any]]]:
    window.take("[")
    if window.peek() == "]":
        window.take("]")
        return
    index = 0
    while True:
        window.peek()
        line = window.line()
        value, reason = window.value()
        if reason is None and not isinstance(value, dict):
            reason = f"a JSON {type(value).__name__}, not a JSON object"
        if reason:
            log.skip(path, f"element {index} of the array: {reason}", line)
        else:
            yield line, value
        index += 1
        if window.peek() == "]":
            window.take("]")
            return
        window.take(",")


def _object(window: _JsonWindow, level: int, path: Path, log: DumpLog) -> Iterator[tuple[int, dict[str, Any]]]:
    """An object read member by member: `message` (at the top) and `items` (at the top or in the
    message) are descended into; any other object is itself a work, kept if within the cap."""
    line = window.line()
    start = window.dropped_chars + window.pos
    window.take("{")
    fields: dict[str, Any] | None = {}
    container = False
    reason: str | None = None
    if window.peek() == "}":
        window.take("}")
    else:
        while True:
            key, bad = window.value()
            if bad or not isinstance(key, str):
                raise _Unreadable(f"an object key at line {window.line()} is not a string")
            window.take(":")
            if key == "items" and level <= 1 and window.peek() == "[":
                container = True
                yield from _array_items(window, path, log)
            elif key == "message" and level == 0 and window.peek() in "[{":
                container = True
                yield from _works_in(window, 1, path, log)
            else:
                value, bad = window.value()
                reason = reason or bad
                if fields is not None and not bad:
                    fields[key] = value
                if window.dropped_chars + window.pos - start > window.cap:
                    fields = None  # over the cap: stop keeping it, read on to its end
            if window.peek() == "}":
                window.take("}")
                break
            window.take(",")
    if container:
        return
    size = window.dropped_chars + window.pos - start
    if fields is None:
        log.skip(path, f"record of {size} characters exceeds the {window.cap}-byte record limit", line)
    elif reason:
        log.skip(path, f"a field is unreadable: {reason}", line)
    else:
        yield line, fields


# -- XML records --------------------------------------------------------------------------------


@dataclass(frozen=True)
class XmlRecord:
    tag: str
    line: int
    offset: int
    element: Any
    """The record as an lxml element (for an opener: its start tag only, as an empty element)."""


_ENTITY_OR_LITERAL = re.compile(rb"<!\[CDATA\[.*?\]\]>|<!--.*?-->|&([A-Za-z_][A-Za-z0-9._-]*);", re.DOTALL)
_DECLARED_ENCODING = re.compile(rb"""^<\?xml[^>]*?\sencoding\s*=\s*["']([A-Za-z][A-Za-z0-9._-]{0,39})["']""")
_LIBXML_LINE = re.compile(r"\bline (\d+)")
_KEY_ATTRIBUTE = re.compile(rb"""\s(?:key|id)\s*=\s*["']([^"']{0,200})["']""")


def _xml_parser() -> Any:
    from lxml import etree

    # nothing from outside the record: no DTD, no entity of the dump's, no file or network access
    return etree.XMLParser(resolve_entities=False, load_dtd=False, no_network=True, huge_tree=False,
                           dtd_validation=False, attribute_defaults=False, remove_comments=True, remove_pis=True)


def _with_character_entities(data: bytes) -> tuple[bytes, list[str]]:
    """`data` with each named character entity written as a character reference, and the names it
    uses that are neither XML's own nor in `CHARACTER_ENTITIES` (CDATA and comments untouched)."""
    unknown: list[str] = []
    if b"&" not in data:
        return data, unknown

    def replace(m: re.Match[bytes]) -> bytes:
        name = m.group(1)
        if name is None:
            return m.group()
        text = name.decode("ascii")
        if text in XML_ENTITIES:
            return m.group()
        if text in CHARACTER_ENTITIES:
            return b"&#%d;" % CHARACTER_ENTITIES[text]
        if text not in unknown:
            unknown.append(text)
        return m.group()

    return _ENTITY_OR_LITERAL.sub(replace, data), unknown


def _declared_encoding(head: bytes) -> str | None:
    """The encoding the XML declaration names (UTF-8 without one), or None when it is unknown or
    not ASCII-compatible: records are cut out of the bytes by their ASCII tags."""
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return None
    m = _DECLARED_ENCODING.match(head.removeprefix(codecs.BOM_UTF8))
    name = m.group(1).decode("ascii") if m else "UTF-8"
    try:
        return name if "<a&;/>=\"'\n".encode(name) == b"<a&;/>=\"'\n" else None
    except (LookupError, UnicodeError):
        return None


class _ByteWindow:
    """The bytes of a stream, read in chunks, with the line number of every position. Nothing is
    dropped until `drop`, so indexes into `buf` stay valid while a record is gathered."""

    def __init__(self, stream: IO[bytes], head: bytes) -> None:
        self.stream, self.buf, self.eof = stream, bytearray(head), False
        self.base = 0  # offset of buf[0] in the stream
        self.counted, self.lines = 0, 1  # buf[counted] is on line `lines`

    def more(self) -> bool:
        chunk = self.stream.read(CHUNK)
        self.eof = not chunk
        self.buf += chunk
        return bool(chunk)

    def line_at(self, index: int) -> int:
        if index >= self.counted:
            self.lines += self.buf.count(b"\n", self.counted, index)
        else:
            self.lines -= self.buf.count(b"\n", index, self.counted)
        self.counted = index
        return self.lines

    def drop(self, index: int) -> None:
        """Forget buf[:index]: indexes after it move down by `index`."""
        self.line_at(index)
        del self.buf[:index]
        self.base += index
        self.counted = 0


def xml_records(path: Path, tags: tuple[str, ...], log: DumpLog, openers: tuple[str, ...] = ()) -> Iterator[XmlRecord]:
    """The `tags` elements of an XML dump, each parsed on its own, in file order; for `openers`
    (containers such as an ACL volume) only their start tag. Elements of these names inside a
    record are part of that record, not records themselves."""
    cap = log.max_record_bytes
    parser = _xml_parser()
    names = b"|".join(re.escape(t.encode()) for t in (*tags, *openers))
    start_tag = re.compile(rb"<(" + names + rb")(?=[\s/>])")
    end_tags = {t: re.compile(rb"</" + re.escape(t.encode()) + rb"\s*>") for t in tags}
    margin = max(len(t) for t in (*tags, *openers)) + 64  # a tag cut by a chunk's end is searched again
    with open_dump(path) as stream:
        window: _ByteWindow | None = None
        try:
            head = stream.read(CHUNK)
            encoding = _declared_encoding(head)
            if encoding is None:
                log.skip(path, "not read: its encoding is unknown or not ASCII-compatible (UTF-8 and "
                               "ISO-8859-1 dumps are read)", 1, 0)
                return
            prolog = b'<?xml version="1.0" encoding="%s"?>\n' % encoding.encode()
            window = _ByteWindow(stream, head)
            pos = 0
            while True:
                m = start_tag.search(window.buf, pos)
                if m is None:
                    window.drop(max(pos, len(window.buf) - margin))
                    pos = 0
                    if not window.more():
                        return
                    continue
                tag, start, tag_end = m.group(1).decode(), m.start(), m.end()
                if start >= CHUNK:  # forget what was read before this record (at most once a chunk)
                    window.drop(start)
                    start, tag_end = 0, tag_end - start
                line, offset = window.line_at(start), window.base + start
                close = window.buf.find(b">", tag_end)
                while close < 0 and len(window.buf) - start <= cap and window.more():
                    close = window.buf.find(b">", tag_end)
                start_tag_text = bytes(window.buf[start:min(close + 1 if close >= 0 else len(window.buf), start + 300)])
                label = _Label(tag, start_tag_text)  # made into text only for a skipped record
                if close < 0 or close - start >= cap:
                    log.skip(path, f"{label}: start tag cut off by the end of the file" if close < 0 and window.eof else
                             f"{label}: start tag exceeds the {cap}-byte record limit", line, offset)
                    pos = tag_end
                    continue
                if tag in openers or window.buf[close - 1:close] == b"/":
                    data = bytes(window.buf[start:close + 1])
                    if not data.endswith(b"/>"):
                        data = data[:-1] + b"/>"
                    pos = close + 1
                else:
                    end_tag, scan = end_tags[tag], close + 1
                    found = end_tag.search(window.buf, scan)
                    while found is None and len(window.buf) - start <= cap:
                        scan = max(scan, len(window.buf) - margin)
                        if not window.more():
                            break
                        found = end_tag.search(window.buf, scan)
                    if found is None:
                        if window.eof:
                            log.skip(path, f"{label}: cut off by the end of the file", line, offset)
                            return
                        end = _skip_to_end(window, end_tag, scan)
                        size = window.base + (len(window.buf) if end is None else end) - offset
                        log.skip(path, f"{label}: record of {size} bytes exceeds the {cap}-byte record limit",
                                 line, offset)
                        if end is None:
                            return
                        pos = end
                        continue
                    pos = found.end()
                    if pos - start > cap:  # the last chunk read brought the end, but past the cap
                        log.skip(path, f"{label}: record of {pos - start} bytes exceeds the {cap}-byte record limit",
                                 line, offset)
                        continue
                    data = bytes(window.buf[start:pos])
                element, reason = _parse_record(data, prolog, parser, line)
                if reason:
                    log.skip(path, f"{label}: {reason}", line, offset)
                else:
                    yield XmlRecord(tag, line, offset, element)
        except STREAM_ERRORS as exc:
            line = window.line_at(len(window.buf)) if window else 1
            log.skip(path, _cut_stream(exc, f"at line {line}"), line)


def _skip_to_end(window: _ByteWindow, end_tag: re.Pattern[bytes], scan: int) -> int | None:
    """Read past an over-large record to its end tag, holding a chunk at a time; the index just
    after the end tag in the window, or None when the file ends first."""
    while True:
        found = end_tag.search(window.buf, scan)
        if found is not None:
            return found.end()
        keep = max(0, len(window.buf) - 256)
        window.drop(keep)
        scan = 0
        if not window.more():
            return None


@dataclass(frozen=True)
class _Label:
    """A record's name in messages: its tag and key (or id) attribute, as `<article key="...">`."""

    tag: str
    start_tag: bytes

    def __str__(self) -> str:
        key = _KEY_ATTRIBUTE.search(self.start_tag)
        name = f' {key.group(0).strip().decode("utf-8", "replace")}' if key else ""
        return printable(f"<{self.tag}{name}>")


def _parse_record(data: bytes, prolog: bytes, parser: Any, line: int) -> tuple[Any, str | None]:
    from lxml import etree

    text, unknown = _with_character_entities(data)
    if unknown:
        names = ", ".join(f"&{n};" for n in unknown[:5])
        return None, (f"entity {names} is not one of the character entities a dump may use (ISO Latin-1 names); "
                      "entities the dump defines or names by file or URL are never resolved")
    try:
        return etree.fromstring(prolog + text, parser), None
    except etree.XMLSyntaxError as exc:
        # libxml2 counts lines from the record's prolog (line 1): give them as lines of the dump
        message = _LIBXML_LINE.sub(lambda m: f"line {line + max(int(m.group(1)), 2) - 2}", exc.msg or str(exc))
        return None, f"XML error: {printable(message, 200)}"
