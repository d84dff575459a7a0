"""What may be recorded of how a run was made: which environment variables, and how secrets in
them and in the command line are left out.

One home for these rules: the capture applies them before anything is written (the journal's
``start`` record, ``RunInfo.command``), and the renderers apply ``redact_argv`` again to what they
show, so a session written before the rules existed shows no secret either. Pure: no I/O.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

#: environment variables that change what torch compiles or how (recorded with their values)
COMPILE_ENV_PREFIXES = ("TORCH_", "TORCHINDUCTOR_", "TORCHDYNAMO_", "PYTORCH_")
#: the value recorded in place of a secret
REDACTED = "<redacted>"
#: names (of variables and options) that suggest a secret value
SECRET_NAME = re.compile(r"TOKEN|KEY|SECRET|PASSW|PASSPHRASE|CREDENTIAL|AUTH|COOKIE|PRIVATE|SIGNATURE|CERT",
                         re.IGNORECASE)
#: prefixes of well-known credentials (GitHub, Slack, OpenAI-style, AWS, Hugging Face, GitLab)
_KNOWN_TOKEN = re.compile(r"^(gh[pousr]_|github_pat_|xox[abpr]-|sk-|AKIA|hf_|glpat-|eyJ)[A-Za-z0-9_\-]{8,}")
#: a URL with a password in it: ``scheme://user:password@host``
_URL_PASSWORD = re.compile(r"^([A-Za-z][\w+.-]*://[^/:@\s]*:)[^@/\s]+(@)")
_TOKEN_CHARS = re.compile(r"^[A-Za-z0-9+=_\-~]{24,}$")
#: the most characters recorded of one value
MAX_VALUE = 500


def is_secret_name(name: str) -> bool:
    """Whether a variable or option name suggests its value is a secret (``HF_TOKEN``, ``--api-key``)."""
    return bool(SECRET_NAME.search(name))


def _entropy(text: str) -> float:
    """Shannon entropy in bits per character."""
    counts: dict[str, int] = {}
    for ch in text:
        counts[ch] = counts.get(ch, 0) + 1
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def looks_secret(value: str) -> bool:
    """Whether a bare value looks like a credential: a known token prefix, or a long string of token
    characters that mixes letters and digits with high entropy (not a path, not a word)."""
    if _KNOWN_TOKEN.match(value):
        return True
    if not _TOKEN_CHARS.match(value) or "/" in value or "." in value:  # paths, file names, versions
        return False
    has_digit = any(c.isdigit() for c in value)
    has_alpha = any(c.isalpha() for c in value)
    return has_digit and has_alpha and _entropy(value) >= 4.0


def redact_value(name: str, value: str) -> str:
    """``value`` as it may be recorded under ``name``: REDACTED for a secret, capped at MAX_VALUE."""
    if is_secret_name(name) or looks_secret(value):
        return REDACTED
    value = _URL_PASSWORD.sub(rf"\1{REDACTED}\2", value)
    return value if len(value) <= MAX_VALUE else value[:MAX_VALUE] + "..."


def compile_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment variables that change compilation (``COMPILE_ENV_PREFIXES``), sorted, with
    the values of secret-looking ones replaced by REDACTED."""
    return {k: redact_value(k, environ[k]) for k in sorted(environ) if k.startswith(COMPILE_ENV_PREFIXES)}


def redact_argv(argv: Sequence[str]) -> list[str]:
    """A command line with secrets left out: ``--token=X`` / ``--api-key X`` / ``API_KEY=X`` keep the
    name and lose the value; a bare value that looks like a credential (``looks_secret``) is
    replaced; a URL keeps everything but its password."""
    out: list[str] = []
    secret_next = False
    for arg in argv:
        if secret_next:
            secret_next = False
            if not arg.startswith("-"):
                out.append(REDACTED)
                continue
        if arg.startswith("-") and "=" in arg:
            name, _, value = arg.partition("=")
            out.append(f"{name}={redact_value(name, value)}")
        elif arg.startswith("-"):
            out.append(arg)
            secret_next = is_secret_name(arg)
        elif re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", arg):  # NAME=value (env-style)
            name, _, value = arg.partition("=")
            out.append(f"{name}={redact_value(name, value)}")
        elif looks_secret(arg):
            out.append(REDACTED)
        else:
            out.append(_URL_PASSWORD.sub(rf"\1{REDACTED}\2", arg))
    return out
