"""A bench helper process spoken to by lines: it prints `READY …` once started, answers one line per command
on stdin, and leaves on `quit` (the fleet simulator, the agent farm)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


class LineChild:
    what = "the helper process"  # named in errors

    proc: Any = None

    def spawn(self, module: str, args: list[str], timeout: float) -> tuple[str, float]:
        """Start `python -m module args` from the source tree; its READY line and the seconds it took."""
        root = Path(__file__).resolve().parents[2]
        env = {**os.environ, "PYTHONPATH": f"{root}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
        t = time.perf_counter()
        self.proc = subprocess.Popen([sys.executable, "-m", module, *args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=env, cwd=root)
        line = self._readline(timeout)
        if not line.startswith("READY"):
            raise RuntimeError(f"{self.what} did not start: {line!r}")
        return line, time.perf_counter() - t

    def _readline(self, timeout: float) -> str:
        import selectors

        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout):
            raise RuntimeError(f"{self.what} did not answer in time")
        return self.proc.stdout.readline().strip()

    def command(self, line: str) -> str:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return self._readline(60.0)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.flush()
                self.proc.wait(30)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
