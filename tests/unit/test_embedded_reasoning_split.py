"""The embedded engine's reasoning/content split against the judge's naive segmentation."""

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from specconform.embedded.reasoning import ReasoningSplit, split_reasoning
from specconform.harness.oracle.naive import sections

TOKENS = st.integers(0, 3)
MARKERS = st.lists(TOKENS, min_size=1, max_size=3)


def naive_split(prompt, output, start, end):
    """Output tokens inside a section (reasoning) and outside every section and marker (content)."""
    stream = prompt + output
    inside, marker = set(), set()
    for open_at, close_at in sections(stream, start, end):
        marker.update(range(open_at - len(start), open_at))
        stop = len(stream) if close_at is None else close_at - len(end)
        inside.update(range(open_at, stop))
        if close_at is not None:
            marker.update(range(stop, close_at))
    generated = range(len(prompt), len(stream))
    return [stream[i] for i in generated if i in inside], [
        stream[i] for i in generated if i not in inside and i not in marker
    ]


@given(prompt=st.lists(TOKENS, max_size=8), output=st.lists(TOKENS, max_size=30), start=MARKERS, end=MARKERS)
@example(prompt=[0, 1, 2], output=[2, 3], start=[0, 1], end=[2, 2, 3])  # the end marker began in the prompt
@example(prompt=[0], output=[1, 2, 2, 3], start=[0, 1], end=[2, 2, 3])  # the start marker began in the prompt
@settings(max_examples=400, deadline=None)
def test_split_matches_the_naive_segmentation_and_streams_a_prefix_of_it(prompt, output, start, end):
    reasoning, content, settled = split_reasoning(prompt, output, start, end, final=True)
    assert (reasoning, content) == naive_split(prompt, output, start, end)
    assert settled == len(output)
    for cut in range(len(output) + 1):  # while streaming, what is settled never changes later
        partial_reasoning, partial_content, partial_settled = split_reasoning(
            prompt, output[:cut], start, end, final=False
        )
        assert reasoning[: len(partial_reasoning)] == partial_reasoning
        assert content[: len(partial_content)] == partial_content
        assert len(partial_reasoning) + len(partial_content) <= partial_settled <= cut


@given(
    prompt=st.lists(TOKENS, max_size=8),
    output=st.lists(TOKENS, max_size=30),
    start=MARKERS,
    end=MARKERS,
    cuts=st.lists(st.integers(0, 30), max_size=6),
)
@settings(max_examples=300, deadline=None)
def test_a_split_fed_as_the_output_grows_equals_the_split_of_each_whole_prefix(prompt, output, start, end, cuts):
    """A stream reads each output token once (``ReasoningSplit.update``); at every chunk it holds what a split of the
    whole output so far gives, and at the end the naive segmentation."""
    split = ReasoningSplit(prompt, start, end)
    for cut in sorted(min(cut, len(output)) for cut in cuts):
        settled = split.update(output[:cut], final=False)
        assert (split.reasoning, split.content, settled) == split_reasoning(prompt, output[:cut], start, end, False)
    settled = split.update(output, final=True)
    assert (split.reasoning, split.content) == naive_split(prompt, output, start, end)
    assert settled == len(output)
    with pytest.raises(ValueError, match="already final"):
        split.update(output, final=True)
