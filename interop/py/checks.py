"""What every interop script of the Python client shares: one PASS / FAIL
line per check, and the innermost cause of a failure."""

from __future__ import annotations

from collections.abc import Awaitable, Callable


def describe(err: BaseException) -> str:
    """The innermost cause of an exception, unwrapping anyio's task groups."""
    while isinstance(err, BaseExceptionGroup) and len(err.exceptions) == 1:
        err = err.exceptions[0]
    code = getattr(getattr(err, "error", None), "code", None)
    return f"{type(err).__name__}: {err}" + (f" (code {code})" if code is not None else "")


class Checks:
    """Prints `PASS TAG name` or `FAIL TAG name: reason` per check and counts
    the failures; a check that raises fails with the exception's cause."""

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.failed = 0

    async def check(self, name: str, body: Callable[[], Awaitable[str | None]]) -> None:
        try:
            why = await body()
        except Exception as err:  # noqa: BLE001 - every failure is reported, none raised
            why = describe(err)
        if why:
            self.failed += 1
            print(f"FAIL {self.tag} {name}: {why}", flush=True)
        else:
            print(f"PASS {self.tag} {name}", flush=True)
