# Run a libFuzzer target over a scratch copy of seed .kir files, so the
# fuzzer never writes into the source tree.
# -DFUZZER=exe -DSRC=tests/golden [-DSRC2=another seed dir] -DCORPUS=scratch dir -DSECONDS=n [-DDICT=file]
file(REMOVE_RECURSE ${CORPUS})
file(MAKE_DIRECTORY ${CORPUS})
file(GLOB seeds ${SRC}/*.kir)
if(SRC2)
  file(GLOB more ${SRC2}/*.kir)
  list(APPEND seeds ${more})
endif()
file(COPY ${seeds} DESTINATION ${CORPUS})
set(dict "")
if(DICT)
  set(dict -dict=${DICT})
endif()
get_filename_component(artifacts ${CORPUS} DIRECTORY)
execute_process(COMMAND ${FUZZER} ${CORPUS} ${dict} -max_total_time=${SECONDS} -rss_limit_mb=2048
  -max_len=4096 -print_final_stats=1 -artifact_prefix=${artifacts}/
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${FUZZER} failed (${rc}); the crashing input is in ${artifacts}/")
endif()
