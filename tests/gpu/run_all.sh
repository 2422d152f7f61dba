#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every GPU check, on the device machine, from the repository root with stage/ carried:
#   bash tests/gpu/run_all.sh [pytest|fail-bounded|examples|gda|gda-tcp|torchrun|sdma|sdma-diag|perf|perf-launch|two-gpus|probe|tcp|perf-procs|anchor|ops|trace ...]   (default: all)
#   (device-ab: this tree's device bitcode against stage/old's, tools/perf/stage_old_bitcode.sh;
#    sdma-ways: the proxy's ways of queueing copies against each other)
#   (ops also in parts that each fit a device call: ops-quick ops-lsa ops-gda ops-sdma ops-sdma-context ops-sdma-status ops-sdma-repeat
#   ops-examples ops-bench ops-core)
# Logs and results go to $OUT; the device tool brings back at most 8 files, so
# `RUN_ALL_TAR=$OUT/all.tgz OUT=/tmp/o bash tests/gpu/run_all.sh STEP...` packs them all into one.
# NVLink multicast stays off.
set -uo pipefail
OUT=${OUT:-/tmp/cco-out}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export CCO_TIMEOUT_MS=${CCO_TIMEOUT_MS:-20000} PYTHONUNBUFFERED=1 CCO_STAGE=$PWD/stage
steps=("$@")
[[ ${#steps[@]} -eq 0 ]] && steps=(pytest fail-bounded examples gda gda-tcp torchrun sdma perf perf-launch two-gpus probe tcp perf-procs anchor ops trace)

python3 -m pip install -q --upgrade --no-index --no-deps --target /tmp/site stage/cco-*.whl >/dev/null || exit 1
export PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
nvidia-smi topo -m > "$OUT/topo.txt" 2>&1

mps_start() {
  # Processes started by pytest rather than cco.launch get the launcher's hardware work queues
  # too (docs/gda.md, "Streams and threads": MPS gives a client too few by default).
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog CUDA_DEVICE_MAX_CONNECTIONS=8
  mkdir -p /tmp/mps /tmp/mpslog
  nvidia-cuda-mps-control -d && sleep 1
}
mps_stop() {  # the daemon gone and its variables unset: later steps run without MPS
  echo quit | nvidia-cuda-mps-control
  for _ in $(seq 50); do pgrep -f nvidia-cuda-mps-control >/dev/null || break; sleep 0.1; done
  unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY CUDA_DEVICE_MAX_CONNECTIONS
}

for step in "${steps[@]}"; do
  echo "=== $step"
  case $step in
    pytest)
      timeout 900 python3 -m pytest -q -p no:cacheprovider tests/gpu --ignore=tests/gpu/test_fail_bounded_gpu.py \
        --junitxml="$OUT/gpu-junit.xml" -ra 2>&1 | tee "$OUT/pytest.log" | tail -40 ;;
    fail-bounded)
      # A rank process SIGKILLed at each phase while the others' kernels wait (ranks share
      # GPUs: under MPS their kernels run at once, without it they time-slice; a death is seen
      # later under MPS, so both); the figures and the proxy's steps are printed.
      for mode in mps plain; do
        [[ $mode == mps ]] && mps_start
        CCO_TRACE_PHASES=1 timeout 900 python3 -m pytest -q -s -p no:cacheprovider tests/gpu/test_fail_bounded_gpu.py \
          --junitxml="$OUT/fail-bounded-$mode-junit.xml" -ra > "$OUT/fail-bounded-$mode.log" 2>&1
        grep -E "fail_bounded_gpu|passed|failed|Error" "$OUT/fail-bounded-$mode.log" | tail -60
        [[ $mode == mps ]] && mps_stop
      done ;;
    examples)
      mps_start
      {
        python3 -m cco.launch -n 2 --timeout 120 examples/triton/lsa_copy.py && echo "lsa_copy 2 ranks: PASS"
        python3 -m cco.launch -n 4 --timeout 120 examples/triton/allreduce_oneshot.py && echo "allreduce 4 ranks: PASS"
        python3 -m cco.launch -n 8 --timeout 120 examples/triton/allreduce_oneshot.py --elements 100000 &&
          echo "allreduce 8 ranks: PASS"
        nvcc -std=c++17 -arch=sm_90 -I. -I/tmp/site/cco/_data/include examples/cpp/lsa_put.cu \
          -L/tmp/site/cco/_data -lcco -Xlinker -rpath=/tmp/site/cco/_data -o /tmp/lsa_put &&
          python3 -m cco.launch -n 2 --timeout 120 /tmp/lsa_put && echo "C++ lsa_put 2 ranks: PASS"
        python3 -m cco.launch -n 4 --timeout 120 /tmp/lsa_put && echo "C++ lsa_put 4 ranks: PASS"
        python3 -m cco.launch -n 2 --timeout 120 examples/python/02_lsa_put.py && echo "python 02_lsa_put 2 ranks: PASS"
        python3 -m cco.launch -n 2 --timeout 120 examples/python/01_barrier.py && echo "python 01_barrier 2 ranks: PASS"
        python3 -m cco_tools doctor && echo "cco doctor: PASS"
      } 2>&1 | tee "$OUT/examples.log"
      mps_stop ;;
    gda)
      # GDA through the proxies: the platform's stream work, the GDA tests, the examples
      # and the perf suite, ranks as processes (two on one GPU run at once under MPS).
      mps_start
      {
        for graphs in 0 1; do  # copies one by one, and as launches of prepared graphs
          CCO_COPY_GRAPHS=$graphs timeout 60 stage/bin/gpu_platform_test --gtest_filter='Cuda*:Cpu*' 2>&1 |
            grep -E "OK \]|FAILED|PASSED|Failure"
        done
        # (the matrix and the gets of every size run in the pytest step, with every GPU test)
        timeout 400 python3 -m pytest -q -s -p no:cacheprovider tests/gpu/test_gda_gpu.py \
          -k "not test_gda_matrix and not test_gets_land_exactly" 2>&1 | tail -15
        python3 -m cco.launch -n 2 --timeout 120 examples/triton/gda_modes.py && echo "gda_modes 2 ranks: PASS"
        nvcc -std=c++17 -arch=sm_90 -I. -Ihost/include examples/cpp/gda_put.cu -L/tmp/site/cco/_data -lcco \
          -Xlinker -rpath=/tmp/site/cco/_data -o /tmp/gda_put &&
          python3 -m cco.launch -n 2 --timeout 120 /tmp/gda_put && echo "C++ gda_put 2 ranks: PASS"
        python3 -m cco.launch -n 4 --timeout 120 /tmp/gda_put && echo "C++ gda_put 4 ranks: PASS"
        timeout 300 python3 -m cco_tools launch -n 2 -m cco_tools perf --suites gda --max-size 256M \
          --json "$OUT/perf-gda.json" > "$OUT/perf-gda.txt" 2> "$OUT/perf-gda.err"
        echo "perf gda: exit $?"; tail -3 "$OUT/perf-gda.err"
        python3 -m cco_tools.perf.report "$OUT/perf-gda.json"
      } 2>&1 | tee "$OUT/gda.log"
      mps_stop ;;
    gda-tcp)
      # GDA through the tcp backend on one machine: two virtual nodes (CCO_TEST_NODES_PER_HOST)
      # joined by tcp over loopback (CCO_NET=tcp), so payloads go device -> pinned chunk ->
      # socket -> pinned chunk -> device on the backend's stream.
      mps_start
      {
        [[ -x /tmp/gda_put ]] || nvcc -std=c++17 -arch=sm_90 -I. -Ihost/include examples/cpp/gda_put.cu \
          -L/tmp/site/cco/_data -lcco -Xlinker -rpath=/tmp/site/cco/_data -o /tmp/gda_put
        export CCO_NET=tcp CCO_TEST_NODES_PER_HOST=2 CCO_SOCKET_IFNAME="=lo"
        python3 -m cco.launch -n 2 --timeout 120 examples/triton/gda_modes.py && echo "gda_modes over tcp, 2 ranks: PASS"
        python3 -m cco.launch -n 2 --timeout 120 /tmp/gda_put && echo "C++ gda_put over tcp, 2 ranks: PASS"
        python3 -m cco.launch -n 4 --timeout 120 /tmp/gda_put && echo "C++ gda_put over tcp, 4 ranks: PASS"
        unset CCO_NET CCO_TEST_NODES_PER_HOST CCO_SOCKET_IFNAME
      } 2>&1 | tee "$OUT/gda-tcp.log"
      mps_stop ;;
    torchrun)
      # The guide's Triton test, one transport per run, 2 ranks under torchrun (one GPU: MPS).
      mps_start
      {
        for t in lsa sdma gda; do
          CCO_ENABLE_SDMA=1 timeout 180 torchrun --standalone --nproc_per_node=2 examples/triton/test_triton_cco.py \
            --transport $t && echo "test_triton_cco --transport $t, 2 ranks under torchrun: PASS"
        done
      } 2>&1 | tee "$OUT/torchrun.log"
      mps_stop ;;
    sdma)
      # SDMA through the copy-engine queues: the example and the perf suite, ranks as
      # processes (two on one GPU run at once under MPS).
      mps_start
      {
        CCO_ENABLE_SDMA=1 python3 -m cco.launch -n 2 --timeout 120 examples/triton/sdma_put.py &&
          echo "sdma_put 2 ranks: PASS"
        CCO_ENABLE_SDMA=1 python3 -m cco.launch -n 4 --timeout 120 examples/triton/sdma_put.py &&
          echo "sdma_put 4 ranks: PASS"
        CCO_ENABLE_SDMA=1 python3 -m cco.launch -n 2 --timeout 120 examples/triton/sdma_put.py --pointers &&
          echo "sdma_put on resolved pointers 2 ranks: PASS"
        nvcc -std=c++17 -arch=sm_90 -I. -Ihost/include examples/cpp/sdma_put.cu -L/tmp/site/cco/_data -lcco \
          -Xlinker -rpath=/tmp/site/cco/_data -o /tmp/sdma_put &&
          CCO_ENABLE_SDMA=1 python3 -m cco.launch -n 2 --timeout 120 /tmp/sdma_put && echo "C++ sdma_put 2 ranks: PASS"
        CCO_ENABLE_SDMA=1 python3 -m cco.launch -n 3 --timeout 120 /tmp/sdma_put && echo "C++ sdma_put 3 ranks: PASS"
        timeout 300 python3 -m cco_tools launch -n 2 -m cco_tools perf --suites sdma --max-size 256M \
          --json "$OUT/perf-sdma.json" > "$OUT/perf-sdma.txt" 2> "$OUT/perf-sdma.err"
        echo "perf sdma: exit $?"; tail -3 "$OUT/perf-sdma.err"
        python3 -m cco_tools.perf.report "$OUT/perf-sdma.json"
      } 2>&1 | tee "$OUT/sdma.log"
      mps_stop ;;
    sdma-diag)
      # Where an SDMA put's time goes, one program and eight posting to one queue (the trace's
      # steps: tools/perf/sdma_timeline_probe.py), and whether the driver calls the prepared copy
      # graphs make wait for a kernel that another thread waits for; then the bandwidth table
      # with the graphs off and on. Waits bounded at 5 s: a stalled shape costs seconds, not the call.
      stage/bin/blocking_call_probe host-waits 2>&1 | tee "$OUT/blocking-host-waits.txt" | grep -i graph
      mps_start
      for graphs in ${SDMA_DIAG_GRAPHS:-0 1}; do  # SDMA_DIAG_GRAPHS=0: the default way alone
        rm -rf /tmp/cco-sdma-trace && mkdir -p /tmp/cco-sdma-trace
        CCO_COPY_GRAPHS=$graphs CCO_TIMEOUT_MS=5000 CCO_ENABLE_SDMA=1 CCO_TRACE=/tmp/cco-sdma-trace timeout 90 \
          python3 -m cco.launch -n 2 --timeout 80 tools/perf/sdma_timeline_probe.py "$OUT/sdma-timeline-g$graphs" \
          2>&1 | tee "$OUT/sdma-timeline-g$graphs.txt" | grep "a put"
        CCO_COPY_GRAPHS=$graphs CCO_TIMEOUT_MS=5000 CCO_ENABLE_SDMA=1 timeout 120 python3 -m cco_tools launch -n 2 \
          -m cco_tools perf --suites sdma --quick --max-size 16M --json "$OUT/perf-sdma-g$graphs.json" \
          > "$OUT/perf-sdma-g$graphs.txt" 2>&1
        echo "perf sdma, CCO_COPY_GRAPHS=$graphs: exit $?"
      done
      mps_stop ;;
    perf)
      # One process per suite, each bounded: a stuck suite costs its own figures only.
      for suite in put,get allreduce barrier host; do
        name=${suite//,/-}
        timeout "${PERF_SUITE_TIMEOUT:-300}" python3 -m cco_tools perf --suites "$suite" --json \
          > "$OUT/perf-$name.json" 2> "$OUT/perf-$name.err"
        echo "perf $suite: exit $?"; tail -3 "$OUT/perf-$name.err"
        python3 -m cco_tools.perf.report "$OUT/perf-$name.json"
      done
      ;;
    perf-launch)
      # The all-reduce per launch (graph and eager) with its fast path, one process per rank.
      # On one GPU the two processes share it (MPS) and the NCCL / SymmetricMemory peers read
      # n/a (they need a GPU per rank); on two GPUs every column is measured.
      [[ $(nvidia-smi -L | wc -l) -lt 2 ]] && mps_start
      timeout 400 python3 -m cco_tools perf --launch processes -n 2 --suites launch --json \
        > "$OUT/perf-launch.json" 2> "$OUT/perf-launch.err"
      echo "perf launch: exit $?"; tail -3 "$OUT/perf-launch.err"
      python3 -m cco_tools.perf.report "$OUT/perf-launch.json"
      [[ $(nvidia-smi -L | wc -l) -lt 2 ]] && mps_stop ;;
    two-gpus)
      # The figures the issues ask of 2 GPUs, one process per GPU (no MPS): the all-reduce per
      # launch with NCCL and SymmetricMemory beside it, LSA put and barrier, GDA and SDMA
      # bandwidth, round trips and the SDMA-beside-compute overlap. One suite per process and
      # report (a failure costs that suite only), each bounded by TWO_GPU_TIMEOUT; to stay
      # within one device call (600 s), name a few suites per call:
      #   TWO_GPU_SUITES=launch bash tests/gpu/run_all.sh two-gpus
      #   TWO_GPU_SUITES="put barrier" bash tests/gpu/run_all.sh two-gpus
      #   TWO_GPU_SUITES="gda sdma" bash tests/gpu/run_all.sh two-gpus
      # then the correctness runs on both GPUs: bash tests/gpu/run_all.sh pytest torchrun gda-tcp
      if [[ $(nvidia-smi -L | wc -l) -lt 2 ]]; then echo "two-gpus: needs 2 GPUs, skipped"; continue; fi
      for suite in ${TWO_GPU_SUITES:-launch put barrier gda sdma}; do
        sdma=0
        [[ $suite == sdma ]] && sdma=1  # SDMA queues only where measured: the other suites as users run them
        # A cold Triton cache: one rank compiles while the other waits at a host barrier.
        CCO_ENABLE_SDMA=$sdma CCO_TIMEOUT_MS=60000 timeout "${TWO_GPU_TIMEOUT:-400}" python3 -m cco_tools perf \
          --launch processes -n 2 --suites "$suite" --max-size 256M --json > "$OUT/perf2-$suite.json" \
          2> "$OUT/perf2-$suite.err"
        echo "perf $suite on 2 GPUs: exit $?"; tail -2 "$OUT/perf2-$suite.err"
        python3 -m cco_tools.perf.report "$OUT/perf2-$suite.json"
      done
      # The issues' targets judged on every report of this run so far (met / missed / not measured).
      python3 tools/perf/issue_targets.py "$OUT" | tee "$OUT/issue-targets.md" ;;
    probe)
      # Where a GDA round trip's time goes (posting vs waiting, against a raw flag bounce and
      # its fence): tools/perf/gda_rtt_probe.cu, built by tools/stage_device.sh.
      mps_start
      timeout 120 python3 -m cco.launch -n 2 --timeout 100 stage/bin/gda_rtt_probe 2>&1 | tee "$OUT/gda-rtt-probe.txt"
      # The same through the proxy alone, the LSA senders' signal words in host memory (CPU stores)
      # or in device memory (stream writes), and the first one's timeline (docs/gda.md).
      for hw in 1 0; do
        rm -rf /tmp/cco-rtt-trace && mkdir -p /tmp/cco-rtt-trace
        CCO_GDA_HOST_SIGNALS=$hw CCO_GDA_DIRECT_MAX_BYTES=0 CCO_TRACE=/tmp/cco-rtt-trace timeout 120 \
          python3 -m cco.launch -n 2 --timeout 100 stage/bin/gda_rtt_probe 2>&1 | tee "$OUT/gda-rtt-proxy-hw$hw.txt"
        python3 tools/perf/proxy_timeline.py /tmp/cco-rtt-trace | tee "$OUT/proxy-timeline-hw$hw.txt"
      done
      # And a block-wide barrier round for each way of releasing it.
      timeout 120 python3 -m cco.launch -n 2 --timeout 100 stage/bin/barrier_fence_probe 2>&1 |
        tee "$OUT/barrier-fence-probe.txt"
      mps_stop
      # What the proxy's completion words cost: stream writes, and CPU stores the GPU polls (one
      # thread polling, and a block of 128).
      timeout 60 stage/bin/stream_write_probe 20000 2>&1 | tee "$OUT/stream-write-probe.txt"
      # What a ring post's release, its reservation and the whole ring::Post cost a round trip.
      timeout 60 stage/bin/ring_post_probe 20000 2>&1 | tee "$OUT/ring-post-probe.txt"
      # Which driver calls wait for a running kernel of their context.
      timeout 60 stage/bin/blocking_call_probe 2>&1 | tee "$OUT/blocking-call-probe.txt"
      # The GDA doorbell rung by many warps at once: the chain of marks reaches the device maximum.
      timeout 120 stage/bin/ring_doorbell_probe 2>&1 | tee "$OUT/ring-doorbell-probe.txt"
      # What a proxy's copy costs the driver's host side, queued by 1 to 8 threads (the copy lanes).
      timeout 120 stage/bin/copy_workers_probe 1024 384 2>&1 | tee "$OUT/copy-workers-probe.txt" ;;
    tcp)
      # The tcp backend's round trips and bandwidth against a bare socket (cpu platform: no GPU
      # work, but this machine's cores), and the floor under them: a bare round trip with each
      # way of waiting for a socket's bytes.
      cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null
      timeout 120 stage/bin/socket_poll_probe 2000 | tee "$OUT/socket-poll-probe.txt"
      timeout 400 python3 -m cco_tools perf --platform cpu --suites tcp --json > "$OUT/perf-tcp.json" 2> "$OUT/perf-tcp.err"
      echo "perf tcp: exit $?"; tail -2 "$OUT/perf-tcp.err"
      python3 -m cco_tools.perf.report "$OUT/perf-tcp.json"
      ;;
    perf-procs)
      # Ranks as processes (what one process per GPU does), two of them sharing the one
      # GPU: under MPS, so their kernels run at once.
      mps_start
      timeout 300 python3 -m cco_tools perf --launch processes -n 2 --quick --suites put,barrier,allreduce \
        > "$OUT/perf-procs.txt" 2> "$OUT/perf-procs.err"
      echo "perf --launch processes: exit $?"; cat "$OUT/perf-procs.txt"; tail -3 "$OUT/perf-procs.err"
      mps_stop ;;
    trace)
      # The device-side trace (docs/trace.md): the GPU suites traced, the ranks' files merged and
      # checked; then tests/gpu/test_trace_gpu.py (its cost figures against the staged untraced bitcode).
      mps_start
      rm -rf "$OUT/trace"
      timeout 600 python3 -m cco_tools perf --quick --suites gda,sdma,barrier --trace "$OUT/trace" > "$OUT/trace-perf.txt" 2>&1
      echo "perf --trace: exit $?"
      python3 -m cco_tools trace merge "$OUT/trace" -o "$OUT/trace-all.json" && python3 -m cco_tools trace check "$OUT/trace-all.json"
      mps_stop
      timeout 900 python3 -m pytest -q -s -p no:cacheprovider tests/gpu/test_trace_gpu.py -ra 2>&1 | tee "$OUT/trace.log" | tail -30 ;;
    device-ab)
      # A change of the device library alone, timed against an earlier commit's bitcode with one
      # host library: `bash tools/perf/stage_old_bitcode.sh REV` stages it in stage/old. Each
      # suite in DEVICE_AB_SUITES (default "sdma gda", --quick) runs with this tree's bitcode and
      # the old one (CCO_DEVICE_BC), in turns, DEVICE_AB_ROUNDS times (default 1), 2 rank
      # processes under MPS; each run bounded by DEVICE_AB_TIMEOUT (default 140 s). Sizes up to
      # 16 MiB: the bandwidth puts go to distinct slots of the span, so 1 MiB puts are 16 copies
      # the proxy may queue at once, not one place written over and over.
      old=stage/old/libcco_device-nvptx-sm_90-proxy.bc
      if [[ ! -f $old ]]; then echo "device-ab: no $old (tools/perf/stage_old_bitcode.sh)"; continue; fi
      mps_start
      for round in $(seq "${DEVICE_AB_ROUNDS:-1}"); do
        for suite in ${DEVICE_AB_SUITES:-sdma gda}; do
          for which in new old; do
            bc=(); [[ $which == old ]] && bc=(env CCO_DEVICE_BC="$PWD/$old")
            name=device-ab-$suite-$which-$round
            "${bc[@]}" env TRITON_CACHE_DIR="/tmp/cco-triton-$which" CCO_ENABLE_SDMA=1 \
              timeout "${DEVICE_AB_TIMEOUT:-140}" python3 -m cco_tools launch -n 2 -m cco_tools perf \
              --suites "$suite" --quick --max-size 16M --json "$OUT/$name.json" > "$OUT/$name.log" 2>&1
            rc=$?
            echo "$name (old: $(cat stage/old/REV 2>/dev/null)): exit $rc"
            python3 -m cco_tools.perf.report "$OUT/$name.json" 2>/dev/null | grep -iE "round trip|quiet|MiB|KiB|flush" | head -20
          done
        done
      done
      mps_stop ;;
    sdma-ways)
      # Which way of queueing the proxy's copies serves a stream of SDMA puts best, in one call:
      # the default (copy lanes), one lane, prepared graphs; then copy_workers_probe under MPS,
      # as the ranks run (the probe step runs it without).
      mps_start
      for way in default CCO_COPY_LANES=1 CCO_COPY_GRAPHS=1; do
        name=sdma-way-${way//[=_]/-}
        setting=(); [[ $way != default ]] && setting=("$way")
        env "${setting[@]}" CCO_ENABLE_SDMA=1 timeout 150 python3 -m cco_tools launch -n 2 -m cco_tools perf \
          --suites sdma --quick --max-size 16M --json "$OUT/$name.json" > "$OUT/$name.log" 2>&1
        echo "$name: exit $?"
        python3 -m cco_tools.perf.report "$OUT/$name.json" 2>/dev/null | grep -E "^ +[0-9]" | head -12
      done
      timeout 120 stage/bin/copy_workers_probe 1024 384 2>&1 | tee "$OUT/copy-workers-probe-mps.txt"
      mps_stop ;;
    ops-quick)
      # After a kernel change, from a cold Triton cache in one device call: every operator in
      # bf16 alone (CCO_TEST_OPS_DTYPES), LSA with 2 and 4 ranks, GDA and SDMA with 2.
      export TRITON_CACHE_DIR=${TRITON_CACHE_DIR:-/tmp/cco-triton} CCO_TEST_OPS_DTYPES=bfloat16
      mps_start
      for run in "2 ops graph split" "4 ops" "2 ops@gda graph@gda" "2 sdma"; do
        set -- $run
        n=$1; shift
        CCO_ENABLE_SDMA=1 timeout 200 python3 -m cco.launch -n "$n" --timeout 190 tests/gpu/test_ops.py "$@" \
          > "$OUT/ops-quick-$n-${1//@/-}.log" 2>&1
        echo "$n ranks, $*: exit $? ($(grep -c '] ok ' "$OUT/ops-quick-$n-${1//@/-}.log") checks ok," \
             "$(grep -c 'PASS' "$OUT/ops-quick-$n-${1//@/-}.log") PASS lines)"
      done
      mps_stop
      unset CCO_TEST_OPS_DTYPES ;;
    ops|ops-lsa|ops-gda|ops-sdma|ops-sdma-context|ops-sdma-status|ops-sdma-repeat|ops-examples|ops-bench|ops-core)
      # The fused GEMM + collective operators (cco.ops), rank processes sharing the GPU under
      # MPS. `ops` runs every part; each part alone fits one device call (600 s) once Triton's
      # cache (/tmp/cco-triton, kept while the machine stays warm) holds the kernels:
      #   ops-lsa:  every operator against torch with 1, 2 and 4 ranks, graph replay, the pool,
      #             bad operands, a rank that never calls
      #   ops-gda:  the same over GDA (one host; two virtual nodes over tcp), 2 and 4 ranks
      #   ops-sdma: every operator over SDMA, 2 and 4 ranks
      #   ops-sdma-context: the proxy's own context (docs/sdma.md): its stream work beside a module
      #             load, and the all-to-all pair's calls one by one with it and without it
      #             (CCO_PROXY_CONTEXT=0: the proxy may be held back, the quiet timing out)
      #   ops-sdma-status: every operator over SDMA, 25 calls of each at two shapes, and whether a
      #             copy needs an SM (why plans over copies leave planning.COPY_SMS free)
      #   ops-sdma-repeat: the 2-rank sdma case OPS_REPEAT (4) times, each under a fresh MPS
      #             daemon (gemm_a2a over SDMA fails now and then: docs/ops.md; a failed run can
      #             leave the GPU busy for the next), each run's verdict and first failure
      #   ops-examples, ops-bench (quick shapes unless OPS_FULL=1; every transport)
      #   ops-core: one rank, each operator against its own GEMM core and cuBLAS, and candidate
      #             faster cores (tools/perf/ops_core_probe.py); the one-rank bench with that anchor
      export TRITON_CACHE_DIR=${TRITON_CACHE_DIR:-/tmp/cco-triton}
      mps_start
      {
        parts=("${step#ops-}"); [[ $step == ops ]] && parts=(lsa gda sdma sdma-context sdma-status examples bench core)
        for part in "${parts[@]}"; do
          case $part in
            lsa|gda|sdma)
              k=$part; [[ $part == lsa ]] && k="not gda and not sdma"
              timeout 900 python3 -m pytest -q -s -p no:cacheprovider tests/gpu/test_ops.py -k "$k" \
                --junitxml="$OUT/ops-$part-junit.xml" -ra 2>&1 | tail -40 ;;
            sdma-context)
              timeout 60 stage/bin/gpu_platform_test --gtest_filter='*ProxyStreams*' 2>&1 |
                grep -E "OK \]|FAILED|PASSED|Failure|SKIPPED"
              for own in 1 0; do
                echo "CCO_PROXY_CONTEXT=$own:"
                CCO_PROXY_CONTEXT=$own CCO_ENABLE_SDMA=1 timeout 150 python3 -m cco.launch -n 2 --timeout 140 \
                  tools/perf/ops_a2a_sdma_probe.py 3 free gemm_a2a 2>&1 | grep -E "wrong|at rest"
                mps_stop; mps_start   # a failed run can leave the GPU busy for the next
              done ;;
            sdma-status)
              timeout 60 stage/bin/copy_busy_sms_probe | tee "$OUT/copy-busy-sms-probe.log"
              for shape in 200,96,300 256,128,512; do
                CCO_ENABLE_SDMA=1 CCO_TIMEOUT_MS=5000 timeout 120 python3 -m cco.launch -n 2 --timeout 110 \
                  tools/perf/ops_status_probe.py sdma $shape
              done ;;
            sdma-repeat)
              for run in $(seq "${OPS_REPEAT:-4}"); do
                mps_stop; mps_start
                CCO_ENABLE_SDMA=1 timeout 150 python3 -m cco.launch -n 2 --timeout 140 tests/gpu/test_ops.py sdma \
                  > "$OUT/ops-sdma-repeat-$run.log" 2>&1
                echo "sdma case, run $run: exit $? ($(grep -c '] ok ' "$OUT/ops-sdma-repeat-$run.log") checks ok)"
                grep -m1 "AssertionError: rank" "$OUT/ops-sdma-repeat-$run.log"
              done ;;
            examples)
              for ex in examples/ops/*.py; do
                for t in lsa gda; do
                  python3 -m cco.launch -n 2 --timeout 120 "$ex" --transport $t && echo "$(basename "$ex") $t 2 ranks: PASS"
                done
              done
              for ex in ag_gemm gemm_ag gemm_ar gemm_rs gemm_a2a a2a_gemm; do
                CCO_ENABLE_SDMA=1 python3 -m cco.launch -n 2 --timeout 120 examples/ops/$ex.py --transport sdma &&
                  echo "$ex.py sdma 2 ranks: PASS"
              done ;;
            bench)
              quick=--quick; [[ ${OPS_FULL:-0} == 1 ]] && quick=
              timeout 500 python3 -m cco_tools perf --suites ops -n 2 $quick --ops-transports lsa,gda,sdma \
                --json "$OUT/ops-bench.json" 2>&1 | tee "$OUT/ops-bench.txt" ;;
            core)
              timeout 300 python3 -m cco.launch -n 1 --timeout 290 tools/perf/ops_core_probe.py 2>&1 |
                tee "$OUT/ops-core-probe.log"
              timeout 400 python3 -m cco_tools perf --suites ops -n 1 --ops-transports lsa \
                --json "$OUT/ops-1rank.json" 2>&1 | tee "$OUT/ops-1rank.txt" ;;
          esac
        done
      } 2>&1 | tee "$OUT/$step.log"
      mps_stop ;;
    anchor)
      NV=$(python3 -c "import nvidia.nvshmem, os; print(os.path.dirname(nvidia.nvshmem.__file__))" 2>/dev/null ||
           python3 -c "import nvidia, os; print(os.path.join(nvidia.__path__[0], 'nvshmem'))")
      mkdir -p /tmp/nvlib && ln -sf "$NV"/lib/libnvshmem_host.so.3 /tmp/nvlib/libnvshmem_host.so
      nvcc -rdc=true -std=c++17 -arch=sm_90 -I"$NV/include" tools/perf/nvshmem_anchor.cu -L/tmp/nvlib -L"$NV/lib" \
        -lnvshmem_host -lnvshmem_device -lcuda -Xlinker -rpath="$NV/lib" -o /tmp/nvshmem_anchor 2>&1 | tail -5
      mps_start
      rm -f /tmp/anchor.uid
      for pe in 0 1; do
        ANCHOR_RANK=$pe ANCHOR_UID_FILE=/tmp/anchor.uid NVSHMEM_REMOTE_TRANSPORT=none timeout 300 /tmp/nvshmem_anchor &
      done
      wait
      mps_stop ;;
  esac
done 2>&1 | tee -a "$OUT/run_all.log"
if [[ -n ${RUN_ALL_TAR:-} ]]; then tar czf "$RUN_ALL_TAR" -C "$OUT" .; fi
