"""A request's output split into reasoning and content as it grows (``ReasoningSplit``), or all at once
(``split_reasoning``): what the embedded engine's API returns as ``message.reasoning`` and ``message.content``."""

from __future__ import annotations

from specconform import impl


class ReasoningSplit:
    """A request's output split into reasoning and content token ids as it grows, each output token read once.

    Markers are removed, and a trailing partial marker is held back until the tokens after it (or the end) settle
    it. A marker may begin in the prompt and end in the output: only its output tokens are dropped. ``reasoning``
    and ``content`` only ever grow, so a stream can send what they gained since its last chunk.
    """

    def __init__(self, prompt_ids, start, end):
        self._matchers = {False: impl.MarkerMatcher(start), True: impl.MarkerMatcher(end)}  # keyed by "inside"
        self._inside, self._matched = False, 0
        for token in prompt_ids:
            self._matched = self._matchers[self._inside].step(self._matched, token)
            if self._matched == len(self._matchers[self._inside]):
                self._inside, self._matched = not self._inside, 0
        self.reasoning: list[int] = []
        self.content: list[int] = []
        self._pending: list[int] = []  # output tokens that may belong to a marker
        self._read = 0  # output tokens read so far
        self._ended = False

    def update(self, output_ids, final: bool) -> int:
        """Read the tokens of ``output_ids`` (the whole output so far) not read yet; with ``final``, settle the held
        ones too. Returns how many output tokens are classified (the rest are held back)."""
        if self._ended:
            raise ValueError("the output was already final; nothing can follow it")
        for token in output_ids[self._read :]:
            self._pending.append(token)
            matcher = self._matchers[self._inside]
            self._matched = matcher.step(self._matched, token)
            if self._matched == len(matcher):  # every pending token lies inside the completed marker
                self._pending, self._inside, self._matched = [], not self._inside, 0
                continue
            keep = min(self._matched, len(self._pending))
            (self.reasoning if self._inside else self.content).extend(self._pending[: len(self._pending) - keep])
            self._pending = self._pending[len(self._pending) - keep :]
        self._read = len(output_ids)
        if final:
            (self.reasoning if self._inside else self.content).extend(self._pending)
            self._pending, self._ended = [], True
        return self._read - len(self._pending)


def split_reasoning(prompt_ids, output_ids, start, end, final: bool) -> tuple[list[int], list[int], int]:
    """``(reasoning ids, content ids, settled)`` of a whole ``output_ids`` at once (``ReasoningSplit``)."""
    split = ReasoningSplit(prompt_ids, start, end)
    settled = split.update(output_ids, final)
    return split.reasoning, split.content, settled
