"""Database URLs as they may be shown, and the strings that only look like a file's name.

A password never reaches a message, a log line or a heading: a URL's `user:password@` is
shown as `user:***@`, a keyword connection string's `password=...` as `password=***`,
wherever they stand in the text (the drivers quote the whole URL in some errors).

`open_store` takes a file path for anything that is not a URL, so a PostgreSQL connection
string written another way would silently become a new SQLite file named after it,
password included. Two such ways are refused instead: libpq's keyword form (`host=db
user=distill password=...`) and a URL without its scheme (`distill:secret@db:5432/distill`).
A file that really has such a name can be given as `./name`.
"""

from __future__ import annotations

import re

from distill.errors import ConfigurationError

_IN_URL = re.compile(r"(?P<head>\b[a-z][a-z0-9+.-]*://[^:/@\s'\"]*):[^@\s]*@", re.IGNORECASE)
_KEYWORD = re.compile(r"(?P<head>\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s'\"]+)", re.I)
_KEYWORD_FORM = re.compile(
    r"(?:^|\s)(?:host|hostaddr|port|dbname|user|password|sslmode|service)\s*=", re.IGNORECASE
)
_WITHOUT_SCHEME = re.compile(r"[^/\\\s:@]+:[^/\\\s@]*@[^/\\\s]+(?:/.*)?")

URL_FORM = "postgresql://user:password@host:port/dbname"


def hide_passwords(text: str) -> str:
    """`text` with every URL's password and every `password=` value replaced by `***`."""
    return _KEYWORD.sub(r"\g<head>***", _IN_URL.sub(r"\g<head>:***@", text))


def refuse_connection_strings(value: str) -> None:
    """Raise `ConfigurationError` for a PostgreSQL connection string in a form distill does
    not read, which would otherwise be taken as a file name (see the module). The message
    does not repeat the value."""
    if "://" in value:
        return
    if _KEYWORD_FORM.search(value):
        raise ConfigurationError(
            "the database looks like a PostgreSQL keyword connection string (host=... "
            f"dbname=...); distill takes a URL: {URL_FORM} (a SQLite file of that name: "
            "start it with ./)"
        )
    if _WITHOUT_SCHEME.fullmatch(value):
        raise ConfigurationError(
            "the database looks like user:password@host without a scheme; write it as "
            f"{URL_FORM} (a SQLite file of that name: start it with ./)"
        )
