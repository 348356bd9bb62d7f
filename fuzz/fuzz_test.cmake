# ctest script: build fuzz/ with clang++, write the seed corpus, run the safetensors header fuzzer bounded.
foreach(var FUZZ_SOURCE_DIR WORK_DIR CLANGXX GOLDEN_SEEDS SECONDS)
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

# The build folder is kept between runs (a rebuild is quick); the corpus starts afresh from the seeds.
run_step("configure fuzz/" ${CMAKE_COMMAND} -S ${FUZZ_SOURCE_DIR} -B ${WORK_DIR}/build -G Ninja
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=${CLANGXX})
run_step("build fuzz/" ${CMAKE_COMMAND} --build ${WORK_DIR}/build)

file(REMOVE_RECURSE ${WORK_DIR}/seeds ${WORK_DIR}/corpus)
file(MAKE_DIRECTORY ${WORK_DIR}/seeds ${WORK_DIR}/corpus)
run_step("write the seed corpus" ${WORK_DIR}/build/safetensors_seed_corpus ${WORK_DIR}/seeds)
file(GLOB goldens ${GOLDEN_SEEDS}/*.safetensors)
file(COPY ${goldens} DESTINATION ${WORK_DIR}/seeds)

# Bounded: total time, time per input, memory. Any crash, sanitizer report, timeout or broken promise fails.
run_step("fuzzing (${SECONDS} s)" ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
  ${WORK_DIR}/build/safetensors_header_fuzzer -max_total_time=${SECONDS} -seed=${SEED} -timeout=5 -rss_limit_mb=2048
  -max_len=4096 -dict=${FUZZ_SOURCE_DIR}/safetensors.dict -artifact_prefix=${WORK_DIR}/
  -print_final_stats=1 ${WORK_DIR}/corpus ${WORK_DIR}/seeds)
string(REGEX MATCH "stat::number_of_executed_units: *[0-9]+" runs "${step_output}")
message(STATUS "fuzz.safetensors_header: ${runs}")
