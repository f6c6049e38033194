"""The tiny model's head_dim-64 variant (vLLM's CPU attention rejects head_dim 16): the same
tokenizer and markers, only the attention heads wider."""

import json

import pytest

from specconform.embedded import model


def test_head_dim_64_keeps_the_tokenizer_and_widens_the_heads(tmp_path):
    wide = model.build("multi", directory=tmp_path / "wide", head_dim=64)
    narrow = model.build("multi", directory=tmp_path / "narrow")
    assert json.loads((wide.path / "config.json").read_text())["head_dim"] == 64
    assert json.loads((narrow.path / "config.json").read_text())["head_dim"] == 16
    assert (wide.start_token_ids, wide.end_token_ids, wide.eos_token_id) == (
        narrow.start_token_ids,
        narrow.end_token_ids,
        narrow.eos_token_id,
    )
    assert (wide.path / "tokenizer.json").read_text() == (narrow.path / "tokenizer.json").read_text()


def test_an_unsupported_head_dim_is_refused_naming_the_value(tmp_path):
    with pytest.raises(ValueError, match="head_dim must be one of \\(16, 64\\); got 32"):
        model.build("single", directory=tmp_path, head_dim=32)
