"""Page images for a report's sources: the cited PDF pages rendered to small PNGs.

A reader checks a figure against the page it was read from; a link to a picture of that page
works in any browser, where a link into a PDF does not. Pages are rendered with PDFium
(``pypdfium2``, already a dependency of pdfplumber) in greyscale at a modest resolution to keep
a committed report small (about 20 to 60 KB a page at 1 pixel per point, 72 dpi).
"""

from __future__ import annotations

import io
from pathlib import Path

import pypdfium2

from core.api import make_dirs, write_new


def page_image_name(doc_name: str, page: int) -> str:
    """The file name of one page's image: ``DOC-pPAGE.png`` (page 1-based)."""
    return f"{doc_name}-p{page}.png"


def render_pages(pdfs: dict[str, Path], pages: set[tuple[str, int]], out: Path, scale: float = 0.8) -> list[Path]:
    """Render ``pages`` of the PDFs to PNG files in ``out`` (created).

    Args:
        pdfs: ``{doc_name: path to the PDF}``.
        pages: ``(doc_name, page)`` pairs, pages 1-based.
        out: the folder for the images (``page_image_name`` names them).
        scale: pixels per PDF point (0.8 = 58 dpi; 1 = 72 dpi).

    Returns:
        The paths written, sorted.

    Raises:
        KeyError: a page names a document missing from ``pdfs``.
        ValueError: a page number outside the document.
    """
    make_dirs(out, out.parent)
    written = []
    by_doc: dict[str, list[int]] = {}
    for doc, page in pages:
        by_doc.setdefault(doc, []).append(page)
    for doc, numbers in sorted(by_doc.items()):
        pdf = pypdfium2.PdfDocument(str(pdfs[doc]))
        try:
            for number in sorted(set(numbers)):
                if not 1 <= number <= len(pdf):
                    raise ValueError(f"{doc} has {len(pdf)} pages; page {number} cannot be rendered")
                image = pdf[number - 1].render(scale=scale, grayscale=True).to_pil()
                png = io.BytesIO()
                image.save(png, format="PNG", optimize=True)
                path = out / page_image_name(doc, number)
                write_new(path, png.getvalue())
                written.append(path)
        finally:
            pdf.close()
    return sorted(written)
