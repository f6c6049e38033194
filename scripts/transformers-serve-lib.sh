# Shared by judge-transformers-serve.sh and proofs/transformers-*/serve.sh (sourced, not run): the embedded engine's
# tiny model as a Hugging Face cache entry. `transformers serve` lists in /v1/models only what that cache holds (a
# model served from a folder is never listed, and the judge's preflight refuses a model its server does not list), and
# loads a cached model by its name offline.
MODEL_NAME=specconform/tiny-think-single

cache_model() {  # cache_model: link the model into a private HF cache (HF_HUB_CACHE, exported) as $MODEL_NAME
  local model_dir repo revision=0000000000000000000000000000000000000000 file
  model_dir=$(python -c "from specconform.embedded import model; print(model.build('single').path)")
  export HF_HUB_CACHE=${SPECCONFORM_CACHE:-$HOME/.cache/specconform}/hf-hub HF_HUB_OFFLINE=1
  repo=$HF_HUB_CACHE/models--${MODEL_NAME//\//--}
  rm -rf "$repo" && mkdir -p "$repo/refs" "$repo/blobs" "$repo/snapshots/$revision"
  printf '%s' "$revision" > "$repo/refs/main"
  for file in "$model_dir"/*; do ln -s "$file" "$repo/snapshots/$revision/$(basename "$file")"; done
}
