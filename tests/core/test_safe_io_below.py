"""``core.safe_io.read_below``: a file below a folder, opened once, no link followed on the way."""

from __future__ import annotations

import errno
import os

import pytest

from core.safe_io import read_below


def test_reads_a_regular_file_below_the_folder(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "r.html").write_text("<p>report</p>")
    assert read_below(tmp_path, "a/b/r.html", 1024) == b"<p>report</p>"


def test_refuses_a_link_at_the_file_or_at_a_folder_on_the_way(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    top = tmp_path / "run"
    (top / "workspace").mkdir(parents=True)
    os.symlink(outside / "secret.txt", top / "workspace" / "r.html")
    os.symlink(outside, top / "shots")
    with pytest.raises(OSError) as file_link:
        read_below(top, "workspace/r.html", 1024)
    assert file_link.value.errno == errno.ELOOP
    with pytest.raises(OSError) as folder_link:
        read_below(top, "shots/secret.txt", 1024)
    assert folder_link.value.errno in (errno.ELOOP, errno.ENOTDIR)


def test_refuses_dotdot_a_fifo_and_a_file_over_the_limit(tmp_path):
    os.mkfifo(tmp_path / "pipe.html")
    (tmp_path / "big.png").write_bytes(b"x" * 2048)
    with pytest.raises(ValueError):
        read_below(tmp_path / "sub", "../big.png", 4096)
    with pytest.raises(OSError):
        read_below(tmp_path, "pipe.html", 1024)  # never blocks: O_NONBLOCK, then not a regular file
    with pytest.raises(OSError) as big:
        read_below(tmp_path, "big.png", 1024)
    assert big.value.errno == errno.EFBIG
