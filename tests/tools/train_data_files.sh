#!/usr/bin/env bash
# `strider train` on the formats users have: a GPT on token files (nanoGPT's uint16, raw uint32,
# with and without --val-tokens and --vocab-size) and CNNs on a small image folder written here
# (PNG and JPEG, RGB and gray, sizes that differ), each for a few steps, then resumed; a resumed
# run continues from the checkpoint's data position and ends as the uninterrupted run does.
# `strider bench loader` runs on both.
# Usage: train_data_files.sh STRIDER_BINARY MAKE_IMAGE_FOLDER WORK_DIR
set -uo pipefail
strider=${1:?usage: train_data_files.sh STRIDER MAKE_IMAGE_FOLDER WORK_DIR}
make_folder=${2:?usage} work=${3:?usage}
rm -rf "$work"; mkdir -p "$work"
tried=0 failed=0
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }

# The GPL's bytes as nanoGPT's uint16 tokens (each byte then a zero byte; newlines as spaces).
text=/usr/share/common-licenses/GPL-3
LC_ALL=C tr '\n' ' ' < "$text" | LC_ALL=C sed 's/./&\x00/g' > "$work/train.bin"
LC_ALL=C tr '\n' ' ' < "$text" | head -c 4000 | LC_ALL=C sed 's/./&\x00\x00\x00/g' > "$work/val32.bin"
LC_ALL=C tr '\n' ' ' < "$text" | LC_ALL=C sed 's/./&\x00\x00\x00/g' > "$work/train32.bin"
"$make_folder" "$work/images" 3 16 || { echo "FAIL: make_image_folder"; exit 1; }
"$make_folder" "$work/val_images" 3 4 || { echo "FAIL: make_image_folder"; exit 1; }

# expect_run "what" "fragment of the output" ARGS...: the run succeeds and prints the fragment.
expect_run() {
  local what=$1 fragment=$2; shift 2
  tried=$((tried + 1))
  local out
  if ! out=$(timeout 300 "$strider" train "$@" 2>&1 < /dev/null); then fail "$what: $(tail -n 3 <<< "$out")"
  elif ! grep -qF -- "$fragment" <<< "$out"; then fail "$what: expected '$fragment' in: $(head -n 2 <<< "$out")"
  fi
  last_out=$out
}
digests() { grep -o '"optimizer_sha256":"[0-9a-f]*"\|"params_sha256":"[0-9a-f]*"' <<< "$1" | tr '\n' ' '; }

gpt=(--model gpt --n-layer 1 --n-embd 16 --n-head 2 --seq 16 --batch-size 8 --limit-batches 6 --epochs 2
     --threads 1 --no-progress --json)
expect_run "tokens, held-out tail" "its last 10%, 3514 tokens, held out for validation" "${gpt[@]}" \
           --tokens "$work/train.bin" --out "$work/t1"
expect_run "tokens, vocabulary from the file" "vocabulary 123" "${gpt[@]}" --tokens "$work/train.bin" --out "$work/t1b"
expect_run "tokens with --val-tokens, uint32" "validation '$work/val32.bin', 4000 tokens" "${gpt[@]}" \
           --tokens "$work/train32.bin" --val-tokens "$work/val32.bin" --token-dtype uint32 --out "$work/t2"
expect_run "tokens with --vocab-size" "vocab_size=256" "${gpt[@]}" --tokens "$work/train.bin" --vocab-size 256 \
           --out "$work/t3"
# Resume: 6 + 6 steps uninterrupted versus a stop after 9 steps (mid-epoch) and a resume.
expect_run "tokens, uninterrupted" "params_sha256" "${gpt[@]}" --tokens "$work/train.bin" --out "$work/whole"
want=$(digests "$last_out")
expect_run "tokens, first leg" "params_sha256" "${gpt[@]}" --tokens "$work/train.bin" --max-steps 9 --out "$work/legs"
expect_run "tokens, resumed" "params_sha256" "${gpt[@]}" --tokens "$work/train.bin" --resume "$work/legs" --out "$work/legs"
[ -n "$want" ] && [ "$(digests "$last_out")" = "$want" ] || fail "tokens: the resumed run differs: $want vs $(digests "$last_out")"
tried=$((tried + 1))
for workers in 0 3; do  # the batches do not depend on the loader's thread count
  expect_run "tokens, $workers loader threads" "params_sha256" "${gpt[@]}" --tokens "$work/train.bin" --data-workers $workers \
             --out "$work/w$workers"
  [ "$(digests "$last_out")" = "$want" ] || fail "tokens: --data-workers $workers changed the run"
  tried=$((tried + 1))
done

cnn=(--batch-size 8 --limit-batches 4 --epochs 2 --threads 1 --no-progress --json --lr 0.05)
expect_run "image folder, held-out share" "a seeded 10%, 4 images, held out for validation" --model resnet18 \
           --image-folder "$work/images" --image-size 16 "${cnn[@]}" --out "$work/i1"
expect_run "image folder, 3 classes, RGB" "3 classes, 44 training images, 3x28x28" --model small_cnn \
           --image-folder "$work/images" "${cnn[@]}" --out "$work/i1b"
expect_run "image folder with a validation folder" "validation '$work/val_images', 12 images" --model resnet18 \
           --image-folder "$work/images" --val-image-folder "$work/val_images" --image-size 16 "${cnn[@]}" \
           --dtype bfloat16 --out "$work/i2"
grep -q '"test_accuracy"' <<< "$last_out" || fail "image folder: no held-out accuracy in the summary"
tried=$((tried + 1))
expect_run "image folder, default size (the first image's)" "3x16x16" --model fmnist_resnet --image-folder "$work/images" \
           "${cnn[@]}" --memory-format contiguous --out "$work/i3"
expect_run "image folder, uninterrupted" "params_sha256" --model small_cnn --image-folder "$work/images" "${cnn[@]}" --out "$work/iw"
want=$(digests "$last_out")
expect_run "image folder, first leg" "params_sha256" --model small_cnn --image-folder "$work/images" "${cnn[@]}" --max-steps 5 \
           --out "$work/il"
expect_run "image folder, resumed" "params_sha256" --model small_cnn --image-folder "$work/images" "${cnn[@]}" \
           --resume "$work/il" --out "$work/il"
[ -n "$want" ] && [ "$(digests "$last_out")" = "$want" ] || fail "image folder: the resumed run differs"
tried=$((tried + 1))
# The epoch the second leg resumed in the middle of: its train_loss averages all of its batches,
# those of the first leg too (the checkpoint carries them), as the uninterrupted run's does.
loss_of() { sed -n 's/.*"train_loss":\([^,}]*\).*/\1/p' "$1/metrics.jsonl" | tail -n 1; }
[ -n "$(loss_of "$work/iw")" ] && [ "$(loss_of "$work/il")" = "$(loss_of "$work/iw")" ] ||
  fail "image folder: the resumed epoch's train_loss $(loss_of "$work/il") is not the whole epoch's $(loss_of "$work/iw")"
tried=$((tried + 1))

# `strider bench loader` on both (docs/benchmarks.md has the full-size figures).
for what in "--image-folder $work/images --model small_cnn --batch 4" \
            "--tokens $work/train.bin --n-layer 1 --n-head 2 --n-embd 16 --seq 16 --batch 4"; do
  tried=$((tried + 1))
  # shellcheck disable=SC2086
  out=$(timeout 120 "$strider" bench loader $what --steps 2 --threads 1 --json 2>&1)
  grep -q '"wait_share"' <<< "$out" || fail "bench loader $what: $out"
done

echo "data files: $((tried - failed)) passed, $failed failed"
[ $failed -eq 0 ]
