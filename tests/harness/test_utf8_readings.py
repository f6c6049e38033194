"""Reading where a response's tokens end inside a UTF-8 character from its logprobs
(specconform.harness.checks.api.utf8): one entry per token, or entries merged per character (llama-server's form),
judged against flags written out by hand from the bytes each case spells."""

import pytest

from specconform.harness.checks.api import utf8

A, B, LEAD, CONT, E2, X82 = 10, 11, 20, 21, 30, 31  # "a", "b", b"\xc3", b"\xa9", b"\xe2", b"\x82"


def entry(token: int, data: bytes, with_id: bool = True) -> dict:
    found = {"token": "", "logprob": -1.0, "bytes": list(data)}
    return {**found, "id": token} if with_id else found


def choice(*entries) -> dict:
    return {"logprobs": {"content": list(entries)}}


def test_one_entry_per_token_gives_one_reading():
    ids = [A, LEAD, CONT, B]
    read = utf8.readings(
        choice(entry(A, b"a", False), entry(LEAD, b"\xc3", False), entry(CONT, b"\xa9", False), entry(B, b"b", False)),
        ids,
    )
    assert read == [(False, False, True, False)]  # only after the lone lead byte do the bytes end inside "é"


def test_merged_entries_place_the_character_on_the_id_that_completes_it():
    # "a", then "é" over two tokens (one entry, the id of its last token), then "b"
    ids = [A, LEAD, CONT, B]
    assert utf8.readings(choice(entry(A, b"a"), entry(CONT, b"\xc3\xa9"), entry(B, b"b")), ids) == [
        (False, False, True, False)
    ]


def test_tokens_after_the_last_complete_character_end_inside_one():
    # "a", then the first two bytes of "€" (E2 82 AC): no entry for either
    ids = [A, E2, X82]
    assert utf8.readings(choice(entry(A, b"a")), ids) == [(False, False, True)]


def test_a_repeated_id_gives_every_placement():
    # the entry with id LEAD may close a group at position 1 or 2
    ids = [A, LEAD, LEAD, B]
    read = utf8.readings(choice(entry(LEAD, b"a\xc3\x83"), entry(B, b"b")), ids)
    assert sorted(read) == sorted([(False, True, False, True), (False, True, True, False)])


@pytest.mark.parametrize(
    "entries, ids, why",
    [
        ([entry(A, b"a"), entry(LEAD, b"\xc3")], [A, LEAD, CONT], "a merged entry that ends inside a character"),
        ([entry(CONT, b"\xc3\xa9", with_id=False)], [LEAD, CONT], "a merged entry without its id"),
        ([entry(B, b"b")], [A, LEAD], "an entry whose id is not among the ids"),
        ([entry(A, b"a"), entry(A, b"a"), entry(A, b"a")], [A, A], "more entries than ids"),
        ([{"id": A, "logprob": -1.0}], [A], "an entry without bytes"),
    ],
)
def test_logprobs_in_neither_form_give_no_reading(entries, ids, why):
    assert utf8.readings(choice(*entries), ids) is None, why


def test_no_logprobs_give_no_reading():
    assert utf8.readings({}, [A]) is None
