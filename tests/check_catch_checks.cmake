# ctest: no test object calls c10's CHECK where Catch's was meant. c10's logging header defines
# CHECK too; a test unit that includes catch.hpp first and LibTorch later would get c10's macro,
# whose passing checks are not counted and whose failing ones abort the test binary
# (CMakeLists.txt's detrain_includes_torch keeps such units on the precompiled header, where
# LibTorch comes first). c10's CHECK constructs a c10::MessageLogger; Catch's never does.
#   cmake -DOBJECTS_DIR=<build>/CMakeFiles/detrain_tests.dir -DNM=nm -P check_catch_checks.cmake
file(GLOB_RECURSE objects ${OBJECTS_DIR}/*.o)
list(LENGTH objects count)
if(count EQUAL 0)
  message(FATAL_ERROR "no test objects under ${OBJECTS_DIR}: build detrain_tests first")
endif()
set(bad "")
foreach(object IN LISTS objects)
  execute_process(COMMAND ${NM} --demangle --undefined-only ${object} OUTPUT_VARIABLE symbols
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NM} failed on ${object}")
  endif()
  if(symbols MATCHES "c10::MessageLogger::MessageLogger")
    list(APPEND bad ${object})
  endif()
endforeach()
if(bad)
  string(REPLACE ";" "\n  " bad "${bad}")
  message(FATAL_ERROR "test units that use c10's CHECK in place of Catch's:\n  ${bad}")
endif()
message(STATUS "${count} test objects: every CHECK is Catch's")
