"""A task container's storage limit (``core.sandbox.storage``) and the bounded cache of task
images (``core.sandbox.images.evict_images``), on the real engine: skipped only where no container
engine answers (``.ci/run`` starts Docker's daemon).

The images these tests build are tagged ``horizon-task/lru-test-RANDOM-*`` and removed at the end;
eviction is asked only of that prefix, so the other task images of a shared engine are not touched.
"""

from __future__ import annotations

import os
import time
import uuid

import pytest

from core.errors import UserError
from core.sandbox import SandboxLimits
from core.sandbox.container import ContainerSandbox
from core.sandbox.images import IMAGE_CACHE_VARIABLE, cached_images, ensure_base, evict_images, image_cache_limit, mark_used
from plugins.coding.terminal_bench.container import resources

LIMIT = 50 << 20


@pytest.fixture(scope="module")
def debian(engine):
    """Horizon's stand-in Debian base (built when the engine lacks it: about 2 minutes, once)."""
    return ensure_base(engine, "debian")


def test_storage_from_task_toml(tmp_path):
    path = tmp_path / "task.toml"
    assert resources({"environment": {"storage_mb": 2048}}, path)["storage_mb"] == 2048
    assert resources({"environment": {"storage": "10G"}}, path)["storage_mb"] == 10240
    assert resources({"environment": {"storage": "512M", "storage_mb": 100}}, path)["storage_mb"] == 100
    assert resources({}, path)["storage_mb"] is None
    with pytest.raises(UserError, match=r"\[environment\] storage 'lots' is not a size like 10G"):
        resources({"environment": {"storage": "lots"}}, path)


def test_storage_limit_stops_what_writes_past_it(engine, debian, tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    sandbox = ContainerSandbox(engine, debian, workspace, tmp_path / "scratch", workdir="/app", storage_bytes=LIMIT,
                               limits=SandboxLimits(timeout_s=60))  # fmt: skip
    with sandbox:
        assert sandbox.storage_mode in ("quota", "measured")
        small = sandbox.shell("dd if=/dev/zero of=/tmp/small bs=1M count=10 status=none && echo wrote")
        assert small.ok and small.stdout == "wrote\n", small
        assert sandbox.shell("sleep 120 > /dev/null 2>&1 &").ok  # another command's process, left running
        big = sandbox.shell("dd if=/dev/zero of=/tmp/big bs=1M count=100 status=none; ls -s /tmp/big")
        assert big.exit_code != 0, big
        if sandbox.storage_mode == "quota":  # the engine's quota: the write itself fails
            assert "No space left" in big.stderr, big
        else:
            assert "storage limit exceeded" in big.stderr and "more than the task's storage limit of 50 MiB" in big.stderr, big
            # a command that keeps writing is stopped while it runs, long before it would end (~12 s)
            began = time.monotonic()
            slow = sandbox.shell("rm -f /tmp/big; for i in $(seq 60); do dd if=/dev/zero of=/tmp/s$i bs=1M count=2 status=none; "
                                 "sleep 0.2; done; echo finished")  # fmt: skip
            assert slow.exit_code != 0 and "finished" not in slow.stdout and "the command was stopped" in slow.stderr, slow
            assert time.monotonic() - began < 10, slow
            # the workspace (a bind mount, on the host) counts too
            sandbox.shell("rm -f /tmp/s*")
            ws = sandbox.shell("dd if=/dev/zero of=/app/blob bs=1M count=60 status=none")
            assert ws.exit_code != 0 and "storage limit exceeded" in ws.stderr and (workspace / "blob").is_file(), ws
        # only the writing command's processes were killed; a command that frees space runs as usual
        assert sandbox.shell("pgrep -x sleep").ok
        freed = sandbox.shell("rm -f /tmp/big /tmp/s* /app/blob && echo freed")
        assert freed.ok and freed.stdout == "freed\n", freed
        assert sandbox.shell("dd if=/dev/zero of=/tmp/again bs=1M count=10 status=none").ok
        if sandbox.storage_mode == "measured":
            # a writer left in the background, without the marker, is stopped too, between commands
            started = sandbox.shell("env -u HORIZON_COMMAND sh -c 'i=0; while true; do i=$((i+1)); "
                                    "dd if=/dev/zero of=/tmp/bg$i bs=1M count=4 status=none; sleep 0.2; done' > /dev/null 2>&1 &")  # fmt: skip
            assert started.ok, started
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and sandbox._watch.stops_all == 0:
                time.sleep(0.5)
            assert sandbox._watch.stops_all >= 1
            time.sleep(3)  # nothing writes any more: the use stays where the stop left it
            left = sandbox.shell("ls /tmp | grep -c '^bg'; pgrep -f 'while tru[e]|sleep 12[0]' || echo none; pgrep -x sleep")
            count, gone, alive = left.stdout.split()[:3]
            # the writer and the earlier command's sleep are gone, the container's own sleep is left;
            # the writer was stopped within seconds of passing 50 MiB (10 MiB were there already)
            assert gone == "none" and alive.isdigit() and int(count) * 4 < 100, left
            assert sandbox.shell("ls /tmp | grep -c '^bg'").stdout.split()[0] == count


def test_image_cache_limit_reads_its_variable(monkeypatch):
    monkeypatch.delenv(IMAGE_CACHE_VARIABLE, raising=False)
    assert image_cache_limit() == 20480 << 20
    monkeypatch.setenv(IMAGE_CACHE_VARIABLE, "512")
    assert image_cache_limit() == 512 << 20
    monkeypatch.setenv(IMAGE_CACHE_VARIABLE, "unlimited")
    assert image_cache_limit() is None
    monkeypatch.setenv(IMAGE_CACHE_VARIABLE, "5G")
    with pytest.raises(UserError, match="HORIZON_IMAGE_CACHE_MB=5G: it must be a positive number of MiB"):
        image_cache_limit()


def test_the_image_cache_evicts_the_least_recently_used_task_images(engine, debian, tmp_path):
    with pytest.raises(ValueError, match="only task images"):
        evict_images(engine, 0, prefix="horizon-base/")
    prefix = f"horizon-task/lru-test-{uuid.uuid4().hex[:8]}-"
    tags = [f"{prefix}{n}:t" for n in range(4)]
    home = tmp_path / "home"
    try:
        for n, tag in enumerate(tags):  # 3 MB of its own each (random, so no two share a layer)
            context = tmp_path / f"ctx{n}"
            context.mkdir()
            (context / "Dockerfile").write_text(f"FROM {debian}\nRUN head -c 3000000 /dev/urandom > /blob{n}\n")
            engine.call(["build", "--force-rm", "-q", "-t", tag, str(context)], timeout_s=600)
        now = time.time()
        for n, tag in enumerate(tags):  # used 4, 3, 2 and 1 hours ago: tags[0] is the least recently used
            mark_used(tag, home)
            stamp = now - (4 - n) * 3600
            os.utime(home / "cache" / "image-use" / tag.replace("/", "%2F"), (stamp, stamp))
        mark_used(tags[3], home)  # ... and tags[3] again just now: too recent to evict
        listed = cached_images(engine, prefix=prefix, home=home)
        assert [image.tag for image in listed] == tags and all(image.bytes >= 3_000_000 for image in listed), listed
        holder = engine.text(["create", tags[1], "true"])  # a container holds tags[1]
        try:
            # 12 MB held, 4.5 MB allowed: tags[0] goes, tags[1] is held, tags[2] goes, tags[3] is recent
            removed = evict_images(engine, 4_500_000, prefix=prefix, home=home)
        finally:
            engine.call(["rm", "-f", holder], check=False)
        assert removed == [tags[0], tags[2]]
        assert [engine.has_image(tag) for tag in tags] == [False, True, False, True]
        assert engine.has_image(debian)  # a base image is never a candidate
        assert not (home / "cache" / "image-use" / tags[0].replace("/", "%2F")).exists()
        assert evict_images(engine, 10**12, prefix=prefix, home=home) == []  # under the bound: nothing goes
    finally:
        for tag in tags:
            engine.call(["rmi", "-f", tag], check=False)


def test_a_tasks_storage_mb_reaches_its_container(engine, debian, tmp_path):
    from core.sandbox import open_container

    (tmp_path / "ws").mkdir()
    spec = {"image": debian, "workdir": "/app", "storage_mb": 50.0, "allow_internet": False}
    with open_container(spec, tmp_path / "ws", tmp_path / "scratch") as sandbox:
        assert sandbox.storage_bytes == LIMIT and sandbox.storage_mode in ("quota", "measured")
        over = sandbox.shell("dd if=/dev/zero of=/tmp/big bs=1M count=80 status=none")
        assert over.exit_code != 0 and ("storage limit exceeded" in over.stderr or "No space left" in over.stderr), over
    assert sandbox._watch is None and sandbox.container is None
