#!/usr/bin/env bash
# Sourced by plan scripts on a lent GPU machine (from the repository root; session 19 on), so each does not
# repeat it:
#   unpack_carry TARBALL DIR   unpacks a scripts/pack-gpu-carry archive into DIR (DIR/bin, DIR/lib) and puts
#                              its libraries and the machine's cuBLAS on LD_LIBRARY_PATH
#   start_plan TARBALL [EXTRA] a plan's start (session 38 on): unpack_carry TARBALL /tmp/carry, an empty $R,
#                              record_gpu $R/gpu.txt; sets B=/tmp/carry/bin; with EXTRA (an xz tar of more
#                              binaries under bin/: measuring builds such as bin/moe-cycles, bin/moe-38,
#                              bin/moe-timeline) unpacked beside it
#   record_gpu FILE            writes the card's name (what scripts/ingest-gpu-results files the results by)
#   decode_ab MOE LOG VAR V..  the model's decode step (random Qwen3-30B-A3B fp8, batches 1 and 8) with VAR set
#                              to each value in turn (list them alternated), its rows into LOG
#   timeline MOE LOG [VAR=V..] the measuring build MOE's kernel timeline at batch 1 into LOG; prints its table
#   binaries_ab LOG NEW OLD N  the same decode step from two moe binaries, alternated N times each
#   op_rows LABEL MOE ARGS..   `MOE bench ARGS..` (the MoE op; 60 s at most), its table rows prefixed by LABEL
#                              (an A/B's variant and round), e.g. MOE_X=1 op_rows "round=1 x=1" $MOE --shapes ..
#   ab_op_rows OLD NEW ARGS..  op_rows of two moe binaries, two rounds alternated, labelled "round=N main|new"
#   env_ab_rows LOG VAR "V1 V2.." MOE ARGS..
#                              op_rows of one binary with VAR set to each value in turn, two rounds alternated
#                              (labels rN VAR=V), appended to LOG; stops early when the plan's time runs short
#   grouped_forced_paths CAP RES
#                              the grouped-GEMM forced-path GPU test (at most CAP s, RES s kept for what
#                              follows) into $R/forced-paths.log; prints its verdicts and the new rows' M=400
#   bench_ab LOG VAR V1,V2 MOE ARGS..
#                              the same A/B in one process (moe bench --env-ab, ROUNDS rounds, default two):
#                              no process start per setting; rows end "VAR=V rN" (VAR may be A+B, V 1+0:
#                              several variables at once); prints them pivoted by shape, format and M
#   ab_means LOG               bench_ab's LOG as one line per shape, format, M and setting: its mean over the
#                              rounds
#   ab_winner LOG VAR OFF ON   prints ON when bench_ab's LOG has VAR=ON faster than VAR=OFF (the mean of its
#                              rounds) by at least 0.2 % at every shape, format and M it holds, else OFF:
#                              what a plan passes on to its gpu-check, e.g. export VAR=$(ab_winner ...)
#   pivot_rows LOG             op_rows lines regrouped by shape, format and M, each variant's time beside the
#                              others' (what an A/B reads)
#   prologue_ncu SHAPE BIN..   ncu's time of each binary's one-block prologue at one token (fp8, SHAPE)
#   one_token_stalls MOE RES "SKIP CACHE".. scripts/profile-stalls of Auto's one-token swap-AB stages
#                              (Qwen3-30B-A3B fp8), one run per "SKIP CACHE" pair (an odd skip lands on a
#                              stage 2; CACHE: ncu's --cache-control, all or none) into $R/sSKIP-CACHE, each
#                              capped so RES seconds stay for the plan; prints each run's stall rows
#   path_thresholds MOE SHAPES FORMATS M RES
#                              scripts/path-thresholds (Auto and each forced path, per M) into
#                              $R/path-thresholds.log, capped so RES seconds stay; prints its table
#   call_kernels_ncu MOE M..   ncu's time of every kernel of the MoE call (Qwen3-30B-A3B fp8, Auto, caches
#                              not flushed), two calls after warm-up per M, into $R/call-ncu-mM.log; prints
#                              one line per kernel (name, grid, us) and their sum
#   clocks_start FILE / clocks_stop
#                              nvidia-smi's SM and memory clocks every 200 ms into FILE while what runs between
#                              them runs; clocks_stop prints their spread over the samples with the SMs busy
#   swap_gemm_ncu MOE RES      ncu's time and DRAM bytes of the swapped grouped GEMM's launches (Qwen3-30B-A3B,
#                              64 and 256 tokens), fp8 then bf16, into $R/swap-gemm-ncu-FORMAT.log
#   wgmma_cycles MOE VAR "V1 V2.." M,M.. [SHAPE]
#                              a MOE_WGMMA_CYCLES measuring build's grouped-GEMM cycle accounting (SHAPE, default
#                              Qwen3-30B-A3B, fp8), one bench per M and VAR value (the report sums a whole
#                              bench), into $R/cycles-[SHAPE-]mM-VAR-V.log; prints each kernel's per-step rows
#   stop_on_fault VAR=V..      after grouped_forced_paths: if it failed or faulted, compute-sanitizer on `moe
#                              bench` (Qwen3-30B-A3B fp8, 64 tokens) with VAR=V.. set, into $R/sanitizer.log
#                              (prints it), and success, so a plan can stop: stop_on_fault X=1 && exit 0
#   swap_ab_timeline MOE M..   a MOE_SWAP_AB_TIMELINE measuring build's swap-AB phases (Qwen3-30B-A3B fp8) at
#                              each M into $R/swtl-mM.log
#   quick_gpu_check BIN [RES]  scripts/gpu-check without the TP CLI and the experiments into $R/gc, capped by
#                              END less RES seconds (default 5); prints its summary and headline rows
#   read_sweep MOE             `MOE bench --read-sweep` into $R/read-sweep.log (40 s at most); prints its rows
#   queue_probe BIN            the queue-latency probe (bench/probes/queue_latency_probe.cu, built) into
#                              $R/queue-latency.log; prints it
#   tp_cli MOE LIMIT           scripts/tp-gpu-check into $R/tp.log (TP_CHECK_MODELS as set), capped by END;
#                              prints its rows, then deletes its generated checkpoints (too large to bring back)
#   pack_every SECONDS / stop_packing
#                              pack in the background every SECONDS while the plan runs (a call cut short still
#                              brings back what ran), then stop and pack once more
# and, for the plan's own steps: el (seconds since sourcing), cap LIMIT [RESERVE] (LIMIT, or less so the plan
# ends by END seconds, default 470, keeping RESERVE), R (the results folder, /tmp/r) and pack (R into
# $OUT/r.tgz, without generated cases, fixtures and TP checkpoints; run it after each step, so a cut-off call
# keeps what ran).
plan_start=$(date +%s)
el() { echo $(($(date +%s) - plan_start)); }
cap() {
  local left=$((${END:-470} - $(el) - ${2:-0}))
  [ "$left" -lt "$1" ] && echo "$left" || echo "$1"
}
R=/tmp/r
mkdir -p $R
pack() { tar -C /tmp -czf "$OUT/r.tgz" --exclude='r/*/cases' --exclude='r/*/fixtures' --exclude='r/*/tp' r 2>/dev/null; }
pack_every() {
  (while sleep "$1"; do pack; done) &
  packer=$!
}
stop_packing() {
  kill "$packer" 2>/dev/null
  pack
}
unpack_carry() {
  mkdir -p "$2" && tar -C "$2" -xJf "$1" || return 1
  local cublas
  cublas=$(find /usr/local/cuda/ /usr/local/cuda-13*/ /opt -name 'libcublas.so.13' 2>/dev/null | head -1)
  LD_LIBRARY_PATH="$2/lib:$(dirname "$cublas"):${LD_LIBRARY_PATH:-}"
  export LD_LIBRARY_PATH
}
record_gpu() {
  nvidia-smi --query-gpu=name --format=csv,noheader | tee "$1"
}
decode_ab() {
  local moe=$1 log=$2 var=$3 v
  shift 3
  for v in "$@"; do
    env "$var=$v" timeout 40 "$moe" bench --random-shape qwen3-30b-a3b --format fp8_block --batches 1,8 \
      --prefill 0 2>&1 | grep -E "^ *decode|rror" | sed "s/^/$var=$v /"
  done > "$log"
  cat "$log"
}
timeline() {
  local moe=$1 log=$2
  shift 2
  env MOE_KERNEL_TIMELINE=1 "$@" timeout 45 "$moe" bench --random-shape qwen3-30b-a3b --format fp8_block \
    --batches 1 --prefill 0 > "$log" 2>&1
  echo "timeline $* rc $?"
  grep -iE "error|illegal" "$log" | head -3
  grep -A24 -iE "^  launch" "$log" | head -28
}
binaries_ab() {
  local log=$1 new=$2 old=$3 n=$4 i run bin
  for ((i = 0; i < n; ++i)); do
    for run in new old; do
      bin=$new
      [ $run = old ] && bin=$old
      timeout 40 "$bin" bench --random-shape qwen3-30b-a3b --format fp8_block --batches 1,8 --prefill 0 2>&1 |
        grep -E "^ *decode|rror" | sed "s/^/$run /"
    done
  done > "$log"
  cat "$log"
}
op_rows() {
  local label=$1 moe=$2
  shift 2
  timeout 60 "$moe" bench "$@" 2>&1 | grep -E "^[a-z0-9-]+ +(fp8|bf16|mxfp4)|rror" | sed "s|^|$label |"
}
ab_op_rows() {
  local old=$1 new=$2 round
  shift 2
  for round in 1 2; do
    op_rows "round=$round main" "$old" "$@"
    op_rows "round=$round new" "$new" "$@"
  done
}
env_ab_rows() {
  local log=$1 var=$2 values=$3 moe=$4 round v
  shift 4
  for round in 1 2; do
    for v in $values; do
      [ "$(cap 30 0)" -lt 30 ] && return
      (export "$var=$v" && op_rows "r$round $var=$v" "$moe" "$@") >> "$log"
    done
  done
}
grouped_forced_paths() {
  timeout "$(cap "$1" "$2")" $B/cuda_forced_paths_test --gtest_color=no \
    --gtest_filter='*GroupedGemmOnWgmmaAndMmaSync*' > $R/forced-paths.log 2>&1
  echo "forced paths rc $? t=$(el)"
  grep -E "^\[  (PASSED|FAILED)|Failure|(ahead|overlapped) fp8_block\] M=400 |swapped.*quantised.* fp8_block\].*M=40 |DIFFER" \
    $R/forced-paths.log | head -16
  pack
}
bench_ab() {
  local log=$1 var=$2 values=$3 moe=$4
  shift 4
  [ "$(cap 30 0)" -lt 30 ] && return
  timeout "$(cap 120 0)" "$moe" bench "$@" --env-ab "$var=$values" --rounds "${ROUNDS:-2}" 2>&1 |
    grep -E "^[a-z0-9-]+ +(fp8|bf16|mxfp4)|rror" >> "$log"
  awk 'NF >= 12 { k = $1 " " $2 " M=" $3; if (!(k in seen)) { seen[k] = 1; order[++n] = k }
                  v[k] = v[k] " " $11 "/" $12 " " $4 }
       END { for (i = 1; i <= n; ++i) print order[i] ":" v[order[i]] }' "$log"
}
ab_means() {
  awk 'NF >= 12 { k = $1 " " $2 " M=" $3 " " $11; s[k] += $4; n[k]++ }
       END { for (k in s) printf "%s: %.2f us (mean of %d)\n", k, s[k] / n[k], n[k] }' "$1" | sort
}
ab_winner() {
  awk -v var="$2" -v off="$3" -v on="$4" \
    'NF >= 12 && index($11, var "=") == 1 { k = $1 " " $2 " " $3; v = substr($11, length(var) + 2)
       if (v == off) { a[k] += $4; na[k]++ } else if (v == on) { b[k] += $4; nb[k]++ } }
     END { won = 0; for (k in a) { if (!(k in b)) { won = -1; break }
             if (b[k] / nb[k] <= 0.998 * a[k] / na[k]) { if (won == 0) won = 1 } else { won = -1; break } }
           print (won == 1 ? on : off) }' "$1"
}
# VAR's values against each other (bench_ab) on every shape the grouped GEMM's swapped kernel serves from 8 to
# 256 tokens: Qwen3-30B-A3B fp8 and bf16, the other shapes fp8 at 16, 64 and 256.
every_shape_ab() {
  bench_ab "$1" "$2" "$3" $B/moe --shapes qwen3-30b-a3b --formats fp8_block,bf16 --M 8,16,32,64,128,256
  bench_ab "$1" "$2" "$3" $B/moe --shapes qwen3-next-80b-a3b,qwen3-235b-a22b-tp8,deepseek-v3-tp8,deepseek-v3 \
    --formats fp8_block --M 16,64,256
}
# 1 where VAR=1 loses nowhere against VAR=0 in a bench_ab log: every shape, format and M with on's mean at
# most 0.5 % above off's, and one at least 1 % below; else 0 (each losing row to stderr).
loses_nowhere() {
  awk -v var="$2" 'NF >= 12 && index($11, var "=") == 1 { k = $1 " " $2 " " $3; v = substr($11, length(var) + 2)
      if (v == "0") { a[k] += $4; na[k]++ } else if (v == "1") { b[k] += $4; nb[k]++ } }
    END { ok = 1; gain = 0; for (k in a) { if (!(k in b)) { ok = 0; continue }
            r = (b[k] / nb[k]) / (a[k] / na[k]); if (r > 1.005) { ok = 0; print "loses " k " " r > "/dev/stderr" }
            if (r < 0.99) gain = 1 }
          print (ok && gain) ? 1 : 0 }' "$1"
}
pivot_rows() {
  awk '{print $1, $2, $3, $4, $5, $6}' "$1" | sort -k3,3 -k4,4 -k5,5n -k2,2 -k1,1 |
    awk '{k=$3" "$4" "$5; if (k!=last) {printf "\n%s %s M=%s:", $3, $4, $5; last=k} printf " %s/%s %s", $1, $2, $6}'
  echo
}
one_token_stalls() {
  local moe=$1 res=$2 run
  shift 2
  local args="bench --shapes qwen3-30b-a3b --formats fp8_block --M 1 --copies 2"
  for run in "$@"; do
    set -- $run
    [ "$(cap 25 "$res")" -lt 25 ] && break
    mkdir -p $R/s$1-$2
    BENCH_ARGS="$args" NCU_SKIP=$1 NCU_SAMPLING=0 NCU_CACHE_CONTROL=$2 OUT=$R/s$1-$2 \
      timeout "$(cap 50 "$res")" scripts/profile-stalls swap_ab_kernel "$moe" > $R/s$1-$2/run.log 2>&1
    echo "stalls skip $1 cache $2 rc $? t=$(el)"
    grep -E "Duration|Warp Cycles Per Issued|No Instruction|Stall Wait|Stall Barrier|Long Scoreboard" \
      $R/s$1-$2/stalls-*-details.txt 2>/dev/null | head -6
    rm -f $R/*/*.ncu-rep
    pack
  done
}
prologue_ncu() {
  local shape=$1 b ncu
  shift
  ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
  for b in "$@"; do
    timeout 30 "$ncu" --clock-control none -k 'regex:prologue' --launch-skip 24 --launch-count 2 \
      --metrics gpu__time_duration.sum "$b" bench --shapes "$shape" --formats fp8_block --M 1 --copies 2 2>&1 |
      grep -E "gpu__time" | sed "s|^|$b $shape |"
  done
}
quick_gpu_check() {
  mkdir -p $R/gc
  GPU_CHECK_NO_TP=1 GPU_CHECK_NO_EXPERIMENTS=1 MOE_BIN=$1 OUT=$R/gc timeout "$(cap 330 "${2:-5}")" scripts/gpu-check \
    > $R/gc/gc.log 2>&1
  echo "gpu-check rc $? t=$(el)"
  grep -E "^\[  FAILED" $R/gc/gpu-tests.log | head
  sed -n '/== summary/,/moe bench/p' $R/gc/gc.log | head -9
  grep -E "fp8_block M=(1|8|64|4096) .*auto|deepseek-v3 .*M=1 " $R/gc/gc.log | head -8
  grep -E "^ *(decode|prefill)" $R/gc/model-bench.log | head -5
}
tp_cli() {
  timeout "$(cap "$2" 5)" python3 scripts/tp-gpu-check "$1" $R/tp > $R/tp.log 2>&1
  echo "tp-gpu-check rc $? t=$(el)"
  grep -E "TP [0-9]|FAIL" $R/tp.log | tail -14
  rm -rf $R/tp
}
read_sweep() {
  timeout "$(cap 40 5)" "$1" bench --read-sweep > $R/read-sweep.log 2>&1
  echo "read sweep rc $?"
  grep -v "^read sweep" $R/read-sweep.log | tail -40
}
queue_probe() {
  timeout "$(cap 90 5)" "$1" > $R/queue-latency.log 2>&1
  echo "probe rc $?"
  cat $R/queue-latency.log
}
path_thresholds() {
  local moe=$1 shapes=$2 formats=$3 m=$4 res=$5
  [ "$(cap 100 "$res")" -lt 60 ] && return
  PT_SHAPES=$shapes PT_FORMATS=$formats PT_M=$m timeout "$(cap 100 "$res")" scripts/path-thresholds "$moe" \
    > $R/path-thresholds.log 2>&1
  echo "path thresholds rc $?"
  grep -vE "^path-thresholds:" $R/path-thresholds.log | tail -16
  pack
}
swap_gemm_ncu() {
  local moe=$1 res=$2 fmt ncu
  ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
  for fmt in fp8_block bf16; do
    [ "$(cap 40 "$res")" -lt 30 ] && break
    timeout "$(cap 40 "$res")" "$ncu" --clock-control none -k regex:wgmma_swap --launch-count 16 \
      --metrics gpu__time_duration.sum,dram__bytes_read.sum "$moe" bench --shapes qwen3-30b-a3b \
      --formats $fmt --M 64,256 --copies 2 > $R/swap-gemm-ncu-$fmt.log 2>&1
    echo "swap GEMM ncu $fmt rc $?"
    grep -E "expert_wgmma_swap_kernel|gpu__time|dram__bytes" $R/swap-gemm-ncu-$fmt.log |
      sed -E 's/\(MmaKernelArgs.*//' | head -48
    pack
  done
}
call_kernels_ncu() {
  local moe=$1 m ncu
  shift
  ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
  for m in "$@"; do
    [ "$(cap 45 10)" -lt 35 ] && break
    timeout "$(cap 45 10)" "$ncu" --clock-control none --cache-control none \
      -k 'regex:prologue|route|align|group_|fp8_rows|wgmma|combine|swap_ab|expert_' --launch-skip 40 \
      --launch-count 14 --metrics gpu__time_duration.sum "$moe" bench --shapes qwen3-30b-a3b \
      --formats fp8_block --M "$m" > "$R/call-ncu-m$m.log" 2>&1
    echo "call kernels ncu M=$m rc $?"
    awk '/^  [a-z].*\(/ { name = $0; sub(/\(.*/, "", name); sub(/<.*/, "", name); sub(/.*[ :]/, "", name)
                          match($0, /\) \([0-9, ]+\)x/); grid = substr($0, RSTART + 3, RLENGTH - 5) }
         /gpu__time_duration.sum/ { t = $NF; gsub(/,/, "", t); u = $(NF - 1)
                                   t = u == "ms" ? t * 1000 : u == "ns" ? t / 1000 : t; sum += t; printf "  %-28s %-12s %8.2f\n", name, grid, t }
         END { printf "  sum of kernels %.2f us\n", sum }' "$R/call-ncu-m$m.log"
    pack
  done
}
clocks_start() {
  nvidia-smi --query-gpu=clocks.sm,clocks.mem,utilization.gpu --format=csv,noheader,nounits -lms 200 \
    > "$1" 2>&1 &
  clocks_pid=$!
  clocks_file=$1
}
clocks_stop() {
  [ -n "${clocks_pid:-}" ] && kill "$clocks_pid" 2>/dev/null
  clocks_pid=
  awk -F', ' '$3 > 50 { print $1 }' "$clocks_file" | sort -n |
    awk '{ sm[++n] = $1; s += $1 } END { if (!n) { print "clocks: no busy samples"; exit }
      printf "clocks: %d busy samples, SM MHz min %d median %d max %d, mean %.0f\n", n, sm[1],
      sm[int((n + 1) / 2)], sm[n], s / n }'
}
swap_ab_timeline() {
  local moe=$1 m
  shift
  for m in "$@"; do
    [ "$(cap 25 30)" -lt 25 ] && break
    MOE_SWAP_AB_TIMELINE=1 timeout "$(cap 30 30)" "$moe" bench --shapes qwen3-30b-a3b --formats fp8_block \
      --M "$m" --paths auto > $R/swtl-m$m.log 2>&1
    echo "swap-AB timeline M=$m rc $?"
    grep -E "^qwen3|stage" $R/swtl-m$m.log | tail -14
    pack
  done
}
wgmma_cycles() {
  local moe=$1 var=$2 values=$3 shape=${5:-qwen3-30b-a3b} m v log
  for m in ${4//,/ }; do
    for v in $values; do
      [ "$(cap 25 20)" -lt 25 ] && return
      log=$R/cycles-m$m-$var-$v.log
      [ "$shape" = qwen3-30b-a3b ] || log=$R/cycles-$shape-m$m-$var-$v.log
      env "$var=$v" timeout "$(cap 30 20)" "$moe" bench --shapes "$shape" --formats fp8_block --M "$m" \
        > "$log" 2>&1
      echo "wgmma cycles $shape M=$m $var=$v rc $?"
      grep -E "cycles \(|stage [12] (consumers|copier)" "$log" | head -10
      pack
    done
  done
}
stop_on_fault() {
  grep -qE "^\[  FAILED|exception|illegal|trap" $R/forced-paths.log || return 1
  local san
  san=$(find /usr/local/cuda/ /usr/local/cuda-1*/ /opt -name compute-sanitizer -type f 2>/dev/null | head -1)
  env "$@" timeout "$(cap 120 5)" "${san:-compute-sanitizer}" --print-limit 4 $B/moe bench \
    --shapes qwen3-30b-a3b --formats fp8_block --M 64 > $R/sanitizer.log 2>&1
  echo "sanitizer rc $? ($san)"
  grep -vE "^moe: no tuned" $R/sanitizer.log | head -40
  pack
}
start_plan() {
  unpack_carry "$1" /tmp/carry || return 1
  rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
  B=/tmp/carry/bin  # read by the sourcing plan
  export B
  if [ -n "${2:-}" ]; then
    tar -C /tmp/carry -xJf "$2" 2>/dev/null || echo "no extra binaries ($2)"
  fi
}
