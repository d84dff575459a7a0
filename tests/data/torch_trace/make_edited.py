"""Hand-edited variants of one_frame.log, each made the way it happens in the wild (see README.md):

    .venv/bin/python tests/data/torch_trace/make_edited.py

* no_final_newline.log: the log without its final newline (an editor or a collector strips it).
* md5_mismatch.log: one payload character changed (the guard dump's first ``TREE_GUARD_MANAGER``
  becomes ``TREE_GUARD_MANAGEr``) while its envelope keeps the old ``has_payload`` md5.
* bad_chromium.log: the first chromium event's payload cut to invalid JSON (its closing brace
  dropped) with ``has_payload`` updated to the new payload's md5, so only the JSON is wrong.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

D = Path(__file__).resolve().parent
lines = (D / "one_frame.log").read_bytes().splitlines(keepends=True)

(D / "no_final_newline.log").write_bytes(b"".join(lines).rstrip(b"\n"))

md5 = list(lines)
i = next(k for k, line in enumerate(md5) if b"TREE_GUARD_MANAGER" in line and line.startswith(b"\t"))
md5[i] = md5[i].replace(b"TREE_GUARD_MANAGER", b"TREE_GUARD_MANAGEr", 1)
(D / "md5_mismatch.log").write_bytes(b"".join(md5))

bad = list(lines)
start = next(k for k, line in enumerate(bad) if line.startswith(b"V") and b'{"chromium_event"' in line)
end = next(k for k in range(start + 1, len(bad)) if not bad[k].startswith(b"\t"))
payload = bad[start + 1 : end - 1]  # without the closing "\t}" line
digest = hashlib.md5(b"\n".join(p[1:].rstrip(b"\n") for p in payload)).hexdigest().encode()
old = bad[start][bad[start].rindex(b'"has_payload": "') + 16 :][:32]
bad[start] = bad[start].replace(old, digest)
del bad[end - 1]
(D / "bad_chromium.log").write_bytes(b"".join(bad))
