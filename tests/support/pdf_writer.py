"""Small, valid PDF files written by hand for the tests of PDF reading.

Each page is a list of lines set in Helvetica (WinAnsi encoding, so Portuguese letters work);
an empty line leaves a gap. A page without lines holds only an image, as a scan without its
text layer does. The document's /Info dictionary carries the title when one is given. The
cross-reference table is computed, so any reader accepts the file without repairing it.
"""

from __future__ import annotations

from collections.abc import Sequence

_LEADING = 14
_TOP = 760


def pdf_document(pages: Sequence[Sequence[str]], *, title: str | None = None) -> bytes:
    """A PDF with one page per entry of ``pages``, each a list of text lines."""
    objects: list[bytes] = []

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    catalog = add(b"")  # filled in once the page tree's number is known
    pages_ref = add(b"")
    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    image = add(_stream(b"\x80", b"/Type /XObject /Subtype /Image /Width 1 /Height 1 "
                        b"/ColorSpace /DeviceGray /BitsPerComponent 8"))  # fmt: skip
    kids = []
    for lines in pages:
        content = add(_stream(_page_content(lines), b""))
        kids.append(
            add(
                b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
                b"/Resources << /Font << /F1 %d 0 R >> /XObject << /Im1 %d 0 R >> >> >>"
                % (pages_ref, content, font, image)
            )
        )
    objects[catalog - 1] = b"<< /Type /Catalog /Pages %d 0 R >>" % pages_ref
    kid_refs = b" ".join(b"%d 0 R" % kid for kid in kids)
    objects[pages_ref - 1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kid_refs, len(kids))
    info = add(b"<< /Title %s /Producer (tests) >>" % _text_string(title)) if title else None
    return _serialize(objects, root=catalog, info=info)


def _page_content(lines: Sequence[str]) -> bytes:
    if not lines:
        return b"q 300 0 0 400 150 200 cm /Im1 Do Q"
    ops = [b"BT /F1 11 Tf %d TL 72 %d Td" % (_LEADING, _TOP)]
    for line in lines:
        ops.append(b"(%s) Tj T*" % _escape(line.encode("cp1252")) if line else b"T*")
    ops.append(b"ET")
    return b"\n".join(ops)


def _stream(data: bytes, entries: bytes) -> bytes:
    return b"<< %s /Length %d >>\nstream\n%s\nendstream" % (entries, len(data), data)


def _escape(raw: bytes) -> bytes:
    out = bytearray()
    for byte in raw:
        if byte in b"()\\":
            out += b"\\" + bytes([byte])
        elif byte > 126:
            out += b"\\%03o" % byte
        else:
            out.append(byte)
    return bytes(out)


def _text_string(text: str) -> bytes:
    # UTF-16 with its byte-order mark is how PDF strings carry any character.
    return b"<" + ("\ufeff" + text).encode("utf-16-be").hex().upper().encode() + b">"


def _serialize(objects: list[bytes], *, root: int, info: int | None) -> bytes:
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    info_entry = b" /Info %d 0 R" % info if info else b""
    out += b"trailer\n<< /Size %d /Root %d 0 R%s >>\n" % (len(objects) + 1, root, info_entry)
    out += b"startxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)
