"""Convert a generated tiny model directory to GGUF with llama.cpp's own converter.

Usage: python scripts/convert-to-gguf.py <llama.cpp source tree> <model dir> <out.gguf>

The converter recognises a BPE pre-tokenizer by hashing the encodings of a probe text; the tiny
model's tokenizer is trained here, so no hash can match. Its pre-tokenizer is GPT-2's byte-level
split, so the converter is told so; everything else is the converter's own code.
"""

import os
import runpy
import sys


def main() -> None:
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    source_tree, model_dir, out = sys.argv[1:]
    sys.path[:0] = [source_tree, os.path.join(source_tree, "gguf-py")]
    import conversion.base

    conversion.base.TextModel.get_vocab_base_pre = lambda self, tokenizer: "gpt-2"
    script = os.path.join(source_tree, "convert_hf_to_gguf.py")
    sys.argv = [script, model_dir, "--outfile", out, "--outtype", "f32"]
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
