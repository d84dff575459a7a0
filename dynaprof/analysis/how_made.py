"""How a run was made, in words every report shows the same way: the command as one copyable
repro line, the script relative to the working directory, the versions, the environment
variables that change compilation and the compiler settings that differ from their defaults.

Pure: reads ``RunInfo`` (``docs/session-format.md``). Secrets are left out again here
(``model.environment.redact_argv``), so a session recorded before redaction existed shows none.
Renderers escape the text for their format.
"""

from __future__ import annotations

import posixpath
import shlex

from dynaprof.fmt import plural
from dynaprof.model.environment import REDACTED, redact_argv
from dynaprof.model.session import RunInfo, Session

#: how many changed settings a report lists before "and N more"
MAX_SETTINGS = 40


def _is_abs(path: str) -> bool:
    """POSIX or Windows absolute (a session may be read on another system than the one that wrote it)."""
    return path.startswith("/") or (len(path) > 2 and path[1] == ":" and path[2] in "\\/")


def relative(path: str, cwd: str) -> str:
    """``path`` relative to the run's working directory (``../x`` outside it); a relative path as it
    is; an absolute path with no working directory known: its file name."""
    if not _is_abs(path):
        return path
    if cwd and _is_abs(cwd):
        norm = path.replace("\\", "/")
        base = cwd.replace("\\", "/")
        try:
            return posixpath.relpath(norm, base)
        except ValueError:  # another drive
            pass
    return posixpath.basename(path.replace("\\", "/")) or path


#: a script path this long or shorter is shown as the user typed it
SHORT_PATH = 48


def script_path(run: RunInfo) -> str:
    """The script (or module, or imported log) as a person reads it in a title or a first line: as
    typed when short (or relative to the run's working directory where that is shorter still);
    else relative to the working directory; and where that climbs more than two folders
    (``../../../x/y/script.py``), the file and its parent folder (``y/script.py``). The repro line
    keeps a runnable path (``repro_command``)."""
    typed = run.target
    rel = posixpath.normpath(relative(typed, run.cwd).replace("\\", "/"))
    near = rel.split("/").count("..") <= 2
    if len(typed) <= SHORT_PATH:
        return rel if near and len(rel) < len(typed) else typed
    return rel if near else "/".join(rel.split("/")[-2:])


def _relative_arg(arg: str, cwd: str) -> str:
    if _is_abs(arg):
        return relative(arg, cwd)
    name, eq, value = arg.partition("=")
    if eq and name.startswith("-") and _is_abs(value):
        return f"{name}={relative(value, cwd)}"
    return arg


def repro_command(run: RunInfo) -> list[str]:
    """The command, secrets left out and absolute paths made relative to the working directory;
    empty when the session has none (a block profiled in process)."""
    return [_relative_arg(a, run.cwd) for a in redact_argv(run.command)]


def repro_words(session: Session) -> list[str]:
    """The repro line's words, each already quoted for a POSIX shell: the compile environment
    variables as assignments (a secret's as ``NAME=...``, to fill in), then the command; empty
    when the session has no command."""
    run = session.run
    command = repro_command(run) if session.capture.source == "live" else []  # a log's "command" is its path
    if not command:
        return []
    env = [f"{k}={shlex.quote(v)}" if v != REDACTED else f"{k}=..." for k, v in (run.env or {}).items()]
    return [*env, *(shlex.quote(a) for a in command)]


def repro_line(session: Session) -> str:
    """One line to paste in a shell, in the run's working directory, that makes the run again
    (``repro_words``); ``?`` when unknown."""
    return " ".join(repro_words(session)) or "?"


def versions_text(run: RunInfo) -> str:
    """``dynaprof 0.4.0, torch 2.13.0 (git 1a2b3c4d5e6f), Python 3.12.3, Linux-...``"""
    torch = f"torch {run.torch_version or '?'}"
    if run.torch_git_version:
        torch += f" (git {run.torch_git_version[:12]})"
    parts = [f"dynaprof {run.dynaprof_version}", torch, f"Python {run.python_version or '?'}"]
    if run.platform:
        parts.append(run.platform)
    return ", ".join(parts)


def _unknown(session: Session) -> str:
    if session.capture.source == "torch_trace":
        return "unknown (the TORCH_TRACE log does not record it)"
    return "unknown (not recorded: an in-process block before torch was imported, or an older session)"


def env_text(session: Session) -> str:
    """The compile environment variables as ``NAME=value`` pairs, ``none set``, or unknown."""
    env = session.run.env
    if env is None:
        return _unknown(session)
    return ", ".join(f"{k}={v}" for k, v in env.items()) or "none set"


def setting_lines(session: Session) -> list[str] | None:
    """``dynamo.cache_size_limit = 16 (default 8)`` per changed setting (at most MAX_SETTINGS,
    then ``and N more``); None when unknown."""
    config = session.run.config
    if config is None:
        return None
    lines = [f"{c.module}.{c.name} = {c.value} (default {c.default})" for c in config[:MAX_SETTINGS]]
    if len(config) > MAX_SETTINGS:
        lines.append(f"and {len(config) - MAX_SETTINGS} more (session.json)")
    return lines


def settings_text(session: Session) -> str:
    lines = setting_lines(session)
    if lines is None:
        return _unknown(session)
    return "; ".join(lines) or "all defaults"


def provenance_facts(session: Session) -> list[tuple[str, str]]:
    """(label, text) rows of how the run was made, for a report's small section."""
    run = session.run
    return [
        ("command", (shlex.join(repro_command(run)) if session.capture.source == "live" else "") or "?"),
        ("script", script_path(run)),
        ("versions", versions_text(run)),
        ("compile environment", env_text(session)),
        ("changed compiler settings", settings_text(session)),
    ]


def provenance_summary(session: Session) -> str:
    """One line: the versions, and how many variables and settings differ from a plain run."""
    env, config = session.run.env, session.run.config
    n_env = "? compile env vars" if env is None else f"{plural(len(env), 'compile env var')}"
    n_cfg = "? changed settings" if config is None else f"{plural(len(config), 'changed setting')}"
    return f"{versions_text(session.run)}; {n_env}, {n_cfg}"


def differences(base: Session, new: Session) -> list[str]:
    """What differs in how two runs were made (torch build, compile environment, settings), in
    words; empty when nothing known differs."""
    out = []
    b, n = base.run, new.run
    if b.torch_git_version and n.torch_git_version and b.torch_git_version != n.torch_git_version:
        out.append(f"torch builds differ (git {b.torch_git_version[:12]} vs {n.torch_git_version[:12]})")
    if b.env is not None and n.env is not None and b.env != n.env:
        keys = sorted(k for k in {*b.env, *n.env} if b.env.get(k) != n.env.get(k))
        out.append("compile environment variables differ: " + ", ".join(keys[:8]) + (" ..." if len(keys) > 8 else ""))
    if b.config is not None and n.config is not None:
        bc = {(c.module, c.name): c.value for c in b.config}
        nc = {(c.module, c.name): c.value for c in n.config}
        keys = sorted(f"{m}.{k}" for m, k in {*bc, *nc} if bc.get((m, k)) != nc.get((m, k)))
        if keys:
            out.append("compiler settings differ: " + ", ".join(keys[:8]) + (" ..." if len(keys) > 8 else ""))
    return out

