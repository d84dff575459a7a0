"""Small causes rolled up along the user's code, the way a flamegraph gathers narrow frames into their
parent: a function's lines, then a class's methods, then a file, then its package and the packages
above it (``transformers.models.mixtral``, ``transformers.models``, ``transformers``).

One rule for every table of causes: the cause x phase table (``cause_table``) and the causes a
comparison lists (``compare``, ``pr``, the sweep) group the same seconds the same way. Pure: it
takes seconds by cause and each cause's file, nothing of a session.

The roll-up rises one level at a time, and only for what the row limit hides: after each step the
``limit`` largest groups (each at least ``min_share`` of the total) are shown; every hidden group
moves up one level and merges with a group already there. A cause big enough to be shown keeps its
own row, and the rows shown explain as much of the compile as ``limit`` rows can without naming
anything coarser than needed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dynaprof.model.code_names import label_parts

#: the share of the seconds ``other causes`` may hold so that the rows can name finer causes
OTHER_BUDGET = 0.10


@dataclass(frozen=True)
class Group:
    """One row: a cause on its own (``members == (key,)`` and ``label == key``), or a roll-up."""

    label: str
    members: tuple[str, ...]
    seconds: float

    @property
    def rolled(self) -> bool:
        return len(self.members) > 1


def package_of(path: str) -> str:
    """``transformers.models.mixtral`` for an installed package's file, else its folder's name."""
    parts = path.replace("\\", "/").split("/")
    for i in range(len(parts) - 1, -1, -1):
        if parts[i] in ("site-packages", "dist-packages"):
            return ".".join(p for p in parts[i + 1 : -1]) or parts[-1]
    return parts[-2] if len(parts) > 1 and parts[-2] else "."


def ancestors(cause: str, path: str | None) -> list[tuple[str, str]]:
    """(key, label stem) of each level above ``cause``, innermost first: function, class (where the
    label has one), file, then each package up to the top one. Empty for a cause with no file (the
    parametrization, the collector): it has nothing to roll up into."""
    if not path:
        return []
    parts = label_parts(cause)
    file = path.replace("\\", "/").rsplit("/", 1)[-1]
    out: list[tuple[str, str]] = []
    if parts is not None:
        name = parts[0]
        out.append((f"f:{path}:{name}", f"{name} ({file})"))
        if "." in name:
            owner = name.rsplit(".", 1)[0]
            out.append((f"c:{path}:{owner}", f"{owner} ({file})"))
    out.append((f"m:{path}", file))
    package = package_of(path)
    while package:
        out.append((f"p:{package}", package))
        package = package.rpartition(".")[0]
    return out


@dataclass
class _Node:
    stem: str
    seconds: float = 0.0
    members: list[str] = field(default_factory=list)  # the causes beneath it
    children: list[str] = field(default_factory=list)  # keys, largest first once built


@dataclass
class _Row:
    key: str
    peeled: int = 0  # the largest children that have rows of their own


def roll_up(seconds: dict[str, float], files: dict[str, str], limit: int, min_share: float = 0.0,
            other_budget: float = OTHER_BUDGET) -> tuple[list[Group], list[str]]:
    """The rows ``seconds`` shows in ``limit`` rows, largest first, and the causes left for an
    ``other causes`` row. ``files``: each user cause's file (a cause without one never rolls up).

    Top down, the way a flamegraph is read: the top levels (each package, each cause without a
    file) are the first rows; a row with one child becomes that child; then, while rows are left,
    the largest child of any row gets a row of its own (the row it left keeps the rest, ``N more
    lines``). Once the rows are full, the smallest may leave for ``other causes`` to make room for
    a larger child, while ``other causes`` stays within ``other_budget`` of the total."""
    causes = {c: v for c, v in seconds.items() if v > 0}
    floor = min_share * sum(causes.values())
    nodes: dict[str, _Node] = {}
    roots: list[str] = []
    for cause, v in causes.items():
        chain = [k for k, _ in reversed(ancestors(cause, files.get(cause)))] + [cause]
        stems = dict(ancestors(cause, files.get(cause)))
        parent = None
        for key in chain:
            node = nodes.get(key)
            if node is None:
                node = nodes[key] = _Node(stems.get(key, key))
                (roots if parent is None else nodes[parent].children).append(key)
            node.seconds += v
            node.members.append(cause)
            parent = key
    for node in nodes.values():
        node.children.sort(key=lambda k: (-nodes[k].seconds, k))
    roots.sort(key=lambda k: (-nodes[k].seconds, k))
    limit = max(1, limit)

    def descend(row: _Row) -> _Row:
        while row.peeled == 0 and len(nodes[row.key].children) == 1:
            row = _Row(nodes[row.key].children[0])
        if len(nodes[row.key].children) - row.peeled == 1:  # the rest is one child: name it
            row = descend(_Row(nodes[row.key].children[row.peeled]))
        return row

    rows = [descend(_Row(k)) for k in roots[:limit] if nodes[k].seconds >= floor]
    left = sum(causes.values()) - sum(nodes[r.key].seconds for r in rows)  # in "other causes"

    def widest() -> int | None:
        """The row whose next child is the largest one not shown on its own."""
        best: tuple[float, int] | None = None
        for i, row in enumerate(rows):
            kids = nodes[row.key].children
            if row.peeled < len(kids) and nodes[kids[row.peeled]].seconds >= floor:
                v = nodes[kids[row.peeled]].seconds
                if best is None or v > best[0]:
                    best = (v, i)
        return None if best is None else best[1]

    while (i := widest()) is not None:
        child = nodes[rows[i].key].children[rows[i].peeled]
        if len(rows) >= limit:
            # full: a small row may go to "other causes" (within its budget) to name a larger child
            small = min(range(len(rows)), key=lambda j: _seconds(nodes, rows[j]))
            cost = _seconds(nodes, rows[small])
            if small == i or cost >= nodes[child].seconds or left + cost > other_budget * sum(causes.values()):
                break
            left += cost
            del rows[small]
            i = i - 1 if small < i else i
        rows[i].peeled += 1
        rows[i] = descend(rows[i])
        rows.append(descend(_Row(child)))
    groups = [_group(nodes, r, causes) for r in rows]
    groups = [g for g in groups if g.seconds >= floor and g.members]
    groups.sort(key=lambda g: (-g.seconds, g.label))
    shown = {c for g in groups for c in g.members}
    rest = sorted((c for c in causes if c not in shown), key=lambda c: (-causes[c], c))
    return groups, rest


def _seconds(nodes: dict[str, _Node], row: _Row) -> float:
    node = nodes[row.key]
    return node.seconds - sum(nodes[k].seconds for k in node.children[:row.peeled])


def _group(nodes: dict[str, _Node], row: _Row, causes: dict[str, float]) -> Group:
    node = nodes[row.key]
    gone = {c for k in node.children[:row.peeled] for c in nodes[k].members}
    members = tuple(sorted((c for c in node.members if c not in gone), key=lambda c: (-causes[c], c)))
    label = members[0] if not node.children and len(members) == 1 else (
        f"{node.stem}: {len(members)} {'more ' if row.peeled else ''}lines")
    return Group(label, members, sum(causes[c] for c in members))
