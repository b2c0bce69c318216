# fusec command line: exit codes (0 ok, 1 user error, 2 usage) and output.
# Run with -DFUSEC=path/to/fusec -DWORK_DIR=scratch dir, from tests/.
cmake_minimum_required(VERSION 3.25)

set(failures 0)

# run(<expected exit> <stdout regex> <stderr regex> args...)
function(run want_rc out_re err_re)
  execute_process(COMMAND ${FUSEC} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(bad "")
  if(NOT rc STREQUAL "${want_rc}")
    string(APPEND bad " exit ${rc}, want ${want_rc};")
  endif()
  if(NOT out_re STREQUAL "" AND NOT out MATCHES "${out_re}")
    string(APPEND bad " stdout does not match '${out_re}';")
  endif()
  if(out_re STREQUAL "" AND NOT out STREQUAL "")
    string(APPEND bad " stdout not empty;")
  endif()
  if(NOT err_re STREQUAL "" AND NOT err MATCHES "${err_re}")
    string(APPEND bad " stderr does not match '${err_re}';")
  endif()
  if(err_re STREQUAL "" AND NOT err STREQUAL "")
    string(APPEND bad " stderr not empty;")
  endif()
  if(bad STREQUAL "")
    message(STATUS "ok: fusec ${ARGN}")
  else()
    message(SEND_ERROR "FAIL: fusec ${ARGN}:${bad}\n--- stdout:\n${out}--- stderr:\n${err}")
  endif()
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
file(WRITE ${WORK_DIR}/two.kir "kfuse 1\ngraph a(x: f32[n]) -> (y) {\n  y = neg (abs x)\n}\ngraph b(x: f32[n]) -> (x) {\n}\n")
file(WRITE ${WORK_DIR}/bad.kir "kfuse 1\ngraph a(x: f32[n]) -> (y) {\n  y = ad x\n}\n")

# Help: stdout, exit 0.
run(0 "usage: fusec COMMAND" "" --help)
run(0 "usage: fusec COMMAND" "" -h)
run(0 "fusec check FILE\\.\\.\\." "" help)
run(0 "usage: fusec dump \\[--after PASS\\] FILE \\[--graph NAME\\]" "" help dump)
run(0 "usage: fusec check FILE\\.\\.\\." "" check --help)
run(0 "usage: fusec dump" "" dump x.kir --help)

# Usage errors: exit 2, message on stderr.
run(2 "" "usage: fusec COMMAND")
run(2 "" "unknown command 'frobnicate'" frobnicate)
run(2 "" "unknown command 'nope'" help nope)
run(2 "" "missing FILE" check)
run(2 "" "missing FILE" dump)
run(2 "" "unknown option '--bogus'" check --bogus ${WORK_DIR}/two.kir)
run(2 "" "unknown pass 'folding'" dump --after folding ${WORK_DIR}/two.kir)
run(2 "" "--after needs a PASS" dump ${WORK_DIR}/two.kir --after)
run(0 "plan a: 1 kernel, 0 stored\nkernel 0 ew space=y\\[n\\] ops=2" "" dump --after partition ${WORK_DIR}/two.kir --graph a)
run(0 "graph a\\(x: f32\\[n\\]\\) -> \\(y\\)" "" dump --after dce ${WORK_DIR}/two.kir --graph a)
# emit: CUDA and OpenCL source of one fused kernel
run(0 "extern \"C\" __global__" "" emit --target cuda ${WORK_DIR}/two.kir --graph a)
run(0 "__kernel __attribute__\\(\\(reqd_work_group_size\\(256, 1, 1\\)\\)\\) void a_k0_" "" emit --target opencl ${WORK_DIR}/two.kir --graph a)
# emit --target llvm: the CPU backend's LLVM IR, before and after its O3
if(WITH_LLVM)
  run(0 "define i64 @a_k0_[0-9a-f]+_c64\\(ptr %args, i64 %begin, i64 %end\\)" "" emit --target llvm ${WORK_DIR}/two.kir --graph a)
  run(0 "<[0-9]+ x float>" "" emit --target llvm --optimized ${WORK_DIR}/two.kir --graph a)
endif()
# emit --cpu-device: OpenCL for a CPU device, a row sum without the warp
# entry point and with the block tree folded by work-item 0
file(WRITE ${WORK_DIR}/rows.kir "kfuse 1\ngraph r(x: f32[m,n]) -> (s) {\n  s = sum x, axes=[1]\n}\n")
run(0 "void r_k0_[0-9a-f]+_warp\\(" "" emit --target opencl ${WORK_DIR}/rows.kir)
run(0 "void r_k0_[0-9a-f]+_comb\\(.*if \\(lid == 0\\) {\n +for \\(uint s = 128; s > 0; s >>= 1\\)" ""
    emit --target opencl --cpu-device ${WORK_DIR}/rows.kir)
execute_process(COMMAND ${FUSEC} emit --target opencl --cpu-device ${WORK_DIR}/rows.kir OUTPUT_VARIABLE cpu_src)
if(cpu_src MATCHES "_warp\\(|#pragma unroll\n|gvec")
  message(SEND_ERROR "FAIL: fusec emit --cpu-device: a warp entry, an unroll pragma or a vector path:\n${cpu_src}")
endif()
run(2 "" "--cpu-device is for --target opencl" emit --target cuda --cpu-device ${WORK_DIR}/two.kir)
run(2 "" "--optimized is for --target llvm" emit --target cuda --optimized ${WORK_DIR}/two.kir)
run(2 "" "unknown target 'ptx'" emit --target ptx ${WORK_DIR}/two.kir)
run(2 "" "missing --target" emit ${WORK_DIR}/two.kir)
# run: exit codes of the runtime path (the run itself is tested in test_runtime)
run(2 "" "bad --dim" run ${WORK_DIR}/two.kir --dim n)
run(2 "" "unknown backend 'gpu'" run ${WORK_DIR}/two.kir --backend gpu)
run(2 "" "--graph needs a NAME" dump ${WORK_DIR}/two.kir --graph)
run(2 "" "one FILE" dump ${WORK_DIR}/two.kir ${WORK_DIR}/two.kir)

# check: one line per file; errors as the parser states them; exit 1 if any.
run(0 "^${WORK_DIR}/two.kir: ok \\(2 graphs\\)\n$" "" check ${WORK_DIR}/two.kir)
run(0 "golden/design.kir: ok \\(6 graphs\\)\ngolden/multi.kir: ok \\(3 graphs\\)\n" "" check golden/design.kir golden/multi.kir)
run(0 "golden/empty.kir: ok \\(0 graphs\\)" "" check golden/empty.kir)
run(1 "two.kir: ok" "^${WORK_DIR}/bad.kir:3:7: error: unknown op 'ad'\n$" check ${WORK_DIR}/bad.kir ${WORK_DIR}/two.kir)
run(1 "" "missing.kir: error: cannot read: No such file or directory" check ${WORK_DIR}/missing.kir)

# dump: the printed module, or one graph.
run(0 "^kfuse 1\n\ngraph a\\(x: f32\\[n\\]\\) -> \\(y\\) {\n  _1 = abs x\n  y = neg _1\n}\n\ngraph b" "" dump ${WORK_DIR}/two.kir)
run(0 "^graph b\\(x: f32\\[n\\]\\) -> \\(x\\) {\n}\n$" "" dump --graph b ${WORK_DIR}/two.kir)
run(1 "" "no graph 'c'" dump ${WORK_DIR}/two.kir --graph c)
run(1 "" "bad.kir:3:7: error: unknown op 'ad'" dump ${WORK_DIR}/bad.kir)

# dump output is what the golden file holds.
execute_process(COMMAND ${FUSEC} dump golden/design.kir OUTPUT_VARIABLE dumped RESULT_VARIABLE rc)
file(READ golden/design.out want)
if(NOT rc EQUAL 0 OR NOT dumped STREQUAL want)
  message(SEND_ERROR "FAIL: fusec dump golden/design.kir differs from golden/design.out")
endif()
