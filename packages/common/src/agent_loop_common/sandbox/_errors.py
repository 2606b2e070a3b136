"""Exceptions of the sandbox, for the exits a caller must handle differently.

```
SandboxError                 anything the sandbox refuses or cannot do
├── SandboxUnavailable       no backend can run here (or the chosen one cannot): exit 2
├── CommandRejected          a command or argument the sandbox will not run (shell syntax, ...)
└── TreeError                a file tree that cannot be materialised (bad path, bad archive)
```

A command that runs and fails is never an exception: it is a `RunResult` with its exit
code, so a missing program, a timeout or a fork bomb all end as data a verdict can use.
`CommandRejected` is also a `ValueError`, so settings validation reports it like any
other bad value, naming the variable.
"""

from __future__ import annotations

__all__ = ["CommandRejected", "SandboxError", "SandboxUnavailable", "TreeError"]


class SandboxError(Exception):
    """Base class: the sandbox refused or could not do what was asked."""


class SandboxUnavailable(SandboxError):
    """No sandbox backend can run commands here; `str(exc)` says why and what to do."""


class CommandRejected(SandboxError, ValueError):
    """A command line or argument the sandbox will not run; `str(exc)` says why."""


class TreeError(SandboxError):
    """A file tree could not be materialised (a path escaping the tree, a bad archive)."""
