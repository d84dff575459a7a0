"""Errors that reach the user as one line and an exit status, never a traceback."""

from __future__ import annotations

#: Exit status for bad input (missing files, corrupt sessions, bad options).
EXIT_BAD_INPUT = 2


class DynaprofError(Exception):
    """An error with a message meant for the user and the exit status to leave with."""

    def __init__(self, message: str, exit_code: int = EXIT_BAD_INPUT) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code

    def __str__(self) -> str:
        return self.message


class SessionError(DynaprofError):
    """A session file that cannot be read: missing, corrupt, or from a newer dynaprof."""
