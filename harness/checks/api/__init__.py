"""API-level checks (specs/openai-api.md) over an engine's OpenAI-compatible server, one module per section of the
spec: ``budget`` (§1), ``responses`` (§2), ``errors`` (§3), ``spec_decode`` (§4), ``features`` (§5) and
``seeded`` (§6). Beside them, ``replay`` replays the oracle over the ids a response returned, ``utf8`` reads from
a response's logprobs where its tokens end inside a UTF-8 character, ``twins`` tries a failing seeded request
again alone (and attributes an irreproducible seed to API-SEED-1), ``needs`` says what each check needs of the
server, and ``reproduction`` leaves the requests a failed check sent as its reproduction.

The oracle is replayed over prompt + output ids as the engine returned them, so "the budget holds"
is judged exactly: every position the oracle forces must carry the forced token. Each response is a
case for the requirements it exercises; checks go on after a failing response, since requests are
independent.
"""

from __future__ import annotations

from .reproduction import client_parses, leaves_reproductions

# importing a module declares its checks, in this order (the order they were declared in before the split)
from . import budget, responses, seeded, errors, spec_decode, features  # noqa: F401  # isort: skip

__all__ = ["client_parses", "leaves_reproductions"]
