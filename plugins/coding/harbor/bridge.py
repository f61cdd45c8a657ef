"""Calling Harbor's async environment from Horizon's synchronous loop.

Harbor awaits ``agent.run(...)`` on its event loop. Horizon's loop (LangGraph, the tools, the run
store) is synchronous, so ``HorizonAgent.run`` runs it in a worker thread and awaits that thread;
the event loop stays free meanwhile. Each environment call the worker makes (``exec``,
``upload_file``, ...) is a coroutine handed to Harbor's loop with
``asyncio.run_coroutine_threadsafe`` and waited for in the worker: the environment object is only
ever used on the loop it belongs to, one call at a time.

When Harbor cancels the agent (its agent timeout), ``close`` is called: every later call raises
``SandboxUnavailable`` at once, so the worker cannot touch the container while Harbor's verifier
runs in it, and the call in flight is cancelled on the loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from core.api import SandboxUnavailable

T = TypeVar("T")


class LoopBridge:
    """Runs coroutines on ``loop`` (Harbor's) from another thread and waits for their results.

    Args:
        loop: the running event loop the environment belongs to.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.closed = False
        self._lock = threading.Lock()
        self._inflight: Future[Any] | None = None

    def call(self, fn: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> T:
        """``await fn(*args, **kwargs)`` on the loop and return its result (or raise its exception).

        Raises:
            SandboxUnavailable: the bridge was closed (Harbor stopped the agent).
            RuntimeError: called from the loop's own thread (it would wait for itself forever).
        """
        if self._on_loop_thread():
            raise RuntimeError("LoopBridge.call was made on the event loop's own thread; run Horizon's loop in a worker thread")
        with self._lock:
            if self.closed:
                raise SandboxUnavailable("Harbor stopped the agent (its time limit or a cancellation); the container is no longer the agent's")
            future = asyncio.run_coroutine_threadsafe(fn(*args, **kwargs), self.loop)
            self._inflight = future
        try:
            return future.result()
        except asyncio.CancelledError:
            raise SandboxUnavailable("the environment call was cancelled: Harbor stopped the agent") from None
        finally:
            with self._lock:
                self._inflight = None

    def close(self) -> None:
        """Refuse every later call and cancel the one in flight (safe to call twice, from any thread)."""
        with self._lock:
            self.closed = True
            if self._inflight is not None:
                self._inflight.cancel()

    def _on_loop_thread(self) -> bool:
        try:
            return asyncio.get_running_loop() is self.loop
        except RuntimeError:
            return False
