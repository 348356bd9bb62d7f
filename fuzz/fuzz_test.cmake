# ctest script, two modes. With -DBUILD_ONLY=1 (test fuzz.build, the fixture every target's test needs):
# configure and build fuzz/ with clang++ once. Else (test fuzz.<target>): write the target's seed corpus and
# run its fuzzer for SECONDS from a fixed seed; any crash, sanitizer report, timeout or broken promise fails.
foreach(var FUZZ_SOURCE_DIR WORK_DIR CLANGXX GOLDENS CACHE_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "fuzz_test.cmake needs -D${var}=...")
  endif()
endforeach()

function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(LENGTH "${err}" length)
    if(length GREATER 6000)
      math(EXPR start "${length} - 6000")
      string(SUBSTRING "${err}" ${start} 6000 err)
    endif()
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  set(step_output "${out}${err}" PARENT_SCOPE)
endfunction()

if(BUILD_ONLY)
  # The build folder is kept between runs (a rebuild is quick).
  run_step("configure fuzz/" ${CMAKE_COMMAND} -S ${FUZZ_SOURCE_DIR} -B ${WORK_DIR}/build -G Ninja
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=${CLANGXX})
  run_step("build fuzz/" ${CMAKE_COMMAND} --build ${WORK_DIR}/build)
  return()
endif()

foreach(var FUZZ_TARGET SECONDS)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "fuzz_test.cmake needs -D${var}=...")
  endif()
endforeach()
# A fixed seed by default, so the suite's short run explores the same inputs every time (a red CI names an
# input that reproduces); BERTH_FUZZ_SEED=0 lets libFuzzer pick one, for longer hunts.
set(SEED 1)
if(DEFINED ENV{BERTH_FUZZ_SEED})
  set(SEED $ENV{BERTH_FUZZ_SEED})
endif()
if(DEFINED ENV{BERTH_FUZZ_SECONDS})
  set(SECONDS $ENV{BERTH_FUZZ_SECONDS})
endif()

# The corpus starts afresh from the seeds each run.
set(dir ${WORK_DIR}/${FUZZ_TARGET})
file(REMOVE_RECURSE ${dir}/corpus)
file(MAKE_DIRECTORY ${dir}/corpus)
run_step("write the seed corpus" ${CMAKE_COMMAND} -DFUZZ_TARGET=${FUZZ_TARGET} -DOUT=${dir}/seeds
  -DFUZZ_SOURCE_DIR=${FUZZ_SOURCE_DIR} -DGOLDENS=${GOLDENS} -DCACHE_DIR=${CACHE_DIR} -DBUILD_DIR=${WORK_DIR}/build
  -P ${FUZZ_SOURCE_DIR}/seed_corpus.cmake)
set(dict)
# Configs and state files fit in 4 KiB; tokenizers and their vocabularies need room for the real ones.
set(max_len 4096)
if(FUZZ_TARGET MATCHES "^(tokenizer_json|vocab_files|hf_config)$")
  set(max_len 65536)
endif()
if(EXISTS ${FUZZ_SOURCE_DIR}/${FUZZ_TARGET}.dict)
  set(dict -dict=${FUZZ_SOURCE_DIR}/${FUZZ_TARGET}.dict)
endif()

# Bounded: total time, time per input, memory.
run_step("fuzzing ${FUZZ_TARGET} (${SECONDS} s)" ${CMAKE_COMMAND} -E env
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 ${WORK_DIR}/build/${FUZZ_TARGET}_fuzzer
  -max_total_time=${SECONDS} -seed=${SEED} -timeout=5 -rss_limit_mb=2048 -max_len=${max_len} ${dict}
  -artifact_prefix=${dir}/ -print_final_stats=1 ${dir}/corpus ${dir}/seeds)
string(REGEX MATCH "stat::number_of_executed_units: *[0-9]+" runs "${step_output}")
message(STATUS "fuzz.${FUZZ_TARGET}: ${runs}")
