#!/bin/sh
# Done-when 2 of issue 3: the nvcc-built smoke program runs on simgpu, and ldd and LD_DEBUG
# show that simgpu's libraries, not /usr/local/cuda's, were loaded.
#   check_nvcc_smoke.sh <smoke binary> <simgpu lib dir> <injection library>
set -u
bin=$1 lib=$2 inj=$3
fail() { echo "FAIL: $*"; exit 1; }
export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

ldd "$bin" | grep -q "libcudart.so.13 => $lib/libcudart.so.13" ||
  fail "ldd does not resolve libcudart.so.13 to $lib: $(ldd "$bin" | grep cudart)"

out=$(LD_DEBUG=libs "$bin" 2>debug.log) || fail "smoke program failed: $out $(grep -v '^ *[0-9]*:' debug.log)"
echo "$out"
echo "$out" | grep -q "SMOKE OK" || fail "no SMOKE OK"
grep -q "calling init: $lib/libcudart.so.13" debug.log || fail "simgpu libcudart not initialised"
grep -q "calling init: $lib/libcuda.so.1" debug.log || fail "simgpu libcuda (dlopen'ed) not loaded"
if grep -E "calling init: .*/(usr/local/cuda|cuda-[0-9.]+)/.*lib(cudart|cuda|cupti|nccl)\.so" debug.log; then
  fail "a real CUDA library was loaded"
fi
echo "LD_DEBUG: loaded $(grep -o "calling init: $lib/[a-z.0-9]*" debug.log | sed 's/.*\///' | sort -u | tr '\n' ' ')"

inj_out=$(CUDA_INJECTION64_PATH="$inj" "$bin") || fail "smoke program failed under injection"
echo "$inj_out" | grep -q "injection: InitializeInjection called (cupti 130001, 0)" ||
  fail "CUDA_INJECTION64_PATH not honoured: $inj_out"
echo "$inj_out" | head -1
echo PASS
