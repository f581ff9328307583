"""The checks of a test script run outside GoogleTest (ctest runs it with Python): each check prints one
`ok`/`FAIL` line, and the script's last line and exit code say how many failed."""

from __future__ import annotations


class Checklist:
    def __init__(self, name: str) -> None:
        self.name = name
        self.failures: list[str] = []

    def __call__(self, ok: bool, what: str) -> None:
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            self.failures.append(what)

    def finish(self) -> int:
        print(f"{self.name}: {len(self.failures)} failed")
        return 1 if self.failures else 0
