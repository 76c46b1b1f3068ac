"""darkbuf's exceptions.

Scenario problems are :class:`ScenarioError`, a :class:`ValueError`: its text is the
command line's diagnostic (``file:line:column: what is wrong; what would be valid``) and
its attributes give the parts. The classes live in Python, not in the Rust module, so
they pickle by name and a Ray worker's error reaches the caller as the same class.
"""

from __future__ import annotations

from typing import Optional


class DarkbufError(Exception):
    """Base class of darkbuf's errors."""


class ScenarioError(DarkbufError, ValueError):
    """Bad input: a scenario, a profile, an override or a sweep that cannot be run.

    Attributes:
        message: the whole diagnostic, as ``darkbuf`` prints it after ``darkbuf:``.
        file: the scenario file, ``<string>``/``<dict>`` for scenarios given inline, or
            ``--set KEY=VALUE`` for an override; ``None`` for a Python value that is
            no scenario value at all.
        line, column: 1-based position in ``file`` (``None`` for overrides).
        key: the dotted key at fault (``device.bql.limit_min``, ``traffic.0.rate``).
        help: what would be valid.
        kind: ``io``, ``syntax``, ``unknown_key``, ``type``, ``value``,
            ``unsupported`` or ``profile``.
    """

    def __init__(
        self,
        message: str,
        file: Optional[str] = None,
        line: Optional[int] = None,
        column: Optional[int] = None,
        key: str = "",
        help: Optional[str] = None,
        kind: str = "value",
    ) -> None:
        super().__init__(message, file, line, column, key, help, kind)
        self.message = message
        self.file = file
        self.line = line
        self.column = column
        self.key = key
        self.help = help
        self.kind = kind

    def __str__(self) -> str:
        return self.message


class SimulationError(DarkbufError, RuntimeError):
    """The simulator could not set a valid scenario up (the CLI's exit code 3)."""


class DarkbufWarning(UserWarning):
    """What a sweep's caller should know before it runs: a fixed value that replaces
    what a ``[[variant]]`` sets, so the variant's label may not describe its point
    (``darkbuf sweep`` prints the same on stderr)."""
