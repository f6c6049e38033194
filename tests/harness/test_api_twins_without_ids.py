"""A server that returns no token ids (``transformers serve``) is still compared by ``twins``: its repeats are
told apart by their messages, so a sampled request's parity check can try it alone without crashing."""

from specconform.harness.checks.api import twins


def _response(message, token_ids=None) -> dict:
    choice = {"message": message}
    if token_ids is not None:
        choice["token_ids"] = token_ids
    return {"choices": [choice]}


def test_token_ids_are_compared_where_the_server_returns_them():
    assert twins.ids([_response({"content": "a"}, [1, 2])]) == [[1, 2]]
    assert twins.differ([_response({"content": "a"}, [1, 2]), _response({"content": "a"}, [1, 3])])


def test_messages_are_compared_where_the_server_returns_no_ids():
    first = _response({"content": "a", "reasoning_content": "r"})
    same = [first, _response({"reasoning_content": "r", "content": "a"})]
    assert not twins.differ(same)  # the same message, its keys in another order
    assert twins.differ([_response({"content": "a"}), _response({"content": "b"})])
    assert twins.differ([_response({"content": "a", "reasoning_content": "r"}), _response({"content": "a"})])
