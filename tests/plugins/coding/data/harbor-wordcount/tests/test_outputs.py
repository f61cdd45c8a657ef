import subprocess
from pathlib import Path


def test_wordcount_counts_words(tmp_path):
    sample = tmp_path / "sample.txt"
    sample.write_text("one two\nthree\n\nfour five six\n")
    out = subprocess.run(["python", "/app/wordcount.py", str(sample)], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "6"


def test_counts_written_inside_and_outside_the_working_folder():
    assert Path("/app/count.txt").read_text() == "9\n"
    assert Path("/tmp/lines.txt").read_text().strip() == "3"


def test_stale_log_removed_and_notes_written():
    assert not Path("/app/old.log").exists()
    assert Path("/app/NOTES.md").read_text().strip()
