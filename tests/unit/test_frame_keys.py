"""The one frame-key scheme (``model.frame_keys``) the live capture and both importers share."""

from __future__ import annotations

from dynaprof.model import frame_keys as fk


def test_a_compile_id_is_its_key_until_a_reset_hands_it_out_again() -> None:
    used: set[str] = set()
    keys = []
    for cid, gen in [("0/0", 0), ("1/0", 0), ("0/0", 1), ("0/0", 1), ("0/0", 2)]:
        keys.append(fk.frame_key(cid, gen, used))
        used.add(keys[-1])
    assert keys == ["0/0", "1/0", "0/0#1", "0/0#1~2", "0/0#2"]


def test_backward_keys_count_up_per_forward() -> None:
    used = {"0/0", "0/0:bw"}
    assert fk.backward_key("1/0", used) == "1/0:bw"
    assert fk.backward_key("0/0", used) == "0/0:bw2"
    assert fk.backward_key("0/0", used | {"0/0:bw2"}) == "0/0:bw3"
    assert fk.is_backward_key("0/0#1:bw2") and not fk.is_backward_key("0/0#1")


def test_compiled_autograd_ids_and_the_compile_id_of_a_key() -> None:
    assert fk.kind_of_id("!0") == "compiled_autograd" and fk.kind_of_id("!0/1/0") == "compiled_autograd"
    assert fk.kind_of_id("0/0") == "forward" and fk.kind_of_id("-/-") == "forward"
    assert [fk.compile_id_of(k) for k in ("0/0#1~2", "3/1:bw2", "!0/0/0", "-/-@2")] == ["0/0", "3/1", "!0/0/0", "-/-@2"]
    assert fk.OWN_COMPILE_SPANS == {fk.BACKWARD_SPAN: "backward", fk.COMPILED_AUTOGRAD_SPAN: "compiled_autograd"}
