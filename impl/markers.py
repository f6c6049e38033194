"""Incremental matching of a reasoning marker (a sequence of token ids) in a token stream (KMP)."""

from __future__ import annotations

from collections.abc import Sequence


class MarkerMatcher:
    """Matches one marker token by token: ``step(matched, token)`` returns the new partial-match length.

    ``matched`` is how many leading marker tokens the stream currently ends with, in ``[0, len(marker)]``;
    a full match (``len(marker)``) continues from its longest proper border, so overlapping occurrences
    are found. ``failure[i]`` is the length of the longest proper border of ``marker[: i + 1]``.
    """

    def __init__(self, marker: Sequence[int]):
        self.marker = tuple(marker)
        if not self.marker:
            raise ValueError("a marker must hold at least one token id; got an empty sequence")
        failure = [0] * len(self.marker)
        border = 0
        for i in range(1, len(self.marker)):
            while border and self.marker[i] != self.marker[border]:
                border = failure[border - 1]
            if self.marker[i] == self.marker[border]:
                border += 1
            failure[i] = border
        self.failure = tuple(failure)

    def __len__(self) -> int:
        return len(self.marker)

    def step(self, matched: int, token: int) -> int:
        if matched == len(self.marker):
            matched = self.failure[matched - 1]
        while matched and self.marker[matched] != token:
            matched = self.failure[matched - 1]
        return matched + 1 if self.marker[matched] == token else matched
