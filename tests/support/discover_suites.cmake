# Writes one ctest entry per GoogleTest suite of TEST_EXECUTABLE into CTEST_FILE (run after each link of the
# test program): every entry is one process, so libtorch's start-up (about 1 s here) is paid per suite, not per
# test. Suites matching MULTI_RANK_REGEX start two or more ranks and reserve two processors, so ctest -j2 never
# runs four ranks on two cores; suites matching NETNS_REGEX are labelled netns.
execute_process(COMMAND ${TEST_EXECUTABLE} --gtest_list_tests
  OUTPUT_VARIABLE listing RESULT_VARIABLE rc ERROR_VARIABLE err TIMEOUT 120)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "listing the tests of ${TEST_EXECUTABLE} failed (${rc}): ${err}")
endif()
string(REPLACE "\n" ";" lines "${listing}")
set(out "")
foreach(line IN LISTS lines)
  # Suite lines start in column 0 and end with '.' (a parameterised one may carry "  # TypeParam = ...").
  if(line MATCHES "^([^ #][^ ]*)\\.( .*)?$")
    set(suite "${CMAKE_MATCH_1}")
    string(APPEND out "add_test([=[${suite}]=] [==[${TEST_EXECUTABLE}]==] [=[--gtest_filter=${suite}.*]=])\n")
    set(props "TIMEOUT ${TIMEOUT}")
    if(suite MATCHES "${MULTI_RANK_REGEX}")
      string(APPEND props " PROCESSORS 2")
    endif()
    # The suites that build network namespaces (root only): `ctest -L netns` selects them.
    if(NETNS_REGEX AND suite MATCHES "${NETNS_REGEX}")
      string(APPEND props " LABELS netns")
    endif()
    string(APPEND out "set_tests_properties([=[${suite}]=] PROPERTIES ${props})\n")
  endif()
endforeach()
file(WRITE "${CTEST_FILE}.tmp" "${out}")
file(RENAME "${CTEST_FILE}.tmp" "${CTEST_FILE}")
