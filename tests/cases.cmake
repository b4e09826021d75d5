# One source per test case (tests/README.md, "Adding a case"): a harness lists
# its cases once and the build reads that list; nothing else names them.
#
# A C harness lists them in an X-macro (tests/cases.h):
#
#   #define HOST_E2E_CASES(X)                  \
#     X(list, "e2e", 120, "")                  \
#     X(threads, "e2e threads", 120, "")
#
# X(name, labels, timeout, variants): the case runs case_<name>(); labels are
# its ctest labels (space-separated), timeout its ctest TIMEOUT in seconds,
# variants words its CMakeLists.txt or the harness acts on (one, "valgrind":
# also run under valgrind), "" for none. A Python harness prints the same
# four fields, one case a line separated by "|", for `HARNESS --list`.
#
# pyop_read_cases() and pyop_read_listed_cases() read a list into a "set"
# (variables <set>_CASES, <set>_<name>_LABELS / _TIMEOUT / _VARIANTS, and
# <set>_LISTED: every case listed, also those dropped below);
# pyop_drop_cases() takes out those this build cannot run, pyop_case_extra()
# gives one case what only CMake knows (arguments, environment), and
# pyop_add_case_tests() adds one ctest per case, and pyop_check_case_rows()
# holds a README's table of those tests to the lists (the one other place a
# case is named).

# Checks one entry and stores it in set (the caller's scope: a macro).
macro(_pyop_case_entry set where name labels timeout variants)
  if(NOT "${name}" MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
    message(FATAL_ERROR "${where}: case name '${name}' is not an identifier")
  endif()
  if(NOT "${labels}" MATCHES "^[a-z0-9_-]+( [a-z0-9_-]+)*$")
    message(FATAL_ERROR "${where}: case ${name}: labels \"${labels}\" are not "
                        "space-separated words")
  endif()
  if(NOT "${timeout}" MATCHES "^[1-9][0-9]*$")
    message(FATAL_ERROR "${where}: case ${name}: timeout '${timeout}' is not a number "
                        "of seconds")
  endif()
  if(NOT "${variants}" MATCHES "^([a-z0-9_]+( [a-z0-9_]+)*)?$")
    message(FATAL_ERROR "${where}: case ${name}: variants \"${variants}\" are not "
                        "space-separated words")
  endif()
  if("${name}" IN_LIST ${set}_CASES)
    message(FATAL_ERROR "${where}: case ${name} is listed twice")
  endif()
  list(APPEND ${set}_CASES "${name}")
  list(APPEND ${set}_LISTED "${name}")
  string(REPLACE " " ";" ${set}_${name}_LABELS "${labels}")
  set(${set}_${name}_TIMEOUT "${timeout}")
  string(REPLACE " " ";" ${set}_${name}_VARIANTS "${variants}")
endmacro()

# Exports every variable of set from a function to its caller.
macro(_pyop_case_export set)
  set(${set}_CASES "${${set}_CASES}" PARENT_SCOPE)
  set(${set}_LISTED "${${set}_LISTED}" PARENT_SCOPE)
  foreach(_c IN LISTS ${set}_CASES)
    foreach(_k LABELS TIMEOUT VARIANTS)
      set(${set}_${_c}_${_k} "${${set}_${_c}_${_k}}" PARENT_SCOPE)
    endforeach()
  endforeach()
endmacro()

# pyop_read_cases(<set> <file> <macro>): the X-macro list <macro> of the C
# source <file> (relative to the current source directory). The macro must
# be defined once, as `#define <macro>(X)` followed by X(...) entries on
# backslash-continued lines and /* */ comments only: anything else in it,
# a malformed or repeated entry, is a configure error naming the file and
# the text. Editing <file> makes the build configure again.
function(pyop_read_cases set file macro)
  get_filename_component(file "${file}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${file}")
  file(READ "${file}" text)
  string(REPLACE ";" "\\;" text "${text}") # a list never splits the text below
  string(REGEX MATCHALL "#[ \t]*define[ \t]+${macro}[ \t]*\\(" defs "${text}")
  list(LENGTH defs n)
  if(NOT n EQUAL 1)
    message(FATAL_ERROR "${file}: ${n} definitions of the case list ${macro}(X), expected 1")
  endif()
  string(REGEX MATCH "#[ \t]*define[ \t]+${macro}[ \t]*\\(X\\)" head "${text}")
  if(NOT head)
    message(FATAL_ERROR "${file}: the case list must be defined as #define ${macro}(X)")
  endif()
  string(FIND "${text}" "${head}" at)
  string(LENGTH "${head}" len)
  math(EXPR at "${at} + ${len}")
  string(SUBSTRING "${text}" ${at} -1 rest)
  # The body: up to the first line that does not end with a backslash.
  set(body "")
  while(TRUE)
    string(FIND "${rest}" "\n" nl)
    if(nl EQUAL -1)
      set(line "${rest}")
      set(rest "")
    else()
      string(SUBSTRING "${rest}" 0 ${nl} line)
      math(EXPR nl "${nl} + 1")
      string(SUBSTRING "${rest}" ${nl} -1 rest)
    endif()
    if(line MATCHES "\\\\[ \t]*$")
      string(REGEX REPLACE "\\\\[ \t]*$" " " line "${line}")
      string(APPEND body "${line}")
    else()
      string(APPEND body "${line}")
      break()
    endif()
  endwhile()
  string(REGEX REPLACE "/\\*([^*]|\\*+[^*/])*\\*+/" " " body "${body}")
  if(body MATCHES "//|/\\*|\\\\;")
    message(FATAL_ERROR "${file}: ${macro}: only /* */ comments (closed on their line "
                        "group) and no ';' in the case list: ${body}")
  endif()
  set(entry "X\\([ \t]*([A-Za-z0-9_]*)[ \t]*,[ \t]*\"([^\"]*)\"[ \t]*,[ \t]*([0-9]*)[ \t]*,[ \t]*\"([^\"]*)\"[ \t]*\\)")
  string(REGEX MATCHALL "${entry}" entries "${body}")
  string(REGEX REPLACE "${entry}" "" left "${body}")
  string(STRIP "${left}" left)
  if(NOT left STREQUAL "")
    message(FATAL_ERROR "${file}: ${macro}: not an entry X(name, \"labels\", timeout, "
                        "\"variants\"): ${left}")
  endif()
  set(${set}_CASES "")
  set(${set}_LISTED "")
  foreach(e IN LISTS entries)
    string(REGEX MATCH "${entry}" _ "${e}")
    _pyop_case_entry(${set} "${file}: ${macro}" "${CMAKE_MATCH_1}" "${CMAKE_MATCH_2}"
                     "${CMAKE_MATCH_3}" "${CMAKE_MATCH_4}")
  endforeach()
  if(NOT ${set}_CASES)
    message(FATAL_ERROR "${file}: ${macro} lists no case")
  endif()
  _pyop_case_export(${set})
endfunction()

# pyop_read_listed_cases(<set> <script> <python>): the cases of the Python
# harness <script>, from `<python> -B <script> --list` (one case a line:
# name|labels|timeout|variants). A failed run or a malformed line is a
# configure error; editing <script> makes the build configure again.
function(pyop_read_listed_cases set script python)
  get_filename_component(script "${script}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${script}")
  execute_process(COMMAND "${python}" -B "${script}" --list
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${script} --list failed (${rc}): ${err}")
  endif()
  if(out MATCHES ";")
    message(FATAL_ERROR "${script} --list: ';' in its output: ${out}")
  endif()
  string(REGEX REPLACE "\n$" "" out "${out}")
  string(REPLACE "\n" ";" lines "${out}")
  set(${set}_CASES "")
  set(${set}_LISTED "")
  foreach(l IN LISTS lines)
    if(NOT l MATCHES "^([^|]*)\\|([^|]*)\\|([^|]*)\\|([^|]*)$")
      message(FATAL_ERROR "${script} --list: not name|labels|timeout|variants: '${l}'")
    endif()
    _pyop_case_entry(${set} "${script} --list" "${CMAKE_MATCH_1}" "${CMAKE_MATCH_2}"
                     "${CMAKE_MATCH_3}" "${CMAKE_MATCH_4}")
  endforeach()
  if(NOT ${set}_CASES)
    message(FATAL_ERROR "${script} --list printed no case")
  endif()
  _pyop_case_export(${set})
endfunction()

# Configure error unless every name is a case of set.
function(_pyop_case_known set what)
  foreach(n IN LISTS ARGN)
    if(NOT "${n}" IN_LIST ${set}_CASES)
      message(FATAL_ERROR "${what}: '${n}' is not a case of ${set} (${${set}_CASES})")
    endif()
  endforeach()
endfunction()

# pyop_drop_cases(<set> <name>...): these cases get no test in this build
# (each must be in the list: a renamed case is a configure error, never a
# test that appears where it cannot run). Say why above the call.
macro(pyop_drop_cases set)
  _pyop_case_known(${set} "pyop_drop_cases" ${ARGN})
  list(REMOVE_ITEM ${set}_CASES ${ARGN})
endmacro()

# pyop_case_extra(<set> <name> [ARGS arg...] [ENVIRONMENT var=value...]):
# arguments after the case name and environment added to the harness's,
# for this case's test (what only CMake knows: target files, build options).
macro(pyop_case_extra set name)
  _pyop_case_known(${set} "pyop_case_extra" ${name})
  cmake_parse_arguments(_pce "" "" "ARGS;ENVIRONMENT" ${ARGN})
  if(_pce_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "pyop_case_extra(${set} ${name}): unknown ${_pce_UNPARSED_ARGUMENTS}")
  endif()
  list(APPEND ${set}_${name}_ARGS ${_pce_ARGS})
  list(APPEND ${set}_${name}_ENVIRONMENT ${_pce_ENVIRONMENT})
endmacro()

# pyop_cases_with(<set> <variant> <out>): the cases of set with that variant,
# in list order.
function(pyop_cases_with set variant out)
  set(r "")
  foreach(c IN LISTS ${set}_CASES)
    if("${variant}" IN_LIST ${set}_${c}_VARIANTS)
      list(APPEND r ${c})
    endif()
  endforeach()
  set(${out} "${r}" PARENT_SCOPE)
endfunction()

# pyop_add_case_tests(<set> PREFIX <p> COMMAND <cmd> [arg...]
#                     [VARIANTS <word>...] [ENVIRONMENT <var=value>...]
#                     [WORKING_DIRECTORY <dir>] [PROPERTIES <prop> <value>...])
# One test <p><name> per case of set, in list order: <cmd> [arg...] <name>
# [the case's ARGS], with the case's LABELS and TIMEOUT, ENVIRONMENT the
# given one then the case's, and PROPERTIES. VARIANTS names every variant
# word this harness knows (the cases' others are configure errors).
function(pyop_add_case_tests set)
  cmake_parse_arguments(a "" "PREFIX;WORKING_DIRECTORY"
                        "COMMAND;VARIANTS;ENVIRONMENT;PROPERTIES" ${ARGN})
  if(a_UNPARSED_ARGUMENTS OR NOT a_PREFIX OR NOT a_COMMAND)
    message(FATAL_ERROR "pyop_add_case_tests(${set}): PREFIX and COMMAND needed, "
                        "unknown: ${a_UNPARSED_ARGUMENTS}")
  endif()
  set(wd "")
  if(a_WORKING_DIRECTORY)
    set(wd WORKING_DIRECTORY "${a_WORKING_DIRECTORY}")
  endif()
  foreach(c IN LISTS ${set}_CASES)
    foreach(v IN LISTS ${set}_${c}_VARIANTS)
      if(NOT v IN_LIST a_VARIANTS)
        message(FATAL_ERROR "case ${c} of ${set}: unknown variant '${v}' "
                            "(this harness knows: ${a_VARIANTS})")
      endif()
    endforeach()
    set(name "${a_PREFIX}${c}")
    add_test(NAME ${name} COMMAND ${a_COMMAND} ${c} ${${set}_${c}_ARGS} ${wd})
    set_tests_properties(${name} PROPERTIES
      LABELS "${${set}_${c}_LABELS}" TIMEOUT ${${set}_${c}_TIMEOUT})
    set(env ${a_ENVIRONMENT} ${${set}_${c}_ENVIRONMENT})
    if(env)
      set_tests_properties(${name} PROPERTIES ENVIRONMENT "${env}")
    endif()
    if(a_PROPERTIES)
      set_tests_properties(${name} PROPERTIES ${a_PROPERTIES})
    endif()
  endforeach()
endfunction()

# pyop_check_case_rows(README <file> PREFIX <p> SETS <set>...): the table of
# <file> (relative to the current source directory) has one row
# "| `<p><name>` | what it checks |" per case listed in the sets (dropped
# ones too: the README describes every build), and every row naming a
# `<p>...` test names a listed case. Anything else is a configure error
# naming the case or the row; editing <file> makes the build configure again.
function(pyop_check_case_rows)
  cmake_parse_arguments(a "" "README;PREFIX" "SETS" ${ARGN})
  if(a_UNPARSED_ARGUMENTS OR NOT a_README OR NOT a_PREFIX OR NOT a_SETS)
    message(FATAL_ERROR "pyop_check_case_rows: README, PREFIX and SETS needed, "
                        "unknown: ${a_UNPARSED_ARGUMENTS}")
  endif()
  get_filename_component(file "${a_README}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${file}")
  file(STRINGS "${file}" rows REGEX "^\\| `")
  string(REPLACE "." "\\." p "${a_PREFIX}")
  set(listed "")
  foreach(set IN LISTS a_SETS)
    list(APPEND listed ${${set}_LISTED})
  endforeach()
  set(documented "")
  foreach(r IN LISTS rows)
    if(r MATCHES "^\\| `${p}([^`]*)` \\|")
      set(n "${CMAKE_MATCH_1}")
      if(NOT n IN_LIST listed)
        message(FATAL_ERROR "${file}: the row of `${a_PREFIX}${n}` names no case of "
                            "${a_SETS} (renamed or removed? the cases: ${listed})")
      endif()
      if(n IN_LIST documented)
        message(FATAL_ERROR "${file}: two rows for `${a_PREFIX}${n}`")
      endif()
      list(APPEND documented "${n}")
    endif()
  endforeach()
  foreach(n IN LISTS listed)
    if(NOT n IN_LIST documented)
      message(FATAL_ERROR "${file}: no row \"| `${a_PREFIX}${n}` | ... |\" for the case "
                          "${n} (tests/README.md, \"Adding a case\")")
    endif()
  endforeach()
endfunction()
