"""A page's positioned characters read with PDFium, in pdfplumber's shape, for the table pass.

pdfplumber (pdfminer) spends about 0.2 s laying out each page of a 10-K before its characters can
be read; PDFium (``pypdfium2``, already read for every page's text) gives the same characters and
their boxes in about a hundredth of that. The table pass (``plugins.finance.tables``) only needs
each character's text and box, so it reads them here and hands them to the same word and line
code as the statements (``extract._lines``: de-duplication, ``pdfplumber.utils.extract_words``).

Each character's box is PDFium's loose box (the font's ascent to descent, the glyph's advance),
which is what pdfplumber reports too; ``top`` and ``bottom`` are measured from the page's top edge.
Line breaks PDFium infers are left out; a space it infers from a word gap is kept (a word break, as
pdfplumber sees the PDF's own space there); a character drawn rotated is marked not upright.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

#: PDFium writes a hyphen that breaks a line as U+FFFE or U+0002 (pdfplumber reads "-").
_REPLACE = {"\ufffe": "-", "\u00ad": "-", "\x02": "-"}


@dataclass
class PdfiumPage:
    """A stand-in for a pdfplumber page where only ``chars`` is read (``extract._lines``).

    Attributes:
        chars: pdfplumber-style character dicts: ``text``, ``x0``, ``x1``, ``top``, ``bottom``,
            ``doctop``, ``upright``, ``size``, in PDF points from the page's top-left corner.
    """

    chars: list[dict[str, Any]]

    def close(self) -> None:
        """Nothing to release (the characters are plain dicts); pdfplumber pages have this."""


def pdfium_page(document: Any, number: int) -> PdfiumPage:
    """The characters of one page of an open ``pypdfium2.PdfDocument``.

    Args:
        document: the open document (``extract.open_document``).
        number: the 1-based page number.

    Returns:
        A ``PdfiumPage``; its ``chars`` are in reading order as PDFium stores them.
    """
    import pypdfium2.raw as pdfium_c

    page = document[number - 1]
    textpage = page.get_textpage()
    try:
        left, _, _, height = page.get_mediabox()  # pdfplumber measures from the media box's top-left corner
        chars: list[dict[str, Any]] = []
        rect = pdfium_c.FS_RECTF()
        count = textpage.count_chars()
        whole = textpage.get_text_range(0, count) if count else ""
        codes = [ord(ch) for ch in whole] if len(whole) == count else None  # one call, unless a surrogate pair shifts it
        for i in range(count):
            code = codes[i] if codes is not None else pdfium_c.FPDFText_GetUnicode(textpage, i)
            if code in (0, 10, 13):
                continue
            if code in (32, 0xfffe, 2) and pdfium_c.FPDFText_IsGenerated(textpage, i) == 1:
                if code == 32 and chars:
                    # a space PDFium infers from a word gap breaks the word, as the PDF's own spaces do; it is put
                    # right after the character before it (PDFium's own box for it can start inside the next word)
                    chars.append({**chars[-1], "text": " ", "x0": chars[-1]["x1"], "x1": chars[-1]["x1"]})
                continue
            text = chr(code)
            text = _REPLACE.get(text, text)
            if not pdfium_c.FPDFText_GetLooseCharBox(textpage, i, rect):
                continue
            angle = pdfium_c.FPDFText_GetCharAngle(textpage, i)
            upright = angle < 0 or min(angle, 2 * math.pi - angle) < 0.01  # -1 when PDFium cannot tell
            top, bottom = height - rect.top, height - rect.bottom
            chars.append({"text": text, "x0": rect.left - left, "x1": rect.right - left, "top": top, "bottom": bottom, "doctop": top,
                          "upright": upright, "size": bottom - top})
    finally:
        textpage.close()
        page.close()
    return PdfiumPage(chars)
