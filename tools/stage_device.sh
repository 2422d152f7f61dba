#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds here what the GPU machine runs, into stage/ (git-ignored; pass it in `carry`):
#   stage/cco-*.whl          the wheel (libcco.so, bitcode, package)
#   stage/bin/*              host test binaries that run on the real driver, the tcp benchmark, vmm_probe,
#                            gda_rtt_probe
#   stage/untraced-*.bc      the sm_90 bitcode without trace points (-DCCO_DEVICE_TRACE=0), what
#                            tests/gpu/test_trace_gpu.py measures the shipped one's trace points against
# The GPU machine then runs tests/gpu/run_all.sh from the working tree.
set -euo pipefail
cd "$(dirname "$0")/.."
bazel build //tools/wheel //tests/trace:untraced_nvptx >/dev/null
# Linked statically: the test must not need Bazel's shared objects over there.
bazel build --dynamic_mode=off //tests/host/platform:gpu_platform_test //tools/perf:gda_tcp_bench //tools/perf:socket_poll_probe >/dev/null
rm -rf stage
mkdir -p stage/bin
cp "$(ls -t bazel-bin/tools/wheel/cco-*.whl | head -1)" stage/  # the wheel just built
cp bazel-bin/tests/host/platform/gpu_platform_test bazel-bin/tools/perf/gda_tcp_bench bazel-bin/tools/perf/socket_poll_probe stage/bin/
cp bazel-bin/tests/trace/untraced-nvptx-sm_90-proxy.bc stage/
nvcc -std=c++17 -O2 tools/perf/vmm_probe.cu -lcuda -o stage/bin/vmm_probe  # what the VMM calls cost
nvcc -std=c++17 -O2 tools/perf/copy_enqueue_probe.cu -lcuda -o stage/bin/copy_enqueue_probe  # a proxy's copies
# Whether a proxy's copies queue faster from several host threads (contexts of their own).
nvcc -std=c++17 -O2 tools/perf/copy_workers_probe.cu -lcuda -o stage/bin/copy_workers_probe
# Whether a copy on one GPU progresses while spinning kernels hold every SM (the SDMA transport's case).
nvcc -std=c++17 -O2 -arch=sm_90 -I. tools/perf/copy_busy_sms_probe.cu -lcuda -o stage/bin/copy_busy_sms_probe
# Whether programs polling a word (host or device memory) slow a stream's copies (SDMA's waiters).
nvcc -std=c++17 -O2 -arch=sm_90 -I. tools/perf/copy_beside_pollers_probe.cu -lcuda \
  -o stage/bin/copy_beside_pollers_probe
# What the proxy's completion words cost: stream writes, batched, or host stores the GPU polls.
nvcc -std=c++17 -O2 -arch=sm_90 tools/perf/stream_write_probe.cu -lcuda -o stage/bin/stream_write_probe
# What the release in a ring's post costs a round trip, against flag words with no fence.
nvcc -std=c++17 -O2 -arch=sm_90 -I. tools/perf/ring_post_probe.cu -o stage/bin/ring_post_probe
# Which driver calls wait for a running kernel (a proxy must not make them while one waits for it).
nvcc -std=c++17 -arch=sm_90 -O2 tools/perf/blocking_call_probe.cu -lcuda -o stage/bin/blocking_call_probe
# Where a GDA round trip goes; linked against the wheel's libcco.so where run_all.sh installs it.
nvcc -std=c++17 -arch=sm_90 -O2 -I. -Ihost/include tools/perf/gda_rtt_probe.cu -Lbazel-bin/host -lcco \
  -Xlinker -rpath=/tmp/site/cco/_data -o stage/bin/gda_rtt_probe
# What each way of releasing a block-wide barrier round costs.
nvcc -std=c++17 -arch=sm_90 -O2 -I. -Ihost/include tools/perf/barrier_fence_probe.cu -Lbazel-bin/host -lcco \
  -Xlinker -rpath=/tmp/site/cco/_data -o stage/bin/barrier_fence_probe
# The GDA doorbell: many warps ringing one ring leave a chain of marks that reaches the device maximum.
nvcc -std=c++17 -arch=sm_90 -O2 -I. tools/perf/ring_doorbell_probe.cu -o stage/bin/ring_doorbell_probe
chmod -R u+w stage
du -sh stage
