#!/usr/bin/env bash
# Every trainer flag with values it must refuse, and crafted checkpoints for --resume: each
# run must exit non-zero (not by a signal) within seconds, printing one clear line that names
# the flag or file. Token files and image folders are checked too when MAKE_IMAGE_FOLDER (the
# test's image writer) is given.
# Usage: bad_inputs.sh STRIDER_BINARY WORK_DIR [MAKE_IMAGE_FOLDER]
set -uo pipefail
strider=${1:?usage: bad_inputs.sh STRIDER_BINARY WORK_DIR [MAKE_IMAGE_FOLDER]}
work=${2:?usage: bad_inputs.sh STRIDER_BINARY WORK_DIR [MAKE_IMAGE_FOLDER]}
make_folder=${3:-}
rm -rf "$work"; mkdir -p "$work"
gpt=(--model gpt --text-file /usr/share/common-licenses/GPL-3 --n-layer 1 --n-embd 16 --n-head 2 --seq 16
     --batch-size 8 --limit-batches 2 --epochs 1 --threads 1 --json)
tried=0 failed=0

# The command line "$@" with a flag given again later dropped, in ARGS: the arrays below hold a
# base run whose flags a test overrides, and strider refuses a flag given twice. Before a "--"
# (launch's training command) only; "--x V" is a flag with its value unless V starts with "--".
last_wins() {
  local -a in=("$@")
  local n=${#in[@]} sep=${#in[@]} i j value later
  ARGS=()
  for ((i = 0; i < n; i++)); do [ "${in[i]}" = "--" ] && { sep=$i; break; }; done
  for ((i = 0; i < n; i++)); do
    if ((i < sep)) && [[ ${in[i]} == --* ]]; then
      value=0; ((i + 1 < sep)) && [[ ${in[i + 1]} != --* ]] && value=1
      later=0
      for ((j = i + 1 + value; j < sep; j++)); do [ "${in[j]}" = "${in[i]}" ] && { later=1; break; }; done
      if ((later)); then i=$((i + value)); continue; fi
    fi
    ARGS+=("${in[i]}")
  done
}

# expect "what" "message fragment" args... (a test named "... twice" keeps its repeated flags)
expect() {
  local what=$1 fragment=$2; shift 2
  tried=$((tried + 1))
  local out rc
  if [[ $what == *twice* ]]; then ARGS=("$@"); else last_wins "$@"; fi
  out=$(timeout 60 "$strider" "${ARGS[@]}" 2>&1 < /dev/null); rc=$?
  if [ $rc -eq 0 ] || [ $rc -ge 124 ] || ! grep -qF -- "$fragment" <<< "$out"; then
    failed=$((failed + 1))
    echo "FAIL: $what: exit $rc, expected '$fragment' in: $(tail -n 3 <<< "$out")"
  fi
}

# ---- flags out of range or inconsistent (the parser names the flag)
for f in "--threads 0" "--threads -3" "--threads 100000" "--epochs 0" "--epochs -1" "--batch-size 0" \
         "--batch-size -5" "--limit-batches 0" "--limit-batches -1" "--lr 0" "--lr -1" "--lr nan" "--lr inf" \
         "--weight-decay -1" "--label-smoothing 1" "--label-smoothing -0.1" "--fsdp-min-params 0" \
         "--collective-timeout 0" "--collective-timeout -5" "--checkpoint-every 0" "--checkpoint-every -1" \
         "--max-steps 0" "--max-steps -2" "--keep-checkpoints -1" "--memory-snapshot-every 0" \
         "--memory-snapshot-every -3"; do
  # shellcheck disable=SC2086
  expect "train $f" "${f%% *}" train $f --out "$work/x"
done
expect "--memory-snapshot-overlap alone" "--memory-snapshot-overlap only applies with --memory-snapshot-every N" \
  train "${gpt[@]}" --memory-snapshot-overlap --out "$work/x"
expect "a --memory-snapshot-dir that does not exist" "--memory-snapshot-dir '$work/none' is not a directory" \
  train "${gpt[@]}" --memory-snapshot-every 1 --memory-snapshot-dir "$work/none" --out "$work/x"
for f in "--seq 0" "--n-head 0" "--n-layer -1" "--n-embd 0" "--seq -4"; do
  # shellcheck disable=SC2086
  expect "gpt $f" "${f%% *}" train "${gpt[@]}" $f --out "$work/x"
done
expect "n_embd not divisible by n_head" "must be a multiple of --n-head" train "${gpt[@]}" --n-embd 30 --n-head 4 --out "$work/x"
for f in "--model mlp" "--memory-format nhwc" "--dtype float16" "--optimizer adagrad" "--fsdp zero3"; do
  # shellcheck disable=SC2086
  expect "train $f" "${f%% *}" train $f --out "$work/x"
done
# A process a launcher started as one of several, with no data parallelism: each would train alone.
for v in OMPI_COMM_WORLD_SIZE PMI_SIZE SLURM_STEP_NUM_TASKS; do
  export "$v=2"
  expect "$v=2 with --fsdp none" "one of 2 started by mpirun or srun, but --fsdp none" train "${gpt[@]}" --out "$work/x"
  unset "$v"
done
expect "gpt without a text file" "--text-file" train --model gpt --out "$work/x"
expect "text file for a CNN" "--text-file is for --model gpt" train --text-file /etc/hostname --out "$work/x"
expect "text file is a directory" "not a regular file" train "${gpt[@]}" --text-file /tmp --out "$work/x"
expect "text file missing" "missing" train "${gpt[@]}" --text-file "$work/none.txt" --out "$work/x"
head -c 60 /usr/share/common-licenses/GPL-3 > "$work/short.txt"
expect "text file too short" "bytes in all" train "${gpt[@]}" --text-file "$work/short.txt" --out "$work/x"
expect "--out cannot be created" "cannot create the --out directory" train "${gpt[@]}" --out /proc/strider-out
touch "$work/file"
expect "--out is a file" "cannot create the --out directory" train "${gpt[@]}" --out "$work/file"
expect "--activation-checkpointing on a model without blocks" "has no blocks to checkpoint" train --model small_cnn \
       --activation-checkpointing --out "$work/x"
expect "--export-model in a missing directory" "is not a writable directory" train "${gpt[@]}" --out "$work/x" \
       --export-model "$work/none/model.safetensors"
expect "--export-model is a directory" "is a directory; pass the safetensors file" train "${gpt[@]}" --out "$work/x" \
       --export-model "$work"
expect "--shard-group-size not dividing the world" \
       "--shard-group-size 3 does not divide the job's 1 ranks (mpirun -np, srun -n)" train "${gpt[@]}" \
       --fsdp hybrid_shard --shard-group-size 3 --out "$work/x"
expect "launch with --out a file" "the training command's --out $work/file cannot be the run directory" \
       launch -n 1 -- "$strider" train --out "$work/file"
printf 'PK\003\004\024\000\000\000\000\000archive/data.pkl' > "$work/model.pt"
expect "ckpt verify of a PyTorch .pt file" "model.pt is a zip archive, as torch.save writes (a PyTorch .pt or .pth file?)" \
       ckpt verify "$work/model.pt"
expect "--reset-optimizer without --resume" "--reset-optimizer only applies" train --reset-optimizer --out "$work/x"
expect "--fsdp-offload without --fsdp" "--fsdp-offload needs" train --fsdp-offload --out "$work/x"
expect "--optimizer-in-backward without --fsdp" "--optimizer-in-backward steps each unit" train \
       --optimizer-in-backward --out "$work/x"
expect "--optimizer-state-dtype float16" "--optimizer-state-dtype" train --optimizer-state-dtype float16 --out "$work/x"
expect "--optimizer-state-dtype bfloat16 with sgd" "--optimizer-state-dtype bfloat16 is for --optimizer adam or adamw" \
       train --optimizer-state-dtype bfloat16 --optimizer sgd --out "$work/x"
expect "data dir missing" "file not found" train --data-dir "$work/nodata" --out "$work/x"
expect "unknown flag" "--bogus" train --bogus
expect "bench batch 0" "--batch" bench model --batch 0
# ---- every subcommand's numeric flags: NaN and infinities where a number of seconds is meant (a
# NaN grace never ended a frozen job), a fraction where a count is (not "not in range")
for g in nan inf -inf; do
  expect "launch --end-grace $g" "--end-grace: '$g' is not a finite number in the range 0.1 to 86400" \
         launch -n 2 --end-grace $g -- strider train --out "$work/x"
done
expect "launch --end-grace 1e999" "--end-grace: Value 1e999 not in range 0.1 to 86400" launch -n 2 --end-grace 1e999 \
       -- strider train --out "$work/x"
expect "launch -n 1.5" "--ranks: '1.5' is not a whole number" launch -n 1.5 -- strider train --out "$work/x"
expect "launch --max-restarts 2.0" "--max-restarts: '2.0' is not a whole number" launch -n 1 --max-restarts 2.0 \
       -- strider train --out "$work/x"
expect "reshard --world-size 1.0" "--world-size: '1.0' is not a whole number" ckpt reshard "$work/none" "$work/r" \
       --world-size 1.0
expect "bench model --batch 2.5" "--batch: '2.5' is not a whole number" bench model --batch 2.5
expect "bench loader --workers 0.5" "--workers: '0.5' is not a whole number" bench loader --workers 0.5
expect "train --collective-timeout nan" "--collective-timeout: 'nan' is not a finite number" train \
       --collective-timeout nan --out "$work/x"
# A frozen job is ended after the grace as given (it said "0 s" for 0.5).
cat > "$work/frozen_launcher.sh" <<'LAUNCHER'
#!/bin/sh
echo "strider: [rank 0 of 2] rank 1 of 2 (host 'h1') stopped answering for 30 s"
exec sleep 30
LAUNCHER
chmod +x "$work/frozen_launcher.sh"
tried=$((tried + 1))  # (it exits with the killed job's status, 137)
out=$(timeout 60 "$strider" launch -n 2 --max-restarts 0 --end-grace 0.5 --launcher "$work/frozen_launcher.sh" \
      -- strider train --out "$work/frozen" 2>&1 < /dev/null)
grep -qF "the job has not ended 0.5 s after rank 1 on host h1 froze" <<< "$out" ||
  { failed=$((failed + 1)); echo "FAIL: launch --end-grace 0.5 on a frozen job: $out"; }
expect "bench unknown model" "--model" bench model --model vgg

# ---- token files (--tokens) and image folders (--image-folder)
tok=(--model gpt --n-layer 1 --n-embd 16 --n-head 2 --seq 16 --batch-size 8 --limit-batches 2 --epochs 1 --threads 1
     --out "$work/x")
printf 'abc' > "$work/odd.bin"; : > "$work/empty.bin"
LC_ALL=C tr '\n' ' ' < /usr/share/common-licenses/GPL-3 | LC_ALL=C sed 's/./&\x00/g' > "$work/tokens.bin"
expect "token file of an odd length" "odd.bin has 3 bytes, not a multiple of the 2-byte uint16 token size" \
       train "${tok[@]}" --tokens "$work/odd.bin"
expect "uint16 tokens read as uint32" "tokens.bin has 70298 bytes, not a multiple of the 4-byte uint32" train "${tok[@]}" \
       --tokens "$work/tokens.bin" --token-dtype uint32
expect "empty token file" "empty.bin is empty" train "${tok[@]}" --tokens "$work/empty.bin"
expect "empty validation token file" "empty.bin is empty" train "${tok[@]}" --tokens "$work/tokens.bin" \
       --val-tokens "$work/empty.bin"
expect "missing token file" "none.bin" train "${tok[@]}" --tokens "$work/none.bin"
expect "token id beyond --vocab-size" "tokens.bin' holds token id 122, at or beyond --vocab-size 100" \
       train "${tok[@]}" --tokens "$work/tokens.bin" --vocab-size 100
# A stray id (0xFFFFFFFF, a sentinel) or a huge --vocab-size would size a 137 GB embedding: refused, naming it.
# (perl-base is essential in Debian; python3 is not installed on a fresh machine)
perl -e 'print pack("V*", (7) x 4095, 0xFFFFFFFF)' > "$work/u32_max.bin"
expect "token id 0xFFFFFFFF" "u32_max.bin' holds token id 4294967295: a vocabulary of 4294967296 means a 4294967296 x 16 token embedding" \
       train "${tok[@]}" --tokens "$work/u32_max.bin" --token-dtype uint32
expect "--vocab-size 2^32" "--vocab-size 4294967296 means a 4294967296 x 16 token embedding" \
       train "${tok[@]}" --tokens "$work/tokens.bin" --vocab-size 4294967296
expect "--tokens with --text-file" "both name the training data; pass only one" train "${tok[@]}" \
       --tokens "$work/tokens.bin" --text-file /etc/hostname
expect "--tokens for a CNN" "--tokens and --val-tokens are for --model gpt" train --tokens "$work/tokens.bin" --out "$work/x"
expect "--val-tokens without --tokens" "--val-tokens needs --tokens" train "${tok[@]}" --text-file /etc/hostname \
       --val-tokens "$work/tokens.bin"
expect "--vocab-size without --tokens" "--token-dtype and --vocab-size are for --tokens" train "${tok[@]}" \
       --text-file /usr/share/common-licenses/GPL-3 --vocab-size 300
for f in "--token-dtype int8" "--vocab-size 0" "--image-size 0" "--data-workers -1"; do
  # shellcheck disable=SC2086
  expect "train $f" "${f%% *}" train $f --out "$work/x"
done
expect "--image-folder with --model gpt" "--image-folder and --val-image-folder are for the CNNs" train "${tok[@]}" \
       --tokens "$work/tokens.bin" --image-folder "$work"
expect "--image-size without --image-folder" "--image-size is for --image-folder" train --image-size 32 --out "$work/x"
expect "--val-image-folder without --image-folder" "--val-image-folder needs --image-folder" train \
       --val-image-folder "$work" --out "$work/x"
expect "image folder missing" "none is not a directory" train --model resnet18 --image-folder "$work/none" --out "$work/x"
mkdir -p "$work/noclass"; touch "$work/noclass/a.png"
expect "image folder without a class folder" "noclass has no class folder" train --model resnet18 \
       --image-folder "$work/noclass" --out "$work/x"
if [ -n "$make_folder" ]; then
  img=(--model resnet18 --image-size 16 --batch-size 4 --epochs 1 --threads 1 --no-progress --out "$work/x")
  "$make_folder" "$work/images" 3 12 || { echo "FAIL: make_image_folder"; exit 1; }
  bad_folder() { rm -rf "$work/bad"; cp -r "$work/images" "$work/bad"; }
  bad_folder; mkdir "$work/bad/class_9"; touch "$work/bad/class_9/notes.txt"
  expect "class folder without an image" "class folder $work/bad/class_9 has no image" train "${img[@]}" \
         --image-folder "$work/bad"
  bad_folder; truncate -s 100 "$work/bad/class_1/img_104.png"
  expect "truncated PNG" "$work/bad/class_1/img_104.png" train "${img[@]}" --image-folder "$work/bad"
  bad_folder; truncate -s 300 "$work/bad/class_2/img_102.jpg"
  expect "truncated JPEG" "$work/bad/class_2/img_102.jpg: corrupt or truncated image" train "${img[@]}" \
         --image-folder "$work/bad"
  bad_folder; printf 'not an image at all' > "$work/bad/class_0/img_103.png"
  expect "corrupt image" "$work/bad/class_0/img_103.png" train "${img[@]}" --image-folder "$work/bad"
  # After an epoch trained, the loader's "batch 0 of epoch 0" is the validation pass's: said so.
  expect "corrupt image in the validation folder" \
         "the validation pass over --val-image-folder '$work/bad': [DataLoader] batch 0 of epoch 0: reading of sample 3 failed: [read_image] $work/bad/class_0/img_103.png" \
         train "${img[@]}" --image-folder "$work/images" --val-image-folder "$work/bad"
  bad_folder; printf 'not an image at all' > "$work/bad/class_0/img_100.png"
  expect "corrupt first image" "$work/bad/class_0/img_100.png" train "${img[@]}" --image-folder "$work/bad"
  rm -rf "$work/other"; "$make_folder" "$work/other" 2 3
  expect "validation folder with other classes" "only in --image-folder: class_2; both need the same class folders" \
         train "${img[@]}" --image-folder "$work/images" --val-image-folder "$work/other"
  bad_folder; mv "$work/bad/class_1" "$work/bad/birds"
  expect "validation folder with a renamed class" \
         "only in --image-folder: birds; only in --val-image-folder: class_1; both need the same class folders" \
         train "${img[@]}" --image-folder "$work/bad" --val-image-folder "$work/images"
  expect "bench loader: small_cnn at another size" "--model small_cnn takes 28x28 images" bench loader \
         --image-folder "$work/images" --model small_cnn --image-size 64 --steps 1
  expect "small_cnn at another size" "--model small_cnn takes 28x28 images" train "${img[@]}" --model small_cnn \
         --image-folder "$work/images"
  # A resume that would draw another held-out split or epoch order: the run record refuses it.
  last_wins train "${img[@]}" --image-folder "$work/images" --max-steps 2 --out "$work/leg1"
  "$strider" "${ARGS[@]}" > /dev/null 2>&1 ||
    { echo "FAIL: could not make an image folder checkpoint"; exit 1; }
  resume_img() { expect "$1" "$2" train "${img[@]}" --epochs 2 --out "$work/leg2_$tried" --resume "$work/leg1" "${@:3}"; }
  resume_img "resume with another --seed" "was saved with --seed '0' but this run has '5'" \
             --image-folder "$work/images" --seed 5
  bad_folder; cp "$work/bad/class_0/img_100.png" "$work/bad/class_0/img_900.png"
  resume_img "resume with an image added" "was saved with the training data (--image-folder '$work/bad') '36 images" \
             --image-folder "$work/bad"
  bad_folder; rm "$work/bad/class_2/img_102.jpg"
  resume_img "resume with an image removed" "but this run has '35 images in 3 classes" --image-folder "$work/bad"
  bad_folder; mv "$work/bad/class_1/img_104.png" "$work/bad/class_2/img_104.png"
  resume_img "resume with an image moved to another class" "the training data (--image-folder '$work/bad')" \
             --image-folder "$work/bad"
  resume_img "resume with a validation folder added" "the validation data (--val-image-folder" \
             --image-folder "$work/images" --val-image-folder "$work/images"
  # The same images elsewhere (another mount, a copy) are the same run.
  bad_folder; tried=$((tried + 1))
  last_wins train "${img[@]}" --epochs 2 --out "$work/leg2" --resume "$work/leg1" --image-folder "$work/bad"
  out=$(timeout 120 "$strider" "${ARGS[@]}" 2>&1) || { failed=$((failed + 1)); echo "FAIL: resume from a copied folder: $out"; }
fi

# ---- crafted checkpoints for --resume
last_wins train "${gpt[@]}" --out "$work/run"
"$strider" "${ARGS[@]}" > /dev/null 2>&1 || { echo "FAIL: could not make a checkpoint"; exit 1; }
ckpt=$(ls -d "$work/run"/checkpoint-* | tail -n 1)
resume() { expect "$1" "$2" train "${gpt[@]}" --epochs 2 --out "$work/resumed" --resume "$3" "${@:4}"; }
resume "resume from a file" "is not a directory" /usr/share/common-licenses/GPL-3
resume "resume from /dev/zero" "is not a directory" /dev/zero
resume "resume from a missing directory" "does not exist" "$work/none"
mkdir -p "$work/emptydir"
resume "resume from a directory without checkpoints" "holds no committed checkpoint" "$work/emptydir"
for file in rank-00000-of-00001.safetensors manifest.json; do
  size=$(stat -c %s "$ckpt/$file")
  for at in 0 5 8 40 200 $((size / 3)) $((size / 2)) $((size - 9)) $((size - 2)); do
    rm -rf "$work/flip"; cp -r "$ckpt" "$work/flip"
    printf '\x5a' | dd of="$work/flip/$file" bs=1 seek="$at" conv=notrunc status=none
    resume "byte $at of $file flipped" "$file" "$work/flip"
  done
  rm -rf "$work/short"; cp -r "$ckpt" "$work/short"; truncate -s $((size - 100)) "$work/short/$file"
  resume "truncated $file" "$file" "$work/short"
  rm -rf "$work/missing"; cp -r "$ckpt" "$work/missing"; rm "$work/missing/$file"
  if [ "$file" = manifest.json ]; then missing="(no manifest.json)"; else missing="cannot open"; fi
  resume "missing $file" "$missing" "$work/missing"
done
resume "other model" "was saved with the model 'gpt(n_layer=1" "$ckpt" --n-layer 2
resume "other seed" "was saved with --seed '0' but this run has '3'; the seed draws the held-out split" "$ckpt" --seed 3
head -c 30000 /usr/share/common-licenses/GPL-3 > "$work/shorter.txt"
resume "other text file" "was saved with the training data (--text-file '$work/shorter.txt') '" "$ckpt" \
       --text-file "$work/shorter.txt"
last_wins train "${tok[@]}" --tokens "$work/tokens.bin" --out "$work/tokrun"
"$strider" "${ARGS[@]}" > /dev/null 2>&1 ||
  { echo "FAIL: could not make a token checkpoint"; exit 1; }
cp "$work/tokens.bin" "$work/tokens2.bin"; printf 'a' | dd of="$work/tokens2.bin" bs=1 seek=0 conv=notrunc status=none
expect "resume with a token file of other tokens" "the training data (--tokens '$work/tokens2.bin')" train "${tok[@]}" \
       --epochs 2 --out "$work/tokres" --resume "$work/tokrun" --tokens "$work/tokens2.bin"
expect "resume with a validation token file added" "the validation data (--val-tokens" train "${tok[@]}" --epochs 2 \
       --out "$work/tokres" --resume "$work/tokrun" --tokens "$work/tokens.bin" --val-tokens "$work/tokens.bin"
resume "other optimizer" "--reset-optimizer" "$ckpt" --optimizer sgd
resume "other optimizer state dtype" "keeps bfloat16 state; load with the state dtype it was saved with" "$ckpt" \
       --optimizer-state-dtype bfloat16
resume "other batch size" "same --batch-size" "$ckpt" --batch-size 16
resume "epochs already done" "raise --epochs" "$work/run" --epochs 1
# A resume refused after loading leaves no --out it created (it left metrics.jsonl behind).
tried=$((tried + 1))
[ ! -e "$work/resumed" ] || { failed=$((failed + 1)); echo "FAIL: a refused resume left $work/resumed: $(ls "$work/resumed")"; }
# The epochs' boundaries and the schedule count the steps per epoch: another --limit-batches is
# refused (it trained 2 steps of epoch 2, skipped epoch 3 and said "done: 3 epochs").
last_wins train "${gpt[@]}" --limit-batches 5 --out "$work/run5"
"$strider" "${ARGS[@]}" > /dev/null 2>&1 ||
  { echo "FAIL: could not make a checkpoint at step 5"; exit 1; }
resume "resume with another --limit-batches" \
       "was saved with steps per epoch (the data's full batches, capped by --limit-batches) '5' but this run has '2'" \
       "$work/run5" --epochs 3
resume "resume with a smaller --limit-batches" "resume with the --limit-batches it was saved with" \
       "$work/run5" --epochs 3 --limit-batches 1
# ---- manifests that never end: refused before a byte is read
rm -rf "$work/fifo" "$work/huge"; cp -r "$ckpt" "$work/fifo"; cp -r "$ckpt" "$work/huge"
rm "$work/fifo/manifest.json"; mkfifo "$work/fifo/manifest.json"
truncate -s 300M "$work/huge/manifest.json"  # sparse
for tool in resume "ckpt verify" "ckpt inspect"; do
  for kind in fifo huge; do
    if [ "$kind" = fifo ]; then want="manifest.json is a FIFO, not a regular file"
    else want="manifest.json has 314572800 bytes, above the 256 MiB a manifest may have"; fi
    if [ "$tool" = resume ]; then resume "resume from a $kind manifest" "$want" "$work/$kind"
    else expect "$tool of a $kind manifest" "$want" $tool "$work/$kind"; fi
  done
done
# ---- manifests re-sealed with a valid checksum over content that does not describe the files
python=$(command -v /usr/bin/python3 python3 | head -n1)
reseal() { "$python" "$(dirname "$0")/reseal_manifest.py" "$@"; }
if [ -n "$python" ]; then
  rm -rf "$work/nofiles"; cp -r "$ckpt" "$work/nofiles"; reseal "$work/nofiles" empty-files > /dev/null
  want="the files list holds 0 files but world_size is 1"
  resume "resume with an empty files list" "$want" "$work/nofiles"
  expect "verify an empty files list" "$want" ckpt verify "$work/nofiles"
  expect "inspect an empty files list" "$want" ckpt inspect "$work/nofiles"
  expect "reshard an empty files list" "$want" ckpt reshard "$work/nofiles" "$work/r" --world-size 2 --strategy ddp
  expect "consolidate an empty files list" "$want" ckpt consolidate "$work/nofiles" "$work/c.safetensors"
  # A strategy strider does not write: named with the manifest, not blamed on --strategy.
  rm -rf "$work/bogus"; cp -r "$ckpt" "$work/bogus"; reseal "$work/bogus" strategy > /dev/null
  want="manifest.json: the manifest's strategy 'bogus' is not one strider writes"
  expect "verify an unknown strategy" "$want" ckpt verify "$work/bogus"
  expect "reshard an unknown strategy" "$want" ckpt reshard "$work/bogus" "$work/r" --world-size 2 --strategy ddp
  # An optimizer step count the run cannot have taken (Adam's bias correction would follow it).
  rm -rf "$work/steps"; cp -r "$ckpt" "$work/steps"; reseal "$work/steps" optimizer-steps > /dev/null
  resume "resume an optimizer with 10^15 steps" "says its optimizer took 1000000000000000 steps in a run of" "$work/steps"
  # A checkpoint from before the run record: resumed, with a warning that says what is unchecked.
  rm -rf "$work/oldrec"; cp -r "$ckpt" "$work/oldrec"; reseal "$work/oldrec" old-run-record > /dev/null
  tried=$((tried + 1))
  last_wins train "${gpt[@]}" --epochs 2 --out "$work/oldres" --resume "$work/oldrec"
  out=$(timeout 120 "$strider" "${ARGS[@]}" 2>&1)
  if [ $? -ne 0 ] || ! grep -qF "was saved before checkpoints recorded --seed; the training data" <<< "$out"; then
    failed=$((failed + 1)); echo "FAIL: resume of a checkpoint without the run record: $(tail -n 3 <<< "$out")"
  fi
  # Without the record, a checkpoint at step 5 and a schedule of two steps (2 epochs of 1 batch)
  # would train nothing.
  rm -rf "$work/old5"; cp -r "$(ls -d "$work/run5"/checkpoint-* | tail -n 1)" "$work/old5"
  reseal "$work/old5" old-run-record > /dev/null
  resume "resume past the end of the schedule" "is already past the end of this run's schedule (step 5 of 2)" \
         "$work/old5" --limit-batches 1
  resume "resume at the end of the schedule" "is already at the end of this run's schedule (step 5 of 5)" \
         "$work/old5" --epochs 5 --limit-batches 1
  # One tensor sent to another's bytes of the same size in the same (checksummed) file.
  rm -rf "$work/pointed"; cp -r "$ckpt" "$work/pointed"
  read -r first other <<< "$(reseal "$work/pointed" point)"
  want="the manifest places tensor '$first' at byte"
  resume "resume a tensor pointed at '$other'" "starts tensor '$other'" "$work/pointed"
  for tool in verify inspect; do expect "$tool a tensor pointed at another" "$want" ckpt $tool "$work/pointed"; done
  expect "reshard a tensor pointed at another" "$want" ckpt reshard "$work/pointed" "$work/r" --world-size 2 \
         --strategy ddp
  expect "consolidate a tensor pointed at another" "$want" ckpt consolidate "$work/pointed" "$work/c.safetensors"
  # Two rank files' halves of one tensor swapped (as two FULL_SHARD ranks write them).
  "$strider" ckpt reshard "$ckpt" "$work/two" --world-size 2 --strategy full_shard > /dev/null 2>&1 ||
    { echo "FAIL: could not reshard to 2 ranks"; exit 1; }
  key=$(reseal "$work/two" swap-rows)
  want="of tensor '$key' but the manifest reads them as its rows"
  resume "resume with rows swapped between rank files" "$want" "$work/two"
  for tool in verify inspect; do expect "$tool rows swapped between rank files" "$want" ckpt $tool "$work/two"; done
  expect "reshard rows swapped between rank files" "$want" ckpt reshard "$work/two" "$work/r" --world-size 1
  expect "consolidate rows swapped between rank files" "$want" ckpt consolidate "$work/two" "$work/c.safetensors"
  # A learning-rate schedule position the run cannot have reached (the rate would follow it).
  rm -rf "$work/sched"; cp -r "$ckpt" "$work/sched"; reseal "$work/sched" scheduler-step > /dev/null
  resume "resume a schedule at step 2^62" "says its learning-rate schedule is at step 4611686018427387904 in a run of" \
         "$work/sched"
  # A rank listed whose file was never written, and 'local' claimed for two ranks: every reader
  # refuses them before loading anything (reshard, consolidate and --resume used to succeed).
  "$strider" ckpt reshard "$ckpt" "$work/more" --world-size 2 --strategy full_shard > /dev/null 2>&1 ||
    { echo "FAIL: could not reshard to 2 ranks"; exit 1; }
  cp -r "$work/more" "$work/local2"
  reseal "$work/more" more-ranks > /dev/null
  reseal "$work/local2" strategy-local > /dev/null
  rm -rf "$work/dupkey"; cp -r "$ckpt" "$work/dupkey"; reseal "$work/dupkey" dup-key > /dev/null
  for kind in more local2 dupkey; do
    case $kind in
      more) want="cannot open $work/more/rank-00002-of-00003.safetensors listed in the manifest" ;;
      local2) want="strategy 'local' (one process, no wrapper) is saved by one rank but world_size is 2" ;;
      dupkey) want="manifest.json: the key 'step' appears twice in the manifest" ;;
    esac
    resume "resume: $kind" "$want" "$work/$kind"
    for tool in verify inspect; do expect "$tool: $kind" "$want" ckpt $tool "$work/$kind"; done
    expect "reshard: $kind" "$want" ckpt reshard "$work/$kind" "$work/r" --world-size 1
    expect "consolidate: $kind" "$want" ckpt consolidate "$work/$kind" "$work/c.safetensors"
  done
else
  echo "crafted manifests: no python3 here to re-seal them"
fi
# ---- a flag given twice: refused in every subcommand (the last one silently won)
expect "--lr twice" "strider: --lr is given 2 times but takes one value; give it once (strider train --help" train --lr 1e-3 --lr 5 \
       --out "$work/x"
expect "--out twice" "--out is given 2 times" train --out "$work/a" --out "$work/b"
expect "--model twice" "--model is given 2 times" train --model small_cnn --model resnet18 --out "$work/x"
expect "--no-progress twice" "--progress is given 2 times" train --no-progress --no-progress --out "$work/x"
expect "ckpt inspect --json twice" "--json is given 2 times" ckpt inspect --json --json "$ckpt"
expect "reshard --world-size twice" "--world-size is given 2 times but takes one value; give it once (strider ckpt reshard --help" ckpt reshard "$ckpt" \
       "$work/r" --world-size 2 --world-size 4
expect "launch -n twice" "--ranks is given 2 times" launch -n 2 -n 3 -- "$strider" train --out "$work/x"
# ---- values that would read as not given, or parse as another number
expect "--resume given empty" "--resume: an empty value" train "${gpt[@]}" --resume "" --out "$work/x"
expect "--image-folder given empty" "--image-folder: an empty value" train --image-folder "" --out "$work/x"
expect "--export-model given empty" "--export-model: an empty value" train "${gpt[@]}" --export-model "" --out "$work/x"
expect "ckpt consolidate OUT given empty" "out: an empty value (an unset shell variable?); give the path" \
       ckpt consolidate "$ckpt" ""
expect "ckpt reshard --strategy given empty" "--strategy: an empty value" ckpt reshard "$ckpt" "$work/r" \
       --world-size 2 --strategy ""
expect "ckpt verify of an empty path" "paths: an empty value" ckpt verify "$ckpt" ""
expect "ckpt inspect of an empty path" "path: an empty value" ckpt inspect ""
expect "launch --hostfile given empty" "--hostfile: an empty value" launch -n 1 --hostfile "" -- "$strider" train \
       --out "$work/x"
expect "--seed -1" "--seed: '-1' is not a whole number" train "${gpt[@]}" --seed -1 --out "$work/x"
expect "--seed past 2^64" "does not fit an unsigned 64-bit integer" train "${gpt[@]}" --seed 99999999999999999999 --out "$work/x"
expect "--lr not a number" "--lr: 'abc' is not a number" train "${gpt[@]}" --lr abc --out "$work/x"
expect "--lr below its bound" "not in range 1e-12 to 1000" train "${gpt[@]}" --lr 1e-13 --out "$work/x"
# ---- one run's checkpoints per --out: a fresh run, or a rollback, beside another run's
last_wins train "${gpt[@]}" --checkpoint-every 1 --out "$work/mixed"
if timeout 120 "$strider" "${ARGS[@]}" > /dev/null 2>&1; then
  expect "a fresh run into another run's --out" "already holds another run's checkpoints" train "${gpt[@]}" \
    --out "$work/mixed"
  expect "a rollback beside the abandoned steps" "holds checkpoints past the resumed step 1" train "${gpt[@]}" \
    --resume "$work/mixed/checkpoint-000000001" --out "$work/mixed"
else
  failed=$((failed + 1)); echo "FAIL: the run for the --out checks did not train"
fi
tried=$((tried + 1))
# ---- the offline tools, on good and crafted checkpoints
mkdir -p "$work/taken"
rank_file=rank-00000-of-00001.safetensors size=$(stat -c %s "$ckpt/$rank_file")
rm -rf "$work/cflip" "$work/cshort"; cp -r "$ckpt" "$work/cflip"; cp -r "$ckpt" "$work/cshort"
printf '\x5a' | dd of="$work/cflip/$rank_file" bs=1 seek=$((size / 3)) conv=notrunc status=none
truncate -s $((size - 100)) "$work/cshort/$rank_file"
expect "ckpt without a subcommand" "strider ckpt needs a command: inspect" ckpt
expect "reshard without --world-size" "--world-size" ckpt reshard "$ckpt" "$work/r"
expect "reshard --world-size 0" "--world-size" ckpt reshard "$ckpt" "$work/r" --world-size 0
expect "reshard unknown strategy" "unknown strategy 'zero9'" ckpt reshard "$ckpt" "$work/r" --world-size 2 --strategy zero9
expect "reshard local on 2 ranks" "needs --world-size 1" ckpt reshard "$ckpt" "$work/r" --world-size 2 --strategy local
expect "reshard onto an existing directory" "already exists" ckpt reshard "$ckpt" "$work/taken" --world-size 2 --strategy ddp
expect "reshard a flipped checkpoint" "fail their checksum" ckpt reshard "$work/cflip" "$work/r" --world-size 2 --strategy ddp
expect "ckpt with an unknown command" "unknown command 'bogus' for strider ckpt: inspect" ckpt bogus
expect "bench without a command" "strider bench needs a command: model" bench
# One rank's file of a checkpoint is verified through the checkpoint's manifest (not refused as unchecksummed).
tried=$((tried + 1))
shard_out=$("$strider" ckpt verify "$ckpt"/rank-00000-of-*.safetensors 2>&1)
if [ $? -ne 0 ] || ! grep -qF "one file of the checkpoint" <<< "$shard_out"; then
  failed=$((failed + 1)); echo "FAIL: ckpt verify of a rank's file: $shard_out"
fi
expect "reshard a missing checkpoint" "does not exist" ckpt reshard "$work/none" "$work/r" --world-size 2
expect "consolidate into a directory" "$work/taken" ckpt consolidate "$ckpt" "$work/taken"
expect "consolidate a truncated checkpoint" "truncated" ckpt consolidate "$work/cshort" "$work/c.safetensors"
# OUT is renamed into place: a FIFO or a symbolic link there would be replaced (so would a device
# node: the audit's /dev/full), and an existing file is refused as reshard refuses an existing OUT.
rm -f "$work/fifo_out" "$work/link_out" "$work/link_target" "$work/existing.safetensors"
mkfifo "$work/fifo_out"; echo keep > "$work/link_target"; ln -s link_target "$work/link_out"
echo keep > "$work/existing.safetensors"
expect "consolidate onto a FIFO" "OUT $work/fifo_out is a FIFO; the file is written beside it and renamed onto it" \
       ckpt consolidate "$ckpt" "$work/fifo_out"
expect "consolidate onto a symbolic link" "OUT $work/link_out is a symbolic link;" ckpt consolidate "$ckpt" "$work/link_out"
expect "consolidate onto an existing file" "OUT $work/existing.safetensors already exists; remove it" \
       ckpt consolidate "$ckpt" "$work/existing.safetensors"
expect "--export-model onto a FIFO" "--export-model $work/fifo_out is a FIFO" train "${gpt[@]}" --out "$work/x" \
       --export-model "$work/fifo_out"
expect "--export-model onto a symbolic link" "(the link, not the file it points to)" train "${gpt[@]}" --out "$work/x" \
       --export-model "$work/link_out"
# A model exported over a checkpoint's manifest destroyed the checkpoint: a path inside a
# checkpoint directory is refused, and so is an existing file that is not a safetensors file.
cp "$ckpt/manifest.json" "$work/manifest.before"
expect "--export-model onto a checkpoint's manifest" "manifest.json is inside the checkpoint directory" \
       train "${gpt[@]}" --out "$work/x" --export-model "$ckpt/manifest.json"
expect "--export-model into a checkpoint directory" "model.safetensors is inside the checkpoint directory" \
       train "${gpt[@]}" --out "$work/x" --export-model "$ckpt/model.safetensors"
expect "consolidate into a checkpoint directory" "is inside the checkpoint directory" \
       ckpt consolidate "$ckpt" "$ckpt/model.safetensors"
expect "--export-model onto a file that is not safetensors" \
       "--export-model $work/existing.safetensors exists and is not a safetensors file" \
       train "${gpt[@]}" --out "$work/x" --export-model "$work/existing.safetensors"
tried=$((tried + 1))
cmp -s "$ckpt/manifest.json" "$work/manifest.before" && [ ! -e "$ckpt/model.safetensors" ] ||
  { failed=$((failed + 1)); echo "FAIL: a refused --export-model changed the checkpoint"; }
tried=$((tried + 1))
[ -p "$work/fifo_out" ] && [ -L "$work/link_out" ] && [ "$(cat "$work/link_target")" = keep ] &&
  [ "$(cat "$work/existing.safetensors")" = keep ] || { failed=$((failed + 1)); echo "FAIL: a refused OUT was replaced"; }
ls "$work"/*.tmp.* > /dev/null 2>&1 && { failed=$((failed + 1)); echo "FAIL: a refused OUT left a temporary file"; }
expect "inspect a truncated manifest" "manifest.json" ckpt inspect "$work/short"
expect "inspect a file" "is not a directory" ckpt inspect /usr/share/common-licenses/GPL-3
[ ! -e "$work/r" ] && [ ! -e "$work/c.safetensors" ] || { failed=$((failed + 1)); echo "FAIL: a failed tool left output"; }
tried=$((tried + 1))
# --reset-optimizer allows a different optimizer (fresh moments)
last_wins train "${gpt[@]}" --epochs 2 --out "$work/reset" --resume "$ckpt" --optimizer sgd --reset-optimizer
if ! timeout 120 "$strider" "${ARGS[@]}" > /dev/null 2>&1; then
  failed=$((failed + 1)); echo "FAIL: --reset-optimizer did not resume"
fi
tried=$((tried + 1))

echo "bad inputs: $((tried - failed)) passed, $failed failed"
[ $failed -eq 0 ]
