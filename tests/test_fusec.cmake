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
run(0 "usage: fusec dump FILE \\[--graph NAME\\]" "" help dump)
run(0 "usage: fusec check FILE\\.\\.\\." "" check --help)
run(0 "usage: fusec dump" "" dump x.kir --help)

# Usage errors: exit 2, message on stderr.
run(2 "" "usage: fusec COMMAND")
run(2 "" "unknown command 'frobnicate'" frobnicate)
run(2 "" "unknown command 'nope'" help nope)
run(2 "" "missing FILE" check)
run(2 "" "missing FILE" dump)
run(2 "" "unknown option '--bogus'" check --bogus ${WORK_DIR}/two.kir)
run(2 "" "unknown option '--after'" dump --after fold ${WORK_DIR}/two.kir)
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
