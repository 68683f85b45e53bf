# Runs at build time (POST_BUILD of detrain_tests): lists every Catch2 test case and writes one
# add_test per case, with the case's tags as CTest labels (ctest -L parity, ctest -LE slow).
# Catch2 2.13's listing wraps long names, so tags are learned by listing each known tag instead.
set(known_tags unit parity smoke slow gpu fuzz)

function(list_names spec out_var)
  execute_process(COMMAND "${EXE}" ${spec} --list-test-names-only
                  OUTPUT_VARIABLE out RESULT_VARIABLE rc WORKING_DIRECTORY "${WORKDIR}")
  if(rc LESS 0)
    message(FATAL_ERROR "cannot list tests of ${EXE}: ${out}")
  endif()
  string(REPLACE ";" "\\;" out "${out}")
  string(REPLACE "\n" ";" out "${out}")
  set(names)
  foreach(line IN LISTS out)
    string(STRIP "${line}" line)
    if(NOT line STREQUAL "")
      list(APPEND names "${line}")
    endif()
  endforeach()
  set(${out_var} "${names}" PARENT_SCOPE)
endfunction()

list_names("" all_names)
foreach(tag IN LISTS known_tags)
  list_names("[${tag}]" names_${tag})
endforeach()

set(script "")
foreach(name IN LISTS all_names)
  set(labels "")
  foreach(tag IN LISTS known_tags)
    list(FIND names_${tag} "${name}" idx)
    if(NOT idx EQUAL -1)
      list(APPEND labels ${tag})
    endif()
  endforeach()
  # Catch's test-spec syntax treats , [ ] * ~ " \ specially: escape everything non-alphanumeric.
  string(REGEX REPLACE "[^A-Za-z0-9_]" "\\\\\\0" spec "${name}")
  string(APPEND script "add_test([==[${name}]==] \"${EXE}\" [==[${spec}]==])\n")
  string(REPLACE ";" "\\;" label_text "${labels}")
  # Passive OpenMP waits, as the detrain binary chooses on busy cores: ctest runs two cases at once on
  # two cores, and spinning threads made training cases several times slower. Caches of the
  # shared data (records, decoded images) go to the build tree, never into ../shared/data.
  # A posed idle machine (DETRAIN_MACHINE_LOAD) makes train.precision=auto pick BF16 in every
  # case, whatever the other case on the cores does: two runs a test compares never differ in
  # precision (the rule itself has its own tests).
  string(APPEND script "set_tests_properties([==[${name}]==] PROPERTIES LABELS \"${label_text}\" WORKING_DIRECTORY [==[${WORKDIR}]==] SKIP_RETURN_CODE 4 ENVIRONMENT \"DETRAIN_CTEST=1;OMP_WAIT_POLICY=PASSIVE;DETRAIN_MACHINE_LOAD=0.0 other runnable threads on 4096 CPUs;DETRAIN_CACHE_DIR=${WORKDIR}/test-caches\")\n")
endforeach()
file(WRITE "${OUT}" "${script}")
