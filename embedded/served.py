"""A model the embedded server serves (its engine, tokenizer and reasoning markers) and the refusal of a request
it cannot serve (HTTP 400 naming the field).

Both sit below the server (``app``) and its request parsing (``validation``), which each use them.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from .engine import Engine
from .process import EngineProcess, EngineReplicas


class BadRequest(Exception):
    """A request refused with HTTP 400: ``param`` names the field, ``message`` says what is wrong with it."""

    def __init__(self, param: str, message: str):
        super().__init__(message)
        self.param = param
        self.message = message


def _byte_level_characters() -> dict[str, int]:
    """The byte-level BPE alphabet, character -> byte: bytes that print (``!``..``~``, ``¡``..``¬``, ``®``..``ÿ``)
    are their own character; every other byte, in increasing order, is ``chr(256 + n)``."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    others = [b for b in range(256) if b not in printable]
    return {chr(b): b for b in printable} | {chr(256 + n): b for n, b in enumerate(others)}


_BYTE_OF_CHARACTER = _byte_level_characters()


@dataclass
class ServedModel:
    name: str
    engine: Engine | EngineProcess | EngineReplicas
    tokenizer: object
    reasoning: bool  # has reasoning markers: budgets allowed, reasoning split out

    @functools.cached_property
    def max_token_bytes(self) -> int:
        """The most UTF-8 bytes of text one token can stand for (an undecodable byte counts as U+FFFD's 3)."""
        decode = self.tokenizer.decode
        return max(len(decode([token]).encode()) for token in range(len(self.tokenizer)))

    @functools.cached_property
    def token_bytes(self) -> list[bytes]:
        """The bytes each token id stands for, by id: the byte-level BPE vocabulary writes byte ``b`` as one
        character (``_BYTE_OF_CHARACTER``); special tokens are their own UTF-8 text."""
        pieces = self.tokenizer.convert_ids_to_tokens(list(range(len(self.tokenizer))))
        return [
            bytes(_BYTE_OF_CHARACTER[c] for c in piece)
            if all(c in _BYTE_OF_CHARACTER for c in piece)
            else piece.encode()
            for piece in pieces
        ]

    def check_text_length(self, field: str, text_bytes: int) -> None:
        """Refuse, before tokenizing, text of ``text_bytes`` bytes that cannot fit the context in any tokens."""
        positions = self.engine.context_length - self.engine.k
        at_least = -(-text_bytes // self.max_token_bytes)
        if at_least > positions:
            raise BadRequest(
                field,
                f"{field} holds {text_bytes} bytes of text, at least {at_least} tokens (no token spans more than "
                f"{self.max_token_bytes} bytes); this model's context holds {positions}",
            )
