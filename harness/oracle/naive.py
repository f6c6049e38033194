"""An independent, naive reading of TB-MARK/TB-COUNT: segment a stream into sections by slicing.

No automaton: at each position it compares the last ``len(marker)`` tokens with the marker,
looking only at tokens after the previous boundary. Used to check the oracle and implementations.
"""


def sections(stream, start, end, prompt_len=0):
    """Return ``[(open_index, close_index or None)]`` for every section of ``stream``.

    ``open_index`` is the index of the first token after ``S``; ``close_index`` the index just
    past ``E``. Boundaries restart matching (TB-MARK-1).
    """
    out = []
    boundary = 0
    open_at = None
    for i in range(len(stream)):
        if open_at is None:
            lo = i + 1 - len(start)
            if lo >= boundary and stream[lo : i + 1] == list(start):
                open_at = i + 1
                boundary = i + 1
        else:
            lo = i + 1 - len(end)
            if lo >= boundary and stream[lo : i + 1] == list(end):
                out.append((open_at, i + 1))
                open_at = None
                boundary = i + 1
    if open_at is not None:
        out.append((open_at, None))
    return out


def thinking_tokens(stream, start, end, prompt_len):
    """Thinking tokens per section that counts against the budget (TB-PROMPT-1).

    Sections entirely inside the prompt are dropped. Returns ``[(thinking, generated, closed)]``
    where ``generated`` is the part of the thinking produced after the prompt.
    """
    out = []
    for open_at, close_at in sections(stream, start, end):
        if close_at is not None and close_at <= prompt_len:
            continue
        if close_at is not None:
            stop = close_at - len(end)
        else:  # an open section: a trailing partial E is not thinking
            body = stream[open_at:]
            partial = max(m for m in range(len(end)) if m <= len(body) and body[len(body) - m :] == list(end[:m]))
            stop = len(stream) - partial
        thinking = stop - open_at
        generated = stop - max(open_at, prompt_len)
        out.append((thinking, max(generated, 0), close_at is not None))
    return out
