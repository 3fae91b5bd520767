include(GoogleTest)

# moe_add_test(NAME SOURCES a.cpp b.cpp LIBS x y [LABELS gpu]): one GoogleTest executable, registered with CTest.
# Tests labelled gpu are built everywhere but only run by scripts/gpu-check (ctest -L gpu).
function(moe_add_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  moe_target_defaults(${name})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main Threads::Threads)
  target_compile_definitions(${name} PRIVATE MOE_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  if(ARG_LABELS)
    gtest_discover_tests(${name} PROPERTIES LABELS "${ARG_LABELS}" DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 60)
  else()
    gtest_discover_tests(${name} PROPERTIES LABELS cpu DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 60)
  endif()
endfunction()
