"""log-pipeline: /app/top_ips.sh ranks client IPs by requests; /app/top_ips.txt is its output on /app/access.log."""

import os
import subprocess
from collections import Counter
from pathlib import Path

SCRIPT = Path("/app/top_ips.sh")


def ranking(lines, n):
    counts = Counter(line.split()[0] for line in lines if line.strip())
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0].encode()))
    return [f"{count} {ip}" for ip, count in ordered[:n]]


def run(log, *args):
    result = subprocess.run(["bash", str(SCRIPT), str(log), *args], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_script_is_executable():
    assert SCRIPT.is_file() and os.access(SCRIPT, os.X_OK)


def test_saved_output_matches_the_log():
    lines = Path("/app/access.log").read_text().splitlines()
    assert Path("/app/top_ips.txt").read_text().splitlines() == ranking(lines, 3)


def test_ties_and_count_on_another_log(tmp_path):
    lines = [f"{ip} - - [10/Oct/2024:13:55:36 +0000] \"GET / HTTP/1.1\" 200 10" for ip in
             ["10.0.0.9", "10.0.0.10", "10.0.0.9", "10.0.0.10", "10.0.0.2", "10.0.0.2", "10.0.0.7"]]
    log = tmp_path / "other.log"
    log.write_text("\n".join(lines) + "\n")
    assert run(log, "2") == ranking(lines, 2)  # a three-way tie at 2: byte order
    assert run(log) == ranking(lines, 3)
    assert run(log, "10") == ranking(lines, 10)
