"""Errors for bad user input: one line naming file, document, object and field."""

from __future__ import annotations

from gangsched.api.names import printable


class GangschedError(Exception):
    """Base class of every error gangsched reports to a user (never a traceback)."""


class InputError(GangschedError):
    """A user mistake in an input object.

    Rendered as one line: ``file[doc N] Kind/name: field: message``; any part that is
    unknown is left out. Non-printable characters (a name holding an escape sequence, a
    newline) are escaped, so the line is one line and nothing reaches a terminal raw.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        doc: int | None = None,
        obj: str | None = None,
        field: str | None = None,
    ) -> None:
        self.message = message
        self.file = file
        self.doc = doc
        self.obj = obj
        self.field = field
        super().__init__(str(self))

    def located(
        self,
        *,
        file: str | None = None,
        doc: int | None = None,
        obj: str | None = None,
        field_prefix: str | None = None,
    ) -> InputError:
        """A copy with missing location parts filled in (inner parts win)."""
        field = self.field
        if field_prefix:
            field = f"{field_prefix}.{field}" if field else field_prefix
        return InputError(
            self.message,
            file=self.file or file,
            doc=self.doc if self.doc is not None else doc,
            obj=self.obj or obj,
            field=field,
        )

    def __str__(self) -> str:
        where = ""
        if self.file:
            where = self.file
            if self.doc is not None:
                where += f"[doc {self.doc}]"
        elif self.doc is not None:
            where = f"[doc {self.doc}]"
        parts = [p for p in (where, self.obj, self.field) if p]
        return _elided(printable(": ".join([*parts, self.message])))


MESSAGE_HEAD, MESSAGE_TAIL = 1200, 600
"""Characters of a very long message kept from its start and its end: a message quotes
the value at fault, which may be megabytes (a label of a 100 MB file)."""


def _elided(text: str) -> str:
    left_out = len(text) - MESSAGE_HEAD - MESSAGE_TAIL
    if left_out <= 100:
        return text
    return (f"{text[:MESSAGE_HEAD]}... ({left_out:,} characters left out) ..."
            f"{text[-MESSAGE_TAIL:]}")


class ValidationError(GangschedError):
    """An invalid gang tree or scheduling configuration."""
