"""Where a response's tokens end inside a UTF-8 character (API-UTF-1), read from its ``logprobs``.

A profile that declares ``utf8_boundary: complete-character`` may leave forced positions free while the bytes
generated so far end inside a character. Which positions those are is read from the bytes the engine returns
in ``logprobs``, in either of two forms:

- one entry per returned token, each with that token's ``bytes`` (the OpenAI form; vLLM);
- entries merged per character (llama-server): a token after which the generated text ends inside a character
  gets no entry of its own; the entry of the token that completes the character carries the bytes of all of
  them and that last token's ``id``; tokens after the last complete character have none. Each entry's bytes so
  end on a character boundary.

Either form is read into *readings*: for each output position ``i``, whether the bytes of the output tokens
before it end inside a character. One-per-token entries give one reading. Merged entries give one per way of
placing each entry on a returned id equal to its ``id`` (in order); a position inside a group, or after the
last group, ends inside a character. Usually there is one such way; where an id repeats there can be several,
and a forced position is then judged free if any reading frees it (a failure must hold on every reading of
what the engine returned).
"""

from __future__ import annotations

UTF8_MAX_OVERRUN = 3  # a UTF-8 character has at most 4 bytes: at most 3 more tokens complete it
MAX_READINGS = 64  # merged entries that align with the ids in more ways than this are not read


def ends_inside_character(data: bytes) -> bool:
    """Whether ``data`` ends inside a UTF-8 character: a lead byte (C2-DF, E0-EF, F0-F4) in its last 3 bytes,
    followed only by continuation bytes, and fewer of them than its character needs. Stray continuation bytes
    and bytes that lead no character (C0, C1, F5-FF) are no character: a decoder replaces them and goes on."""
    for back in range(1, min(UTF8_MAX_OVERRUN, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 == 0x80:
            continue
        need = 4 if 0xF0 <= byte <= 0xF4 else 3 if 0xE0 <= byte <= 0xEF else 2 if 0xC2 <= byte <= 0xDF else 1
        return back < need
    return False


def readings(choice: dict, ids: list[int]) -> list[tuple[bool, ...]] | None:
    """The readings of one choice (module docstring): tuples of ``len(ids)`` flags, ``True`` at output position
    ``i`` when the bytes of ``ids[:i]`` end inside a character. None when the choice's ``logprobs`` are neither
    form: missing, an entry without ``bytes``, more entries than ids, merged entries without ``id``, a merged
    entry whose bytes end inside a character, no way (or more than ``MAX_READINGS`` ways) to place the entries."""
    entries = (choice.get("logprobs") or {}).get("content")
    if entries is None or any(entry.get("bytes") is None for entry in entries) or len(entries) > len(ids):
        return None
    if len(entries) == len(ids) and all(entry.get("id", token) == token for entry, token in zip(entries, ids)):
        flags, generated = [], b""
        for entry in entries:
            flags.append(ends_inside_character(generated))
            generated += bytes(entry["bytes"])
        return [tuple(flags)]
    if any("id" not in entry for entry in entries):
        return None
    generated = b""
    for entry in entries:
        generated += bytes(entry["bytes"])
        if ends_inside_character(generated):
            return None  # not merged per character
    placements = _placements([entry["id"] for entry in entries], ids)
    if not placements:
        return None
    return [tuple(i > 0 and i - 1 not in ends for i in range(len(ids))) for ends in placements]


def _placements(entry_ids: list[int], ids: list[int]) -> list[frozenset[int]] | None:
    """Every increasing choice of output positions, one per entry, where ``ids`` holds the entry's id: the last
    position of each entry's group. An empty list when there is none; None past ``MAX_READINGS``."""
    found: list[frozenset[int]] = []

    def place(entry: int, start: int, ends: tuple[int, ...]) -> bool:
        if entry == len(entry_ids):
            found.append(frozenset(ends))
            return len(found) <= MAX_READINGS
        remaining = len(entry_ids) - entry - 1
        for position in range(start, len(ids) - remaining):
            if ids[position] == entry_ids[entry] and not place(entry + 1, position + 1, (*ends, position)):
                return False
        return True

    return found if place(0, 0, ()) else None
